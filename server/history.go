package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// The history of resolved pauses: GET /v1/history lists the decision
// records of pauses that were decided, expired, failed or recovered,
// newest first, that the caller may know (the principals who may see a
// record in a 409, see views.go: the conversation's readers, the people
// who decided, the approvers who may decide its calls, and for an expired
// pause an approver of the agent). Filters: agent, tool, requester,
// decider, outcome; each narrows the list. Pages of at most limit items
// carry the cursor of the next page.
//
// The history is read from the records of every conversation: its cost
// grows with the number of conversations, which an inbox of open pauses
// does not. Auditors of a large service read the audit log's export
// instead (auditexport.go).

// The bounds of a history page.
const (
	defaultHistoryLimit = 50
	maxHistoryLimit     = 200
	// maxFilterLen bounds a filter's value, in bytes.
	maxFilterLen = 256
)

// historyItem is one resolved pause in the history.
type historyItem struct {
	ConversationID string `json:"conversation_id"`
	Agent          string `json:"agent"`
	Requester      string `json:"requester"`
	// Tools are the tools of the paused reply's calls, in call order;
	// empty when the reply is no longer found.
	Tools []string `json:"tools"`
	DecisionRecord
}

// historyFilter is the query of GET /v1/history.
type historyFilter struct {
	agent, tool, requester, decider string
	outcome                         records.Outcome
	limit                           int
	// after is the position of the last item of the previous page; nil
	// for the first page.
	after *historyKey
}

// historyKey orders the history: newest first, then by conversation and
// pause id.
type historyKey struct {
	at          time.Time
	conv, pause string
}

// before reports whether a comes before b in the history's order.
func (a historyKey) before(b historyKey) bool {
	if !a.at.Equal(b.at) {
		return a.at.After(b.at)
	}
	if a.conv != b.conv {
		return a.conv < b.conv
	}
	return a.pause < b.pause
}

// cursor returns k as an opaque cursor.
func (k historyKey) cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.at.UnixNano(), 10) + "\n" + k.conv + "\n" + k.pause))
}

// parseHistoryCursor returns the key of a cursor [historyKey.cursor] made.
func parseHistoryCursor(s string) (*historyKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(s) > 4*maxFilterLen {
		return nil, fmt.Errorf("not the cursor of a page")
	}
	parts := strings.Split(string(b), "\n")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return nil, fmt.Errorf("not the cursor of a page")
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("not the cursor of a page")
	}
	return &historyKey{at: time.Unix(0, ns).UTC(), conv: parts[1], pause: parts[2]}, nil
}

// historyOutcomes are the outcomes the history lists, the values of its
// outcome filter.
var historyOutcomes = []records.Outcome{records.OutcomeDecided, records.OutcomeExpired, records.OutcomeFailed, records.OutcomeRecovered}

// parseHistoryFilter reads the query of r, or returns the problem in
// words.
func parseHistoryFilter(r *http.Request) (*historyFilter, string) {
	q := r.URL.Query()
	f := &historyFilter{limit: defaultHistoryLimit}
	for name, dst := range map[string]*string{"agent": &f.agent, "tool": &f.tool, "requester": &f.requester, "decider": &f.decider} {
		v := q.Get(name)
		if len(v) > maxFilterLen {
			return nil, fmt.Sprintf("%s must be at most %d bytes", name, maxFilterLen)
		}
		*dst = v
	}
	if v := q.Get("outcome"); v != "" {
		f.outcome = records.Outcome(v)
		if !slices.Contains(historyOutcomes, f.outcome) {
			return nil, "outcome must be one of decided, expired, failed, recovered"
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxHistoryLimit {
			return nil, fmt.Sprintf("limit must be a whole number from 1 to %d", maxHistoryLimit)
		}
		f.limit = n
	}
	if v := q.Get("after"); v != "" {
		k, err := parseHistoryCursor(v)
		if err != nil {
			return nil, "after is " + err.Error()
		}
		f.after = k
	}
	return f, ""
}

// decidedBy reports whether the principal id took part in rec: decided
// it, approved it, or granted a sticky grant it used.
func (s *Server) decidedBy(rec *DecisionRecord, id string) bool {
	return s.sameIdentity(rec.DecidedBy, id) && rec.DecidedBy != "" ||
		slices.ContainsFunc(rec.Approvers, func(a string) bool { return s.sameIdentity(a, id) }) ||
		slices.ContainsFunc(rec.Grants, func(g records.GrantRef) bool { return s.sameIdentity(g.GrantedBy, id) })
}

// serveHistory serves GET /v1/history.
func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	f, problem := parseHistoryFilter(r)
	if problem != "" {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, problem)
		return
	}
	items, err := s.history(r.Context(), p, f)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := struct {
		Items []historyItem `json:"items"`
		Next  string        `json:"next,omitempty"`
	}{Items: items}
	if len(items) > f.limit {
		out.Items = items[:f.limit]
		last := out.Items[f.limit-1]
		out.Next = historyKey{last.DecidedAt, last.ConversationID, last.PauseID}.cursor()
	}
	writeJSON(w, http.StatusOK, out)
}

