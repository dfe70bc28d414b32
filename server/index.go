package server

import (
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// conversation is what the server knows of a conversation besides its
// messages, which the agent's store keeps.
type conversation struct {
	ID        string
	Agent     string
	Owner     *toolgate.Principal
	CreatedAt time.Time
}

// DecisionRecord is who decided a pause, how, and what came of it.
//
// JSON: {"pause_id","decided_by","decided_at","decisions","outcome"}.
type DecisionRecord struct {
	PauseID string `json:"pause_id"`
	// DecidedBy is the id of the principal who decided; "" for an expired
	// pause, which nobody decided.
	DecidedBy string              `json:"decided_by"`
	DecidedAt time.Time           `json:"decided_at"`
	Decisions []toolgate.Decision `json:"decisions"`
	// Edits are the calls allowed with edited arguments, with the model's
	// arguments and the approver's; omitted when none was edited.
	Edits []EditRecord `json:"edits,omitempty"`
	// Outcome is "deciding" while the resumed turn runs, then "decided",
	// or "failed" when the turn failed after the pause was claimed; it is
	// "expired" for a pause that outlived its time-to-live (DecidedAt is
	// then when it was expired, and Decisions is empty).
	Outcome string `json:"outcome"`
}

// The outcomes of a [DecisionRecord].
const (
	outcomeDeciding = "deciding"
	outcomeDecided  = "decided"
	outcomeFailed   = "failed"
	outcomeExpired  = "expired"
)

// index keeps the server's conversations and decision records in memory.
// It is safe for concurrent use.
type index struct {
	mu        sync.Mutex
	convs     map[string]*conversation   // guarded by mu
	order     []string                   // guarded by mu: ids in creation order
	decisions map[string]*DecisionRecord // guarded by mu: by conversation id + "/" + pause id
}

func newIndex() *index {
	return &index{convs: make(map[string]*conversation), decisions: make(map[string]*DecisionRecord)}
}

func (x *index) add(c *conversation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.convs[c.ID] = c
	x.order = append(x.order, c.ID)
}

func (x *index) get(id string) *conversation {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.convs[id]
}

// list returns the conversations keep accepts, in creation order.
func (x *index) list(keep func(*conversation) bool) []*conversation {
	x.mu.Lock()
	all := make([]*conversation, len(x.order))
	for i, id := range x.order {
		all[i] = x.convs[id]
	}
	x.mu.Unlock()
	return slices.DeleteFunc(all, func(c *conversation) bool { return !keep(c) })
}

// begin records that rec's decider starts deciding a pause. It returns
// the existing record, and false, when the pause was already being decided
// or decided: exactly one begin per pause succeeds until it is aborted.
func (x *index) begin(convID string, rec *DecisionRecord) (*DecisionRecord, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := convID + "/" + rec.PauseID
	if old := x.decisions[k]; old != nil {
		cp := *old
		return &cp, false
	}
	x.decisions[k] = rec
	return nil, true
}

// finish sets the outcome of a begun decision; an empty outcome forgets
// it, so that the pause can be decided again.
func (x *index) finish(convID, pauseID, outcome string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := convID + "/" + pauseID
	if outcome == "" {
		delete(x.decisions, k)
		return
	}
	if r := x.decisions[k]; r != nil {
		r.Outcome = outcome
	}
}

// decision returns a copy of the record of a pause, or nil.
func (x *index) decision(convID, pauseID string) *DecisionRecord {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.decisions[convID+"/"+pauseID]; r != nil {
		cp := *r
		return &cp
	}
	return nil
}

// decisionsOf returns copies of the records of a conversation's pauses, in
// the order they were decided.
func (x *index) decisionsOf(convID string) []DecisionRecord {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []DecisionRecord
	prefix := convID + "/"
	for k, r := range x.decisions {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b DecisionRecord) int { return a.DecidedAt.Compare(b.DecidedAt) })
	return out
}
