package server

import (
	"context"
	"slices"
	"sync"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/records"
)

// One transaction per step. When an agent's conversation store keeps the
// server's records in its own database ([records.Transactional]: the
// stores of packages store/sqlite and store/postgres, with Config.Records
// set to the store's Records(ctx) and Config.Audit to its AuditLog(), or
// nil), the server writes its records and audit records inside the
// transactions of the conversation store's own writes, through a
// [records.Hook]:
//
//   - the append that opens a pause also writes the pause's index entry
//     and its requested records;
//   - the append that resolves a decided pause also writes the executed,
//     denied and refused records of its calls;
//   - the append of the resumed turn's answer (or of its next pause)
//     also sets the decision's outcome, which takes the pause out of the
//     index.
//
// So each of those steps is atomic: a crash, a lost connection or a full
// disk leaves all of a step or none of it, never a pause missing from the
// inbox or from the audit log, never a resolution without its records.
// Other stores keep the separate writes (audit.go, index.go).

// txAgents returns the names of the agents whose stores run the server's
// hooks: see above.
func (s *Server) txAgents() map[string]bool {
	t, ok := s.cfg.Records.(records.Transactional)
	if !ok {
		return nil
	}
	if s.cfg.Audit != nil && s.cfg.Audit != t.AuditLog() {
		// Records in the store, audit records elsewhere: writing some of
		// them in the store's log would split the history.
		return nil
	}
	out := map[string]bool{}
	for name, a := range s.cfg.Agents {
		if a.Client.Store() == t.ConversationStore() {
			out[name] = true
		}
	}
	return out
}

// txNotes says what the hook of one request wrote in the store's
// transactions, so that the request does not write it again. It is safe
// for concurrent use.
type txNotes struct {
	mu       sync.Mutex
	paused   map[string]bool // guarded by mu: pauses indexed and audited with their append
	resolved string          // guarded by mu: the pause whose resolution's records were written with it
	finished bool            // guarded by mu: the decision's outcome set with the answer
}

type txNotesKey struct{}

// notes returns the notes ctx carries, or nil.
func notes(ctx context.Context) *txNotes {
	n, _ := ctx.Value(txNotesKey{}).(*txNotes)
	return n
}

// pausedInTx reports whether the pause's index entry and requested records
// were written with it.
func pausedInTx(ctx context.Context, pauseID string) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused[pauseID]
}

// resolvedInTx reports whether the audit records of the resolution of
// pause pauseID were written with it.
func resolvedInTx(ctx context.Context, pauseID string) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.resolved != "" && n.resolved == pauseID
}

// finishedInTx reports whether the decision's outcome was set with the
// answer.
func finishedInTx(ctx context.Context) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.finished
}

// resumption is what the hook of a decision's request knows of the pause
// it resumes.
type resumption struct {
	pauseID   string
	reply     *toolgate.AssistantMessage
	actor     audit.Actor
	decisions []toolgate.Decision
}

// withTx returns ctx carrying the hook that writes the records of turns of
// conversation c in the store's transactions, and the notes of what it
// wrote, when c's agent's store runs hooks; ctx otherwise. res is the
// pause the request resumes, or nil for a new turn.
func (s *Server) withTx(ctx context.Context, c *conversation, res *resumption) context.Context {
	if !s.tx[c.Agent] {
		return ctx
	}
	n := &txNotes{paused: map[string]bool{}}
	hook := func(ctx context.Context, tx records.Tx, w *records.Write) error {
		ap := w.Append
		if ap == nil || w.ConversationID != c.ID {
			return nil
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if res != nil && ap.Resolves == res.pauseID && n.resolved == "" {
			if msg, ok := ap.Messages[0].(*toolgate.ToolMessage); ok && s.audit != nil {
				if err := tx.Audit(s.audit.resolution(c.ID, res.pauseID, res.reply, msg, res.actor, res.decisions)...); err != nil {
					return err
				}
			}
			n.resolved = res.pauseID
		}
		if res != nil && n.resolved != "" && !n.finished && (ap.Pause != nil || answers(ap.Messages)) {
			if err := tx.Finish(c.ID, res.pauseID, outcomeDecided); err != nil {
				return err
			}
			n.finished = true
		}
		if ap.Pause != nil {
			if err := tx.AddPending(&records.Pending{ConversationID: c.ID, Agent: c.Agent, PauseID: ap.Pause.ID, CreatedAt: w.PauseCreatedAt,
				Tools: awaitingTools(ap.Messages[len(ap.Messages)-1], ap.Pause.Awaiting)}); err != nil {
				return err
			}
			if s.audit != nil {
				if err := tx.Audit(s.requested(c, ap.Pause, ap.Messages[len(ap.Messages)-1])...); err != nil {
					return err
				}
			}
			n.paused[ap.Pause.ID] = true
		}
		return nil
	}
	return context.WithValue(records.WithHook(ctx, s.cfg.Records, hook), txNotesKey{}, n)
}

// answers reports whether msgs end with the model's answer: a reply
// without tool calls.
func answers(msgs []toolgate.Message) bool {
	last, ok := msgs[len(msgs)-1].(*toolgate.AssistantMessage)
	return ok && !last.HasToolCalls()
}

// requested returns the requested records of the pause pr opened on msg,
// the paused reply, for conversation c.
func (s *Server) requested(c *conversation, pr *toolgate.PauseRecord, msg toolgate.Message) []*audit.Record {
	reply, ok := msg.(*toolgate.AssistantMessage)
	if !ok {
		return nil
	}
	keys := toolgate.ToolCallKeys(reply)
	var recs []*audit.Record
	for i, call := range reply.ToolCalls {
		if slices.Contains(pr.Awaiting, keys[i]) {
			recs = append(recs, s.audit.callRecord(c.ID, pr.ID, keys[i], call, audit.KindRequested, person(&c.Owner), "awaiting a decision"))
		}
	}
	return recs
}
