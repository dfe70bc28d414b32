package records

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a [Store] kept in memory: its records are lost when the
// process exits, and other processes do not see them. It is the store of
// a server configured without one.
//
// A Memory is safe for concurrent use. The zero value is not usable: call
// [NewMemory].
type Memory struct {
	mu        sync.Mutex
	convs     map[string]*Conversation // guarded by mu
	order     []string                 // guarded by mu: conversation ids in creation order
	decisions map[[2]string]*Decision  // guarded by mu: by conversation and pause id
	decSeq    map[[2]string]int64      // guarded by mu: begin order of decisions
	seq       int64                    // guarded by mu
	pending   map[string]*Pending      // guarded by mu: by conversation id
	// guarded by mu: the conversation ids of the entries of pending by
	// agent and awaiting tool (an entry of unknown tools under the tool
	// key unknownTools), and by agent, for listings by scope
	byTool    map[toolKey]map[string]bool
	byAgent   map[string]map[string]bool
	approvals map[[2]string]*Approval // guarded by mu
	grants    []*Grant                // guarded by mu: in the order added
	keys      map[keyID]*RequestKey   // guarded by mu: idempotency keys (keys.go)
	sessions  map[string]*Session     // guarded by mu: by id (sessions.go)
	secrets   map[string][]byte       // guarded by mu: shared secrets by name
}

// NewMemory returns an empty [Memory].
func NewMemory() *Memory {
	return &Memory{
		convs:     make(map[string]*Conversation),
		decisions: make(map[[2]string]*Decision),
		decSeq:    make(map[[2]string]int64),
		pending:   make(map[string]*Pending),
		byTool:    make(map[toolKey]map[string]bool),
		byAgent:   make(map[string]map[string]bool),
		approvals: make(map[[2]string]*Approval),
	}
}

// toolKey is a key of [Memory]'s index of entries by tool: an agent and
// a tool, or known false for the entries whose tools are not known.
type toolKey struct {
	agent, tool string
	known       bool
}

// keys returns the keys p is indexed under in byTool.
func (p *Pending) keys() []toolKey {
	if len(p.Tools) == 0 {
		return []toolKey{{agent: p.Agent}}
	}
	out := make([]toolKey, len(p.Tools))
	for i, t := range p.Tools {
		out[i] = toolKey{agent: p.Agent, tool: t, known: true}
	}
	return out
}

// setPending puts p in the index as conversation conv's entry, or takes
// conv's entry out when p is nil. Called with mu held.
func (m *Memory) setPending(conv string, p *Pending) {
	if old := m.pending[conv]; old != nil {
		for _, k := range old.keys() {
			delete(m.byTool[k], conv)
			if len(m.byTool[k]) == 0 {
				delete(m.byTool, k)
			}
		}
		delete(m.byAgent[old.Agent], conv)
		if len(m.byAgent[old.Agent]) == 0 {
			delete(m.byAgent, old.Agent)
		}
		delete(m.pending, conv)
	}
	if p == nil {
		return
	}
	m.pending[conv] = p
	for _, k := range p.keys() {
		if m.byTool[k] == nil {
			m.byTool[k] = map[string]bool{}
		}
		m.byTool[k][conv] = true
	}
	if m.byAgent[p.Agent] == nil {
		m.byAgent[p.Agent] = map[string]bool{}
	}
	m.byAgent[p.Agent][conv] = true
}

// scoped returns the conversation ids of the entries scopes match.
// Called with mu held.
func (m *Memory) scoped(scopes []Scope) map[string]bool {
	out := map[string]bool{}
	add := func(ids map[string]bool) {
		for id := range ids {
			out[id] = true
		}
	}
	for _, sc := range scopes {
		if sc.Tools == nil {
			add(m.byAgent[sc.Agent])
			continue
		}
		add(m.byTool[toolKey{agent: sc.Agent}])
		for _, t := range sc.Tools {
			add(m.byTool[toolKey{agent: sc.Agent, tool: t, known: true}])
		}
	}
	return out
}

// CreateConversation implements [Store].
func (m *Memory) CreateConversation(ctx context.Context, c *Conversation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckConversation(c); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.convs[c.ID] != nil {
		return fmt.Errorf("records: conversation %q: %w", c.ID, ErrExists)
	}
	m.convs[c.ID] = c.Clone()
	m.order = append(m.order, c.ID)
	return nil
}

// Conversation implements [Store].
func (m *Memory) Conversation(ctx context.Context, id string) (*Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.convs[id]
	if c == nil {
		return nil, fmt.Errorf("records: conversation %q: %w", id, ErrNotFound)
	}
	return c.Clone(), nil
}

// ListConversations implements [Store].
func (m *Memory) ListConversations(ctx context.Context, p *ListParams) (*ConversationPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var owner, after string
	if p != nil {
		owner, after = p.Owner, p.After
	}
	limit := p.limit()
	m.mu.Lock()
	defer m.mu.Unlock()
	start := 0
	if after != "" {
		i := slices.Index(m.order, after)
		if i < 0 {
			return nil, fmt.Errorf("%w: cursor %q names no conversation", ErrInvalid, after)
		}
		start = i + 1
	}
	out := &ConversationPage{Conversations: []Conversation{}}
	for _, id := range m.order[start:] {
		c := m.convs[id]
		if owner != "" && c.Owner.ID != owner {
			continue
		}
		if len(out.Conversations) == limit {
			out.Next = out.Conversations[limit-1].ID
			break
		}
		out.Conversations = append(out.Conversations, *c.Clone())
	}
	return out, nil
}

