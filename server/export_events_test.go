package server

import "time"

// SetHeartbeat sets how often s's idle streams send ": ping". Call it
// before any stream opens.
func SetHeartbeat(s *Server, d time.Duration) { s.events.heartbeat = d }

// DecodeEvent and EncodeEvent are the broker payload codec.
var (
	DecodeEvent = decodeEvent
	EncodeEvent = encodeEvent
)

// NewTestHub returns the id of a new hub that has delivered n events of
// conversation "conv_c" (and, before each, one of "conv_other"), and a
// function that subscribes to "conv_c" after lastID and returns the
// sequence numbers replayed, and whether the stream must resync.
func NewTestHub(n int) (id string, resume func(lastID string) ([]uint64, bool)) {
	h := newHub()
	for range n {
		for _, c := range []string{"conv_other", "conv_c"} {
			p, _ := encodeEvent(Event{ConversationID: c, Kind: EventCompleted})
			h.deliver(p)
		}
	}
	return h.id, func(lastID string) ([]uint64, bool) {
		sub, replay, resync, _ := h.subscribe("conv_c", lastID)
		defer h.unsubscribe(sub)
		var seqs []uint64
		for _, st := range replay {
			seqs = append(seqs, st.seq)
		}
		return seqs, resync
	}
}
