package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// Webhooks. With [Config.Webhooks], the server that pauses, decides or
// expires a pause sends a webhook of it — "pause.paused", "pause.decided",
// "pause.expired" — through the [webhook.Sender], which signs, queues and
// retries it. The event is handed to a goroutine of the server's own,
// which reads what the message says (the stored pause, the decision
// record) and passes it on, so that neither a slow store read nor a
// receiver that is down holds up a turn or a decision. Each server
// instance sends the webhooks of what it did itself, not those of events
// the broker brings from other instances, so that a pause is announced
// once however many instances run.
//
// A message names the conversation, the pause, the agent, the tools and
// the principals, never what was said: no user input, no assistant text,
// no deny messages. A call's arguments are included only for an agent
// with a privacy guard, as the model saw them (personal data as tokens).

// The types of the webhooks. Their values never change.
const (
	WebhookPaused  = "pause.paused"
	WebhookDecided = "pause.decided"
	WebhookExpired = "pause.expired"
)

// WebhookData is the data of a webhook.
//
// JSON: {"conversation_id","pause_id","agent","requester","link","calls",
// "created_at","expires_at","decision"}; empty fields are omitted.
type WebhookData struct {
	ConversationID string `json:"conversation_id"`
	PauseID        string `json:"pause_id"`
	Agent          string `json:"agent"`
	// Requester is the id of the conversation's owner.
	Requester string `json:"requester,omitempty"`
	// Link is the pause's decision page, under [Config.PublicURL]; ""
	// without one.
	Link string `json:"link,omitempty"`
	// Calls are the paused reply's calls (pause.paused).
	Calls []WebhookCall `json:"calls,omitempty"`
	// CreatedAt and ExpiresAt are when the pause was made and when it
	// expires undecided (pause.paused); ExpiresAt nil: never.
	CreatedAt *time.Time `json:"created_at,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Decision is who or what resolved the pause (pause.decided,
	// pause.expired).
	Decision *WebhookDecision `json:"decision,omitempty"`
}

// WebhookCall is a call of a paused reply in a webhook.
type WebhookCall struct {
	Key  string `json:"key"`
	Tool string `json:"tool"`
	// Awaiting is true for the calls that need a decision.
	Awaiting bool `json:"awaiting"`
	// Arguments are the call's arguments with personal data as tokens,
	// for an agent with a privacy guard; "" otherwise.
	Arguments string `json:"arguments,omitempty"`
}

// WebhookDecision is the decision of a pause in a webhook: the decision
// record without messages and edited arguments.
type WebhookDecision struct {
	Source    records.Source  `json:"source"`
	DecidedBy string          `json:"decided_by,omitempty"`
	Approvers []string        `json:"approvers,omitempty"`
	DecidedAt time.Time       `json:"decided_at"`
	Outcome   records.Outcome `json:"outcome"`
	// Verdicts are the verdicts by call key.
	Verdicts map[string]toolgate.Verdict `json:"verdicts,omitempty"`
}

// webhookBacklog bounds the events waiting to become webhooks; more are
// dropped and logged.
const webhookBacklog = 1024

// notifier turns the server's pause events into webhooks.
type notifier struct {
	// fixed at creation
	events chan Event
	done   chan struct{}
	wg     sync.WaitGroup
}

// startWebhooks starts the notifier when the server sends webhooks.
func (s *Server) startWebhooks() {
	if s.cfg.Webhooks == nil {
		return
	}
	n := &notifier{events: make(chan Event, webhookBacklog), done: make(chan struct{})}
	s.hooks = n
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case <-n.done:
				return
			case e := <-n.events:
				s.sendWebhook(e)
			}
		}
	}()
}

// stopWebhooks stops the notifier and waits for it. Events not yet turned
// into webhooks are not sent.
func (s *Server) stopWebhooks() {
	if s.hooks != nil {
		close(s.hooks.done)
		s.hooks.wg.Wait()
	}
}

// notify hands an event to the notifier, if the server sends webhooks and
// the event is about a pause. It never blocks.
func (s *Server) notify(ctx context.Context, e Event) {
	if s.hooks == nil || (e.Kind != EventPaused && e.Kind != EventDecided && e.Kind != EventExpired) {
		return
	}
	select {
	case s.hooks.events <- e:
	default:
		s.logger.ErrorContext(ctx, "server: a webhook was dropped: too many events wait", "conversation", e.ConversationID, "pause", e.PauseID, "kind", e.Kind)
	}
}

// webhookReadTimeout bounds the reads that build one webhook.
const webhookReadTimeout = 10 * time.Second

// sendWebhook builds the webhook of e and gives it to the sender. A read
// that fails leaves out what it would have added.
func (s *Server) sendWebhook(e Event) {
	ctx, cancel := context.WithTimeout(context.Background(), webhookReadTimeout)
	defer cancel()
	typ := map[EventKind]string{EventPaused: WebhookPaused, EventDecided: WebhookDecided, EventExpired: WebhookExpired}[e.Kind]
	data := &WebhookData{ConversationID: e.ConversationID, PauseID: e.PauseID, Link: s.pauseLink(e.ConversationID, e.PauseID)}
	c, err := s.conversation(ctx, e.ConversationID)
	if err == nil && c != nil {
		data.Agent, data.Requester = c.Agent, c.Owner.ID
		if e.Kind == EventPaused {
			err = s.webhookPause(ctx, c, data)
		} else {
			err = s.webhookDecision(ctx, data)
		}
	}
	if err != nil {
		s.logger.ErrorContext(ctx, "server: reading a webhook's details failed; sent without them", "conversation", e.ConversationID, "pause", e.PauseID, "err", logcap.Error(err))
	}
	if _, err := s.cfg.Webhooks.Send(typ, data); err != nil {
		s.logger.ErrorContext(ctx, "server: a webhook was not sent", "conversation", e.ConversationID, "pause", e.PauseID, "err", logcap.Error(err))
	}
}

// webhookPause adds the calls and times of the pause to data, if it is
// still the conversation's open pause.
func (s *Server) webhookPause(ctx context.Context, c *conversation, data *WebhookData) error {
	conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
	if err != nil {
		return err
	}
	pause, reply := openPause(conv)
	if pause == nil || pause.ID != data.PauseID {
		return nil // already resolved
	}
	s.setExpiry(c, conv, pause)
	data.CreatedAt, data.ExpiresAt = &pause.CreatedAt, pause.ExpiresAt
	private := s.cfg.Agents[c.Agent].Privacy != nil
	if private {
		// Stored arguments hold the tokens the model saw; the view keeps
		// them so.
		if err := s.viewPause(ctx, c, nil, pause, reply, false); err != nil {
			return err
		}
	}
	for _, call := range pause.Calls {
		wc := WebhookCall{Key: call.Key, Tool: call.Tool, Awaiting: call.Awaiting}
		if private {
			wc.Arguments = call.Arguments
		}
		data.Calls = append(data.Calls, wc)
	}
	return nil
}

// webhookDecision adds the decision record of the pause to data.
func (s *Server) webhookDecision(ctx context.Context, data *WebhookData) error {
	rec, err := s.decision(ctx, data.ConversationID, data.PauseID)
	if err != nil || rec == nil {
		return err
	}
	d := &WebhookDecision{Source: rec.Source, DecidedBy: rec.DecidedBy, Approvers: rec.Approvers, DecidedAt: rec.DecidedAt.UTC(), Outcome: rec.Outcome}
	for _, dec := range rec.Decisions {
		if d.Verdicts == nil {
			d.Verdicts = map[string]toolgate.Verdict{}
		}
		d.Verdicts[dec.Key] = dec.Verdict
	}
	data.Decision = d
	return nil
}

// pauseLink returns the address of a pause's decision page under
// [Config.PublicURL], or "".
func (s *Server) pauseLink(convID, pauseID string) string {
	if s.cfg.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(s.cfg.PublicURL, "/") + "/conversations/" + url.PathEscape(convID) + "/pauses/" + url.PathEscape(pauseID)
}

// webhookDeliveries answers GET /v1/webhooks/deliveries: the sender's
// delivery log, newest first, to the holders of [Config.WebhookRoles].
func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	switch {
	case !hasRole(p, s.cfg.WebhookRoles):
		writeError(w, http.StatusForbidden, codeForbidden, "your roles may not read the webhook delivery log")
	case s.cfg.Webhooks == nil:
		writeError(w, http.StatusNotFound, codeNotFound, "the server sends no webhooks")
	default:
		writeJSON(w, http.StatusOK, map[string]any{"deliveries": s.cfg.Webhooks.Deliveries()})
	}
}

// publicURLProblem returns what is wrong with [Config.PublicURL], or "".
func publicURLProblem(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "public_url: want an http or https URL without credentials, query or fragment"
	}
	return ""
}
