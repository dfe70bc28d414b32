package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/internal/logcap"
)

// Events. Something that happens to a conversation — a turn completes or
// pauses, a pause is decided or expires — is published as an [Event] to
// the server's [Broker], which delivers it to every server instance
// subscribed to it, this one included; each instance's hub then hands it
// to the event streams open on it (GET /v1/conversations/{id}/events, GET
// /v1/inbox/events). An event says only what happened to which
// conversation: readers fetch the conversation to see what changed, with
// their own rights, so an event never carries message content.

// EventKind is what happened to a conversation. Its values cross the wire
// as SSE event names and never change.
type EventKind string

// The kinds of [Event].
const (
	// EventAppended: messages were stored without the turn completing
	// or pausing (a turn that failed after some of its rounds).
	EventAppended EventKind = "appended"
	// EventPaused: a turn paused; PauseID is the new pause.
	EventPaused EventKind = "paused"
	// EventDecided: the pause PauseID was decided (its resumed turn
	// follows with its own event).
	EventDecided EventKind = "decided"
	// EventExpired: the pause PauseID expired undecided.
	EventExpired EventKind = "expired"
	// EventCompleted: a turn completed with an answer.
	EventCompleted EventKind = "completed"
	// EventResync is never published: a stream sends it when it may
	// have missed events (a lost broker connection, a slow reader, an
	// unknown Last-Event-ID). The reader should fetch the conversation,
	// or the inbox, again.
	EventResync EventKind = "resync"
)

// Event is something that happened to a conversation.
//
// JSON: {"conversation_id","kind","pause_id"}, pause_id omitted when "".
type Event struct {
	ConversationID string    `json:"conversation_id"`
	Kind           EventKind `json:"kind"`
	// PauseID is the pause the event is about ("" for completed and
	// appended).
	PauseID string `json:"pause_id,omitempty"`
}

// maxEventPayload bounds an encoded event: PostgreSQL's NOTIFY takes less
// than 8000 bytes.
const maxEventPayload = 4000

// errBadEvent is the error of a payload that is not an event.
var errBadEvent = errors.New("server: not an event")

// encodeEvent returns the broker payload of e.
func encodeEvent(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if len(b) > maxEventPayload {
		return nil, fmt.Errorf("%w: %d bytes encoded, more than %d", errBadEvent, len(b), maxEventPayload)
	}
	return b, nil
}

// decodeEvent returns the event of a broker payload, which it checks
// strictly: payloads may come from anyone who can publish to the broker.
func decodeEvent(payload []byte) (Event, error) {
	var e Event
	if len(payload) > maxEventPayload {
		return e, fmt.Errorf("%w: %d bytes", errBadEvent, len(payload))
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Event{}, fmt.Errorf("%w: %v", errBadEvent, err)
	}
	if dec.More() {
		return Event{}, fmt.Errorf("%w: more than one JSON value", errBadEvent)
	}
	switch e.Kind {
	case EventAppended, EventCompleted:
	case EventPaused, EventDecided, EventExpired:
		if !validID(e.PauseID) {
			return Event{}, fmt.Errorf("%w: kind %q with pause id %q", errBadEvent, e.Kind, e.PauseID)
		}
	default:
		return Event{}, fmt.Errorf("%w: unknown kind %q", errBadEvent, e.Kind)
	}
	if !validID(e.ConversationID) || (e.PauseID != "" && !validID(e.PauseID)) {
		return Event{}, fmt.Errorf("%w: conversation id %q, pause id %q", errBadEvent, e.ConversationID, e.PauseID)
	}
	return e, nil
}

// validID reports whether id can be a conversation's or a pause's id: 1 to
// 256 printable ASCII characters.
func validID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// Broker carries events between the server instances that share the
// agents' stores. A server publishes the encoded events of its
// conversations and subscribes in [New]; [LocalBroker] delivers within a
// process, and the postgres package's Broker across processes through
// PostgreSQL's LISTEN/NOTIFY.
//
// A payload is a small JSON object (at most 4000 bytes) that names a
// conversation, never its content.
type Broker interface {
	// Publish sends payload to every subscriber, on every instance, the
	// publisher's included. It returns once the payload is sent; delivery
	// may happen later.
	Publish(ctx context.Context, payload []byte) error
	// Subscribe calls deliver with every payload published from now on,
	// one at a time, until cancel is called; cancel waits for a delivery
	// in progress to return, and is idempotent. A nil payload tells the
	// subscriber that payloads may have been lost, as when the broker's
	// connection was cut and restored. deliver must return quickly, must
	// not keep or modify payload, and must not call Subscribe or cancel.
	Subscribe(deliver func(payload []byte)) (cancel func())
}

// LocalBroker is a [Broker] within one process: it delivers every payload
// to every subscriber before Publish returns. Servers of one process that
// share a LocalBroker (and their agents' stores) see each other's events.
// The zero value is ready to use; a LocalBroker is safe for concurrent use.
type LocalBroker struct {
	mu   sync.RWMutex // read-held during deliveries; Subscribe and cancel take it
	subs map[*func([]byte)]struct{}
}

// NewLocalBroker returns a new, empty [LocalBroker].
func NewLocalBroker() *LocalBroker { return &LocalBroker{} }

// Publish implements [Broker]. It fails only when ctx is done.
func (b *LocalBroker) Publish(ctx context.Context, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for f := range b.subs {
		(*f)(payload)
	}
	return nil
}