// Begin implements [Store].
func (m *Memory) Begin(ctx context.Context, d *Decision) (*Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckDecision(d); err != nil {
		return nil, err
	}
	k := [2]string{d.ConversationID, d.PauseID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.decisions[k]; old != nil {
		return old.Clone(), nil
	}
	m.decisions[k] = d.Clone()
	m.seq++
	m.decSeq[k] = m.seq
	return nil, nil
}

// Finish implements [Store].
func (m *Memory) Finish(ctx context.Context, conversationID, pauseID string, outcome Outcome) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckOutcome(outcome, true); err != nil {
		return err
	}
	k := [2]string{conversationID, pauseID}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.decisions[k]
	if d == nil {
		return fmt.Errorf("records: decision of pause %q of %q: %w", pauseID, conversationID, ErrNotFound)
	}
	if d.Outcome.Resolves() {
		return nil // final
	}
	if outcome == OutcomeNone {
		delete(m.decisions, k)
		delete(m.decSeq, k)
		return nil
	}
	d.Outcome = outcome
	if p := m.pending[conversationID]; outcome.Resolves() && p != nil && p.PauseID == pauseID {
		m.setPending(conversationID, nil)
	}
	return nil
}

// Decision implements [Store].
func (m *Memory) Decision(ctx context.Context, conversationID, pauseID string) (*Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.decisions[[2]string{conversationID, pauseID}]
	if d == nil {
		return nil, fmt.Errorf("records: decision of pause %q of %q: %w", pauseID, conversationID, ErrNotFound)
	}
	return d.Clone(), nil
}

// Decisions implements [Store].
func (m *Memory) Decisions(ctx context.Context, conversationID string) ([]Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	type seqd struct {
		seq int64
		d   *Decision
	}
	var all []seqd
	for k, d := range m.decisions {
		if k[0] == conversationID {
			all = append(all, seqd{m.decSeq[k], d})
		}
	}
	slices.SortFunc(all, func(a, b seqd) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Decision, len(all))
	for i, x := range all {
		out[i] = *x.d.Clone()
	}
	return out, nil
}

// AddPending implements [Store].
func (m *Memory) AddPending(ctx context.Context, p *Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckPending(p); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := *p
	cp.Tools = PendingTools(p.Tools)
	m.setPending(p.ConversationID, &cp)
	return nil
}

// RemovePending implements [Store].
func (m *Memory) RemovePending(ctx context.Context, conversationID, pauseID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.pending[conversationID]; p != nil && p.PauseID == pauseID {
		m.setPending(conversationID, nil)
	}
	return nil
}

// ListPending implements [Store]. The cursor is a conversation id whose
// entry is in the index.
func (m *Memory) ListPending(ctx context.Context, p *ListParams) (*PendingPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := p.limit()
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur *Pending
	if p != nil && p.After != "" {
		if cur = m.pending[p.After]; cur == nil {
			return nil, fmt.Errorf("%w: cursor %q names no pending pause", ErrInvalid, p.After)
		}
	}
	var all []Pending
	keep := func(e *Pending) {
		if cur == nil || comparePending(*e, *cur) > 0 {
			e := *e
			e.Tools = slices.Clone(e.Tools)
			all = append(all, e)
		}
	}
	if p != nil && len(p.Scopes) > 0 {
		// Only the entries the scopes name are read.
		for id := range m.scoped(p.Scopes) {
			keep(m.pending[id])
		}
	} else {
		all = make([]Pending, 0, len(m.pending))
		for _, e := range m.pending {
			keep(e)
		}
	}
	if all == nil {
		all = []Pending{}
	}
	slices.SortFunc(all, comparePending)
	out := &PendingPage{Pending: all}
	if len(all) > limit {
		out.Pending = all[:limit:limit]
		out.Next = all[limit-1].ConversationID
	}
	return out, nil
}

// comparePending orders the index: by creation, then conversation id.
func comparePending(a, b Pending) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ConversationID, b.ConversationID)
}

// Approve implements [Store].
func (m *Memory) Approve(ctx context.Context, a *Approval) (*Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckApproval(a); err != nil {
		return nil, err
	}
	k := [2]string{a.ConversationID, a.PauseID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.approvals[k]; old != nil {
		return old.Clone(), nil
	}
	m.approvals[k] = a.Clone()
	return nil, nil
}

// Approval implements [Store].
func (m *Memory) Approval(ctx context.Context, conversationID, pauseID string) (*Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.approvals[[2]string{conversationID, pauseID}]
	if a == nil {
		return nil, fmt.Errorf("records: approval of pause %q of %q: %w", pauseID, conversationID, ErrNotFound)
	}
	return a.Clone(), nil
}

// AddGrant implements [Store].
func (m *Memory) AddGrant(ctx context.Context, g *Grant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckGrant(g); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.ContainsFunc(m.grants, func(x *Grant) bool { return x.ID == g.ID }) {
		return fmt.Errorf("records: grant %q: %w", g.ID, ErrExists)
	}
	cp := *g
	m.grants = append(m.grants, &cp)
	return nil
}

// Grants implements [Store].
func (m *Memory) Grants(ctx context.Context, conversationID string, t time.Time) ([]Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Grant{}
	for _, g := range m.grants {
		if g.ConversationID == conversationID && t.Before(g.ExpiresAt) {
			out = append(out, *g)
		}
	}
	return out, nil
}

// RevokeGrant implements [Store].
func (m *Memory) RevokeGrant(ctx context.Context, conversationID, id string, t time.Time) (*Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.grants {
		if g.ID == id && g.ConversationID == conversationID && t.Before(g.ExpiresAt) {
			old := *g
			g.ExpiresAt = t
			return &old, nil
		}
	}
	return nil, fmt.Errorf("records: grant %q of %q: %w", id, conversationID, ErrNotFound)
}
