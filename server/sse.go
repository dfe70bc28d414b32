package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// Server-sent events: the event streams of conversations and of the inbox
// (text/event-stream, as the HTML standard defines it).

// Stream timing.
const (
	// heartbeatInterval is how often an idle stream sends ": ping", so
	// that proxies and clients see it alive.
	heartbeatInterval = 15 * time.Second
	// streamWriteTimeout bounds each write to a stream, so that a client
	// that stops reading cannot hold the stream forever.
	streamWriteTimeout = 30 * time.Second
)

// eventsState is the server's part in the event streams.
type eventsState struct {
	// fixed at creation
	hub         *hub
	broker      Broker
	unsubscribe func()
	heartbeat   time.Duration
	// txChannel is the broker's channel when the store's transactions can
	// notify it (txaudit.go); "" otherwise.
	txChannel string
}

// startEvents subscribes the server's hub to its broker: the configured
// one, or a broker of its own.
func (s *Server) startEvents() {
	s.events.hub = newHub()
	s.events.broker = s.cfg.Broker
	if s.events.broker == nil {
		s.events.broker = NewLocalBroker()
	}
	s.events.heartbeat = heartbeatInterval
	if cf, ok := s.events.broker.(interface {
		ChannelFor(records.Store) (string, bool)
	}); ok && s.cfg.Records != nil {
		if ch, ok := cf.ChannelFor(s.cfg.Records); ok {
			s.events.txChannel = ch
		}
	}
	s.events.unsubscribe = s.events.broker.Subscribe(s.events.hub.deliver)
}

// stopEvents ends every stream and unsubscribes from the broker.
func (s *Server) stopEvents() {
	s.events.unsubscribe()
	s.events.hub.close()
}

// sseWriter writes the events of one stream, flushing each. Once a write
// fails (the client went away), it writes nothing more.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error // the first write's failure
}

// startStream answers 200 with an event stream's headers and flushes
// them.
func startStream(w http.ResponseWriter) *sseWriter {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: rc}
	sw.err = sw.flush()
	return sw
}

// write sends p; it fails when the client is gone.
func (sw *sseWriter) write(p []byte) error {
	if sw.err != nil {
		return sw.err
	}
	if _, sw.err = sw.w.Write(p); sw.err == nil {
		sw.err = sw.flush()
	}
	return sw.err
}

// flush sends what was written. Each flush moves the write deadline:
// a stream outlives the HTTP server's WriteTimeout, which would cut it,
// while a client that stops reading still cannot hold it forever. (A
// ResponseWriter without deadlines has none to move.)
func (sw *sseWriter) flush() error {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return sw.rc.Flush()
}

// event sends one event: its id (none when ""), its name, and v encoded
// as one line of JSON.
func (sw *sseWriter) event(id, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var b strings.Builder
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + name + "\n")
	// encoding/json escapes newlines within strings, so data is one line.
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return sw.write([]byte(b.String()))
}

// comment sends a comment line, such as the heartbeat ": ping".
func (sw *sseWriter) comment(text string) error {
	return sw.write([]byte(": " + text + "\n\n"))
}

// conversationEvents streams the events of a conversation to its readers.
func (s *Server) conversationEvents(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	c := s.pathConversation(w, r, p, s.decidesOpenPause(r.Context(), p))
	if c == nil {
		return
	}
	s.serveEvents(w, r, c.ID, func(Event) bool { return true })
}

// inboxEvents streams to an approver the events of the pauses of the
// agents whose calls they may decide.
func (s *Server) inboxEvents(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	mine := false
	for name := range s.cfg.Agents {
		mine = mine || s.approver(p, name)
	}
	if !mine {
		writeError(w, http.StatusForbidden, codeForbidden, "only approvers may follow the inbox")
		return
	}
	s.serveEvents(w, r, "", func(e Event) bool {
		switch e.Kind {
		case EventPaused, EventDecided, EventExpired:
		default:
			return false
		}
		// The conversation's record is usually cached; an event of a
		// conversation this instance cannot read is left out.
		c, err := s.conversation(context.Background(), e.ConversationID)
		return err == nil && c != nil && s.approver(p, c.Agent)
	})
}

// serveEvents streams the events of conversation conv ("" for all) that
// keep accepts, until the client goes away or the server closes.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, conv string, keep func(Event) bool) {
	h := s.events.hub
	sub, replay, resync, ok := h.subscribe(conv, r.Header.Get("Last-Event-ID"))
	if !ok {
		writeError(w, http.StatusServiceUnavailable, codeClosed, "the server is closed")
		return
	}
	defer h.unsubscribe(sub)
	sw := startStream(w)
	send := func(st stamped) bool {
		return !keep(st.ev) || sw.event(h.eventID(st.seq), string(st.ev.Kind), st.ev) == nil
	}
	sendResync := func(seq uint64) bool {
		return sw.event(h.eventID(seq), string(EventResync), Event{ConversationID: conv, Kind: EventResync}) == nil
	}
	if resync {
		if _, seq := h.takeLost(sub); !sendResync(seq) {
			return
		}
	}
	for _, st := range replay {
		if !send(st) {
			return
		}
	}
	tick := time.NewTicker(s.events.heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-tick.C:
			if sw.comment("ping") != nil {
				return
			}
		case st := <-sub.ch:
			// seq 0 is a wake-up without an event.
			if st.seq != 0 && !send(st) {
				return
			}
			if lost, seq := h.takeLost(sub); lost && !sendResync(seq) {
				return
			}
		}
	}
}
