package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Crash safety of resumption. A resumption claims its pause with a random
// token and the decisions it will carry out; before each allowed call runs,
// it records the call's key as started, conditional on still holding the
// claim; a call runs only once that record is stored. A claimant that dies
// leaves the pause claimed with the started keys; [Client.RecoverPause]
// takes the claim over with a new token (so the dead claimant, should it
// wake up, can start nothing more) and finishes the pause: calls recorded as
// started but without a result answer [ResultInterrupted] and never run
// again, calls never started run normally.

// RecoverParams are the inputs of [Client.RecoverPause].
type RecoverParams struct {
	// ConversationID names the conversation. Required.
	ConversationID string
	// PauseID names the claimed pause to recover. Required.
	PauseID string
	// Principal is who the recovered turn runs for, as the caller knows
	// them now (not as they were when the pause was claimed): the guards
	// judge the calls not yet started for this principal again. Tools
	// receive it. nil, or a principal with an empty ID: nobody.
	Principal *Principal
	// Lease is how long a claimant may hold a pause: the claim is taken
	// over only when its [PauseRecord.ClaimedAt] is at least Lease ago (a
	// claim recorded without a time always is). It must exceed the longest
	// time the tools of one resumption may take. Ignored with Force;
	// otherwise it must be positive.
	Lease time.Duration
	// Force takes the claim over whatever its age: for an operator who
	// knows that the claimant is gone. false: Lease applies.
	Force bool
}

// RecoverResult is the outcome of [Client.RecoverPause].
type RecoverResult struct {
	// Results answer the calls of the paused reply, in call order, as
	// stored (rewritten for the principal by the protector, if any).
	Results []ToolResult
	// Response is the response of the continued turn, as [Client.Resume]
	// returns it. nil when the claim recorded no decisions (an expiry, or a
	// claim recorded before claims kept decisions): the pause is then
	// resolved without calling the model, like [Client.ExpireOpenPause].
	Response *Response
}