// Subscribe implements [Broker].
func (b *LocalBroker) Subscribe(deliver func(payload []byte)) (cancel func()) {
	if deliver == nil {
		panic("server: LocalBroker.Subscribe with a nil function")
	}
	key := &deliver
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[*func([]byte)]struct{})
	}
	b.subs[key] = struct{}{}
	b.mu.Unlock()
	return sync.OnceFunc(func() {
		b.mu.Lock()
		delete(b.subs, key)
		b.mu.Unlock()
	})
}

// publish sends an event of conversation convID through the broker. A
// failure is logged: the event streams are a convenience, and the stored
// conversation is the truth.
func (s *Server) publish(ctx context.Context, convID string, kind EventKind, pauseID string) {
	e := Event{ConversationID: convID, Kind: kind, PauseID: pauseID}
	s.notify(ctx, e)
	if notifiedInTx(ctx, e) {
		return // sent by the transaction that made it (txaudit.go)
	}
	payload, err := encodeEvent(e)
	if err == nil {
		err = s.events.broker.Publish(context.WithoutCancel(ctx), payload)
	}
	if err != nil {
		s.logger.ErrorContext(ctx, "server: publishing an event failed", "conversation", convID, "kind", kind, "err", logcap.Error(err))
	}
}

// publishTurn publishes the outcome of a turn: completed or paused.
func (s *Server) publishTurn(ctx context.Context, t *turnJSON) {
	if t.Pause != nil {
		s.publish(ctx, t.ConversationID, EventPaused, t.Pause.ID)
		return
	}
	s.publish(ctx, t.ConversationID, EventCompleted, "")
}

// Hub tuning.
const (
	// hubHistory is how many recent events a hub keeps to replay to a
	// stream that reconnects with Last-Event-ID.
	hubHistory = 1024
	// streamBuffer is how many events may wait for a slow stream; more
	// are dropped and the stream is told to resync.
	streamBuffer = 64
)

// stamped is an event with its sequence number in a hub.
type stamped struct {
	seq uint64
	ev  Event
}

// hub hands the events the broker delivers to the streams open on this
// server. It numbers them, so that a stream can resume after the last
// event it saw. It is safe for concurrent use.
type hub struct {
	// fixed at creation
	id   string // random: names the hub in event ids
	done chan struct{}

	mu      sync.Mutex
	closed  bool                     // guarded by mu
	seq     uint64                   // guarded by mu: of the last event
	history []stamped                // guarded by mu: ring of the last hubHistory events
	subs    map[*subscriber]struct{} // guarded by mu
}

// subscriber is an event stream's registration in a hub.
type subscriber struct {
	// fixed at creation
	conv string // the conversation it follows; "" for every conversation
	ch   chan stamped

	lost bool // guarded by hub.mu: events were dropped since the last take
}

func newHub() *hub {
	return &hub{id: strings.ToLower(rand.Text()[:10]), done: make(chan struct{}), subs: make(map[*subscriber]struct{})}
}

// deliver is the hub's [Broker] subscription.
func (h *hub) deliver(payload []byte) {
	if payload == nil {
		h.resyncAll()
		return
	}
	e, err := decodeEvent(payload)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.seq++
	st := stamped{seq: h.seq, ev: e}
	if len(h.history) < hubHistory {
		h.history = append(h.history, st)
	} else {
		h.history[(h.seq-1)%hubHistory] = st
	}
	for sub := range h.subs {
		if sub.conv != "" && sub.conv != e.ConversationID {
			continue
		}
		select {
		case sub.ch <- st:
		default:
			sub.lost = true
		}
	}
}

// resyncAll tells every stream that events may have been lost.
func (h *hub) resyncAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		sub.lost = true
		// Wake the stream with a placeholder it will not send.
		select {
		case sub.ch <- stamped{}:
		default:
		}
	}
}

// eventID returns the SSE id of the event numbered seq.
func (h *hub) eventID(seq uint64) string { return h.id + "-" + strconv.FormatUint(seq, 10) }

// subscribe registers a stream of the events of conversation conv (""
// for all). lastID is the Last-Event-ID the stream resumes after, if any:
// the events after it that the hub still holds are returned, to be sent
// first; resync is true when lastID is not one the hub can resume after.
// ok is false when the hub is closed.
func (h *hub) subscribe(conv, lastID string) (sub *subscriber, replay []stamped, resync, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false, false
	}
	sub = &subscriber{conv: conv, ch: make(chan stamped, streamBuffer)}
	h.subs[sub] = struct{}{}
	if lastID == "" {
		return sub, nil, false, true
	}
	hid, seqText, _ := strings.Cut(lastID, "-")
	last, err := strconv.ParseUint(seqText, 10, 64)
	oldest := h.seq - uint64(len(h.history)) // the last seq the hub no longer holds
	if hid != h.id || err != nil || last > h.seq || last < oldest {
		return sub, nil, true, true
	}
	for seq := last + 1; seq <= h.seq; seq++ {
		st := h.history[(seq-1)%hubHistory]
		if conv == "" || st.ev.ConversationID == conv {
			replay = append(replay, st)
		}
	}
	return sub, replay, false, true
}

// takeLost reports whether events were dropped for sub since the last
// call, and the sequence number of the last event.
func (h *hub) takeLost(sub *subscriber) (bool, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := sub.lost
	sub.lost = false
	return lost, h.seq
}

// unsubscribe removes sub.
func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
}

// close ends every stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}