// history returns the items of f's page for p, and one more when there is
// a next page.
func (s *Server) history(ctx context.Context, p *toolgate.Principal, f *historyFilter) ([]historyItem, error) {
	var items []historyItem
	var keys []historyKey
	params := &records.ListParams{Limit: records.MaxLimit}
	for {
		page, err := s.cfg.Records.ListConversations(ctx, params)
		if err != nil {
			return nil, err
		}
		for i := range page.Conversations {
			c := &page.Conversations[i]
			got, err := s.conversationHistory(ctx, p, c, f)
			if err != nil {
				return nil, err
			}
			for _, it := range got {
				k := historyKey{it.DecidedAt, it.ConversationID, it.PauseID}
				if f.after != nil && !f.after.before(k) {
					continue
				}
				// Keep the first limit+1 items in order.
				j, _ := slices.BinarySearchFunc(keys, k, func(a, b historyKey) int {
					if a.before(b) {
						return -1
					}
					if b.before(a) {
						return 1
					}
					return 0
				})
				if j > f.limit {
					continue
				}
				keys = slices.Insert(keys, j, k)
				items = slices.Insert(items, j, it)
				if len(items) > f.limit+1 {
					keys, items = keys[:f.limit+1], items[:f.limit+1]
				}
			}
		}
		if page.Next == "" {
			break
		}
		params.After = page.Next
	}
	if items == nil {
		items = []historyItem{}
	}
	return items, nil
}

// conversationHistory returns the resolved pauses of c that f selects and
// p may know, as p may see them.
func (s *Server) conversationHistory(ctx context.Context, p *toolgate.Principal, c *conversation, f *historyFilter) ([]historyItem, error) {
	a := s.cfg.Agents[c.Agent]
	if a == nil || f.agent != "" && c.Agent != f.agent || f.requester != "" && !s.sameIdentity(c.Owner.ID, f.requester) {
		return nil, nil
	}
	recs, err := s.cfg.Records.Decisions(ctx, c.ID)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	var conv *toolgate.Conversation
	var expiredReplies []*toolgate.AssistantMessage
	var out []historyItem
	expired := 0
	for i := range recs {
		rec := &recs[i]
		if !rec.Outcome.Resolves() {
			continue
		}
		if rec.Outcome == outcomeExpired {
			expired++
		}
		if f.outcome != "" && rec.Outcome != f.outcome || f.decider != "" && !s.decidedBy(rec, f.decider) {
			continue
		}
		if conv == nil {
			if conv, err = a.Client.Store().Load(ctx, c.ID); err != nil {
				return nil, err
			}
			expiredReplies = expiredPauses(conv)
		}
		if !s.mayKnowDecision(p, c, rec, conv) {
			continue
		}
		reply := decidedReply(conv, rec)
		if rec.Outcome == outcomeExpired && expired-1 < len(expiredReplies) {
			// An expired record decides no call; the replies whose calls
			// expired are its pauses, in order.
			reply = expiredReplies[expired-1]
		}
		tools := []string{}
		if reply != nil {
			for _, call := range reply.ToolCalls {
				tools = append(tools, call.Name)
			}
		}
		if f.tool != "" && !slices.Contains(tools, f.tool) {
			continue
		}
		shown, err := s.viewRecord(ctx, c, p, rec, false)
		if err != nil {
			return nil, err
		}
		out = append(out, historyItem{ConversationID: c.ID, Agent: c.Agent, Requester: c.Owner.ID, Tools: tools, DecisionRecord: *shown})
	}
	return out, nil
}

// expiredPauses returns the replies of conv whose calls expired, in order.
func expiredPauses(conv *toolgate.Conversation) []*toolgate.AssistantMessage {
	var out []*toolgate.AssistantMessage
	for i := 0; i+1 < len(conv.Messages); i++ {
		am, ok := conv.Messages[i].(*toolgate.AssistantMessage)
		tm, ok2 := conv.Messages[i+1].(*toolgate.ToolMessage)
		if ok && ok2 && slices.ContainsFunc(tm.Results, func(r toolgate.ToolResult) bool { return r.Status == toolgate.ResultExpired }) {
			out = append(out, am)
		}
	}
	return out
}