// RecoverPause finishes a claimed pause whose claimant stopped before
// storing its results (its process died, or its store failed). It takes the
// claim over atomically with a new token, only when the claim is older
// than p.Lease or with p.Force, and then finishes the pause with the
// decisions recorded by the claim:
//   - a call recorded as started answers [ResultInterrupted] with
//     [InterruptedMessage]: it is never run again;
//   - a call never started runs (allowed; authorized again, as a resumption
//     does) or answers its denial, exactly as in [Client.Resume];
//   - when the claim recorded no decisions ([Client.ExpireOpenPause]), every
//     call answers [ResultExpired]; when it recorded neither decisions nor a
//     token (a claim made before claims kept them), every call answers
//     [ResultInterrupted], since whether it ran is unknown. The model is not
//     called in these two cases.
//
// Then the results are stored and, when the claim recorded decisions, the
// turn continues as in Client.Resume (the model answers the results, and
// the turn may pause again; a recovered [Client.DenyOpenPause] continues
// too). If the stored decisions can no longer run (a tool was removed, a
// limit lowered), the calls not started answer [ResultSkipped] instead.
//
// The superseded claimant can start no more calls: its record of a start
// fails with [ErrClaimLost], and its append of results fails with
// [ErrConflict] once the recovery stored its own (if it stores first, the
// recovery fails with ErrConflict and its results are not stored; it ran
// only calls the claimant had not started). So every call of a decided
// pause runs at most once. A recovery that fails leaves the pause claimed
// by itself, to be recovered again after the lease.
//
// Errors: [ErrNoOpenPause] when there is no such open pause, [ErrNotClaimed]
// when it is unclaimed, [ErrClaimActive] when the claim is younger than the
// lease, [ErrClaimLost] when another recovery took it over first, and the
// errors of Client.Resume.
func (c *Client) RecoverPause(ctx context.Context, p *RecoverParams) (*RecoverResult, error) {
	switch {
	case p == nil || p.ConversationID == "" || p.PauseID == "":
		return nil, fmt.Errorf("%w: RecoverPause needs a conversation id and a pause id", ErrNoOpenPause)
	case !p.Force && p.Lease <= 0:
		return nil, errors.New("toolgate: RecoverPause needs a positive Lease, or Force")
	}
	id := p.ConversationID
	conv, err := c.store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	old := conv.Pause
	switch {
	case old == nil || old.ID != p.PauseID:
		return nil, fmt.Errorf("%w: conversation %q, pause %q", ErrNoOpenPause, id, p.PauseID)
	case !old.Claimed:
		return nil, fmt.Errorf("%w: conversation %q, pause %q", ErrNotClaimed, id, p.PauseID)
	case !p.Force && !old.ClaimedAt.IsZero() && time.Since(old.ClaimedAt) < p.Lease:
		return nil, fmt.Errorf("%w: conversation %q, pause %q was claimed at %v", ErrClaimActive, id, p.PauseID, old.ClaimedAt)
	}
	if _, err := pauseReply(conv); err != nil {
		return nil, err
	}
	claim := &Claim{Token: newClaimToken(), At: time.Now(), Decisions: old.Decisions, TakeOver: true, Supersedes: old.ClaimToken}
	if err := c.store.ClaimPause(ctx, id, p.PauseID, claim); err != nil {
		return nil, err
	}
	// Read the pause again: the keys started under the old claim are final
	// now that its token is no longer accepted.
	if conv, err = c.store.Load(ctx, id); err != nil {
		return nil, err
	}
	pr := conv.Pause
	if pr == nil || pr.ID != p.PauseID || pr.ClaimToken != claim.Token {
		return nil, fmt.Errorf("%w: conversation %q, pause %q", ErrClaimLost, id, p.PauseID)
	}
	reply, err := pauseReply(conv)
	if err != nil {
		return nil, err
	}
	if len(pr.Decisions) == 0 {
		status, content := ResultExpired, ExpiredMessage
		if old.ClaimToken == "" {
			status, content = ResultInterrupted, InterruptedMessage
		}
		t := &turn{c: c, convID: id, stored: len(conv.Messages), reply: reply, interrupted: pr.Started}
		msg := answerAll(reply, status, content)
		t.markInterrupted(msg)
		if err := t.save(ctx, []Message{msg}, nil, pr.ID); err != nil {
			return nil, err
		}
		return &RecoverResult{Results: msg.Results}, nil
	}
	// Calls already started must not run: they are denied for the manager
	// (so that nothing runs and no limit counts them twice) and answered
	// as interrupted afterwards.
	decisions := slices.Clone(pr.Decisions)
	for i, d := range decisions {
		if slices.Contains(pr.Started, d.Key) {
			decisions[i] = Deny(d.Key, "")
		}
	}
	t := &turn{
		c: c, convID: id, principal: known(p.Principal), stored: len(conv.Messages),
		history: slices.Clip(conv.Messages[:pr.Index]), pause: pr, reply: reply,
		decisions: decisions, claim: claim.Token, recovering: true, interrupted: pr.Started,
	}
	if err := t.begin(ctx, true); err != nil {
		return nil, err
	}
	out := &RecoverResult{}
	resp, err := t.finish(ctx, func(ctx context.Context) (*Response, error) {
		resp, err := t.resume(ctx)
		if err != nil {
			return nil, err
		}
		out.Results, err = t.outResults(ctx, t.resolution)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return out, nil
}

// IdempotencyKey returns the idempotency key of the call with key callKey
// of pause pauseID in conversation conversationID, as tools receive it in
// [ToolRequest.IdempotencyKey]: the same for every attempt at the call,
// including a recovery, and different for any other call. It is 35
// characters of [A-Za-z0-9_] ("tg_" and 32 hex digits of a SHA-256 of the
// three strings); its form does not change between versions.
func IdempotencyKey(conversationID, pauseID, callKey string) string {
	// Each string is hashed after its length, as 8 bytes big-endian.
	buf := make([]byte, 0, 192)
	for _, s := range [...]string{conversationID, pauseID, callKey} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	sum := sha256.Sum256(buf)
	var key [35]byte
	copy(key[:], "tg_")
	hex.Encode(key[3:], sum[:16])
	return string(key[:])
}

// newClaimToken returns a random claim token.
func newClaimToken() string { return randomID("claim_") }

// answerAll answers every call of reply with status and content.
func answerAll(reply *AssistantMessage, status ResultStatus, content string) *ToolMessage {
	msg := &ToolMessage{Results: make([]ToolResult, len(reply.ToolCalls))}
	for i, call := range reply.ToolCalls {
		msg.Results[i] = ToolResult{CallID: call.ID, Name: call.Name, Content: content, Status: status}
	}
	return msg
}

// claimPause claims the turn's pause with claim.
func (t *turn) claimPause(ctx context.Context, claim *Claim) error {
	if err := t.c.store.ClaimPause(ctx, t.convID, t.pause.ID, claim); err != nil {
		return err
	}
	t.claim = claim.Token
	return nil
}

// newMarker returns the marker of the turn's calls: when claim is not nil
// the pause is not claimed yet, and the first write claims it.
func (t *turn) newMarker(claim *Claim) *marker {
	m := &marker{store: t.c.store, convID: t.convID, pauseID: t.pause.ID, token: t.claim, claim: claim}
	if claim != nil {
		m.token = claim.Token
	}
	return m
}

// marking returns the hook that records a call as started with m before
// it runs, and gives it its idempotency key.
func (t *turn) marking(m *marker) func(context.Context, *ToolRequest) error {
	return func(ctx context.Context, req *ToolRequest) error {
		if err := m.mark(ctx, req.Key); err != nil {
			return fmt.Errorf("%w: recording call %q as started: %w", ErrAbortTurn, req.Key, err)
		}
		req.IdempotencyKey = IdempotencyKey(t.convID, t.pause.ID, req.Key)
		return nil
	}
}

// marker records the starts of one resumption's calls. Calls that start
// while a record is being written are recorded together by the next write
// (a group commit): each call still waits for the durable record of its
// own start, and concurrent calls share the store's round trips. The calls
// a concurrent execution launches at once (see [marker.expect]) are
// recorded by one write, the claim's when it is the first. It is safe for
// concurrent use.
type marker struct {
	// fixed at creation
	store                  ConversationStore
	convID, pauseID, token string

	// claim is the claim the first write makes (nil: the pause was
	// claimed before); only the writer reads it.
	claim *Claim

	mu      sync.Mutex
	writing bool         // guarded by mu: a write is in progress
	keys    []string     // guarded by mu: waiting for the next write
	waiting []chan error // guarded by mu: their callers
	gather  []string     // guarded by mu: launched together, neither started nor ended yet
	took    bool         // guarded by mu: the first write claimed the pause
	failed  error        // guarded by mu: why the first write failed; later marks fail too
}

// claimed reports whether the marker's first write claimed the pause.
func (m *marker) claimed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.took
}

// expect tells m that the calls of keys are launched at once: their starts
// wait for one another and are recorded by one write. Each of them must
// then either start (mark) or end without starting; the returned function
// says so for a call that ended (for one that started it does nothing).
// The calls only normalise their arguments between being launched and
// starting, so no start waits for long.
func (m *marker) expect(keys []string) func(ctx context.Context, key string) {
	m.mu.Lock()
	m.gather = slices.Clone(keys)
	m.mu.Unlock()
	return m.ended
}

// ended notes that the call of key ended; if it was launched with others
// and never started, their starts no longer wait for it.
func (m *marker) ended(ctx context.Context, key string) {
	m.mu.Lock()
	i := slices.Index(m.gather, key)
	if i < 0 {
		m.mu.Unlock()
		return
	}
	m.gather = slices.Delete(m.gather, i, i+1)
	m.drain(ctx)
}

// mark records key as started and returns once the record is stored.
func (m *marker) mark(ctx context.Context, key string) error {
	m.mu.Lock()
	if m.failed != nil {
		m.mu.Unlock()
		return m.failed
	}
	if i := slices.Index(m.gather, key); i >= 0 {
		m.gather = slices.Delete(m.gather, i, i+1)
	}
	if m.writing || len(m.gather) > 0 {
		done := make(chan error, 1)
		m.keys, m.waiting = append(m.keys, key), append(m.waiting, done)
		m.mu.Unlock()
		return m.await(ctx, done)
	}
	// This caller writes its own key with those that were gathered, then
	// for whoever queued meanwhile.
	keys, waiting := append(m.keys, key), m.waiting
	m.keys, m.waiting = nil, nil
	m.writing = true
	m.mu.Unlock()
	err := m.write(ctx, keys)
	for _, w := range waiting {
		w <- err
	}
	m.mu.Lock()
	m.writing = false
	m.drain(ctx)
	return err
}

// await waits for the write of the key queued with done. When ctx ends
// first and no write took the key yet, the key is withdrawn (it is never
// recorded) and the context's error returned.
func (m *marker) await(ctx context.Context, done chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	m.mu.Lock()
	if i := slices.Index(m.waiting, done); i >= 0 {
		m.keys = slices.Delete(m.keys, i, i+1)
		m.waiting = slices.Delete(m.waiting, i, i+1)
		m.mu.Unlock()
		return context.Cause(ctx)
	}
	m.mu.Unlock()
	return <-done // a write took it: its outcome is the call's
}

// drain writes the queued keys, a batch per write, until none is queued,
// unless a write is in progress (it drains them) or calls launched
// together have not all started or ended yet (the last of them drains).
// It is called with m.mu held and releases it.
func (m *marker) drain(ctx context.Context) {
	if m.writing || len(m.gather) > 0 {
		m.mu.Unlock()
		return
	}
	m.writing = true
	for len(m.keys) > 0 {
		keys, waiting := m.keys, m.waiting
		m.keys, m.waiting = nil, nil
		m.mu.Unlock()
		err := m.write(ctx, keys)
		for _, w := range waiting {
			w <- err
		}
		m.mu.Lock()
	}
	m.writing = false
	m.mu.Unlock()
}

// write records keys as started. The first write of a marker with a claim
// makes the claim instead, with keys as its started calls; if it fails,
// every later mark fails with its error. A store that panics fails the
// write instead of leaving the callers queued behind it waiting.
func (m *marker) write(ctx context.Context, keys []string) (err error) {
	claim := m.claim
	m.claim = nil
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("toolgate: the store panicked recording calls as started: %v", v)
		}
		if claim != nil {
			m.mu.Lock()
			m.took, m.failed = err == nil, err
			m.mu.Unlock()
		}
	}()
	if claim == nil {
		return m.store.MarkStarted(ctx, m.convID, m.pauseID, m.token, keys)
	}
	claim.Started = keys
	return m.store.ClaimPause(ctx, m.convID, m.pauseID, claim)
}

// markInterrupted answers the calls of msg whose key the recovered claim
// had recorded as started with [ResultInterrupted].
func (t *turn) markInterrupted(msg *ToolMessage) {
	if len(t.interrupted) == 0 {
		return
	}
	for i, key := range t.reply.CallKeys() {
		if i < len(msg.Results) && slices.Contains(t.interrupted, key) {
			r := &msg.Results[i]
			r.Content, r.Status = InterruptedMessage, ResultInterrupted
		}
	}
}

// unrunnable answers the paused reply when a recovery's decisions can no
// longer run (err says why): denied calls keep their message, allowed
// calls answer [ResultSkipped]; started calls are marked afterwards.
func (t *turn) unrunnable(err error) *ToolMessage {
	verdict := make(map[string]Decision, len(t.decisions))
	for _, d := range t.decisions {
		verdict[d.Key] = d
	}
	skipped := fmt.Sprintf("This call did not run: when its interrupted resumption was recovered it could no longer run (%v).", err)
	msg := answerAll(t.reply, ResultSkipped, skipped)
	for i, key := range t.reply.CallKeys() {
		if d, ok := verdict[key]; ok && d.Verdict == VerdictDeny {
			msg.Results[i].Content, msg.Results[i].Status = d.Message, ResultDenied
		}
	}
	return msg
}
