package toolgate

// The operations of a [Client]: turns, resumptions and the closing of
// pauses.

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"time"
)

// CallParams are the inputs of [Client.Call] and [Client.Stream].
type CallParams struct {
	// ConversationID names the conversation; "" starts a new one with a
	// random id, returned in [Response.ConversationID].
	ConversationID string
	// Principal is who the turn runs for, as the caller knows them now;
	// tools and guards receive it. nil, or a principal with an empty ID:
	// nobody.
	Principal *Principal
	// Input is the user's message.
	Input string
	// Parts follow Input in the user's message: images, other files and
	// more text ([FilePart], and [TextPart] without provider data). A part
	// of another kind is an error wrapping [ErrInvalidMessage]; a file
	// larger than [ClientOptions.MaxFileSize] is a [*FileTooLargeError].
	// nil: the message is Input alone.
	Parts Parts
}

// ResumeTurnParams are the inputs of [Client.Resume] and
// [Client.ResumeStream].
type ResumeTurnParams struct {
	// ConversationID names the paused conversation.
	ConversationID string
	// PauseID names the pause the decisions were made for
	// ([Response.PauseID] of the paused turn). Required: the resumption
	// fails with [ErrNoOpenPause] when it is empty or the conversation's
	// open pause is another one, so that decisions taken on one pause are
	// never applied to a later pause whose calls happen to have the same
	// keys.
	PauseID string
	// Principal is who the resumed turn runs for, as the caller knows them
	// now (not as they were when the turn paused): the guards judge the
	// allowed calls for this principal again. Tools receive it. nil, or a
	// principal with an empty ID: nobody.
	Principal *Principal
	// Decisions holds one decision per call of the paused reply. A call
	// that awaited no decision ([PauseRecord.Awaiting]) runs as the model
	// wrote it: its decision must be a plain [Allow].
	Decisions []Decision
	// MayDecide, when not nil, reports whether whoever made Decisions may
	// decide call: it is asked about every call that awaited a decision
	// (and about an edited call that the policy says needs one) before
	// anything runs or the pause is claimed, and false refuses the
	// resumption with [ProblemNotDecider].
	// nil: the caller checked who decided.
	MayDecide func(call ToolCall) bool
	// Conversation, when not nil, is the conversation ConversationID as
	// the caller has just loaded it from the client's store; the
	// resumption uses it instead of loading it again. It is not modified.
	// A stale copy is safe: the claim checks in the store that the pause
	// is still open and unclaimed, and the resumption fails with
	// [ErrNoOpenPause] otherwise.
	Conversation *Conversation
	// Resolved, when not nil, is called with the tool message that
	// resolves the pause as soon as it is stored, before the turn goes on
	// (the model answers the results after). It is called at most once,
	// on the resuming goroutine, and must not modify the message or keep
	// the turn waiting.
	Resolved func(*ToolMessage)
}

// Call runs one turn for the user's input and returns its response. When
// the turn paused, the response is the paused reply with
// [Response.Paused] true and the awaiting keys in [Response.Awaiting]; the
// pause is stored and can be resumed with [Client.Resume].
//
// Errors are infrastructure failures (model, store, canceled context) and
// [ErrPauseOpen] when the conversation has an unresolved pause: resolve it
// first, for example with [Client.DenyOpenPause] or
// [Client.ExpireOpenPause].
func (c *Client) Call(ctx context.Context, p *CallParams) (*Response, error) {
	t, err := c.startTurn(ctx, p)
	if err != nil {
		return nil, err
	}
	return t.finish(ctx, t.loop)
}

// Stream runs one turn like [Client.Call] and yields it as it happens: the
// text deltas of every round, a chunk with the results of each round's tool
// calls, and a last chunk with the finish reason and the usage of the turn.
// The last chunk of a paused turn also carries the paused reply's tool calls
// and the awaiting keys. No tool runs before its reply is complete. Breaking
// out of the loop cancels the turn; nothing of an unfinished round is
// stored.
func (c *Client) Stream(ctx context.Context, p *CallParams) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		t, err := c.startTurn(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		c.streamTurn(ctx, t, yield, t.loop)
	}
}

// Resume continues a paused turn with decisions, one per call of the
// paused reply. The reply and the prompt it answered are read from the
// store (or taken from [ResumeTurnParams.Conversation]). The decisions are
// checked ([Client.CheckDecisions] and the limits) before anything runs; then the
// pause is claimed, with the decisions, so that it is consumed once: a
// second resumption, concurrent or later, fails with [ErrNoOpenPause] and
// runs nothing. The claim is written together with the start records of
// the first calls to run (or, when no call runs, before the results are
// stored). Each allowed call is recorded in the store as started before it
// runs, and gets its
// [ToolRequest.IdempotencyKey]; a resumption that dies before storing the
// results is finished by [Client.RecoverPause], which never runs a started
// call again. A resumption whose claim was taken over by a recovery starts
// no more calls and fails with [ErrClaimLost]. The turn then continues and
// may pause again.
func (c *Client) Resume(ctx context.Context, p *ResumeTurnParams) (*Response, error) {
	t, err := c.resumeTurn(ctx, p)
	if err != nil {
		return nil, err
	}
	return t.finish(ctx, t.resume)
}

// ResumeStream is [Client.Resume] yielding the continued turn like
// [Client.Stream].
func (c *Client) ResumeStream(ctx context.Context, p *ResumeTurnParams) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		t, err := c.resumeTurn(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		c.streamTurn(ctx, t, yield, t.resume)
	}
}

// ClosePauseParams are the inputs of [Client.DenyOpenPause] and
// [Client.ExpireOpenPause].
type ClosePauseParams struct {
	// ConversationID names the conversation.
	ConversationID string
	// PauseID names the pause to close; the call fails with
	// [ErrNoOpenPause] when the conversation's open pause is another one.
	// "": the open pause, whichever it is.
	PauseID string
	// Message is the result every call answers the model with. "":
	// [DefaultDenyMessage] for a denial, [ExpiredMessage] for an expiry.
	Message string
}

// DenyOpenPause resolves the conversation's open pause by denying every
// call with p.Message, without calling the model, so that new input is
// accepted and the stored conversation stays valid for providers (every
// tool call has a result). It fails with [ErrNoOpenPause] when there is no
// such open pause.
func (c *Client) DenyOpenPause(ctx context.Context, p *ClosePauseParams) error {
	if p == nil {
		p = &ClosePauseParams{}
	}
	message := cmp.Or(p.Message, DefaultDenyMessage)
	deny := func(reply *AssistantMessage) []Decision { return DenyAll(reply, message) }
	// Not a person's decision: the pause is abandoned and nothing of the
	// reply runs, including the calls that awaited no decision.
	return c.resolveOpenPause(ctx, p.ConversationID, p.PauseID, deny, func(_ *Prompt, reply *AssistantMessage) (*ToolMessage, error) {
		return answerAll(reply, ResultDenied, message), nil
	})
}

// ExpireOpenPause resolves the conversation's open pause because nobody
// decided it in time: every call answers p.Message ([ExpiredMessage] when
// "") with status [ResultExpired], nothing runs and the model is not
// called, so that new input is accepted and the stored conversation stays
// valid for providers. The pause is claimed like a resumption claims it,
// so a pause is either expired or resumed, never both. It fails with
// [ErrNoOpenPause] when the conversation has no such open pause (none,
// another one, or one already claimed by a resumption).
func (c *Client) ExpireOpenPause(ctx context.Context, p *ClosePauseParams) error {
	if p == nil {
		p = &ClosePauseParams{}
	}
	message := cmp.Or(p.Message, ExpiredMessage)
	return c.resolveOpenPause(ctx, p.ConversationID, p.PauseID, nil, func(_ *Prompt, reply *AssistantMessage) (*ToolMessage, error) {
		return answerAll(reply, ResultExpired, message), nil
	})
}

// resolveOpenPause claims the conversation's open pause (pauseID "": the
// open one, whichever it is) with decisions (nil: none, for an expiry) and
// stores the tool message answer returns for its reply as the pause's
// resolution, without calling the model. answer gets the prompt the reply
// answered.
func (c *Client) resolveOpenPause(ctx context.Context, conversationID, pauseID string, decisions func(*AssistantMessage) []Decision, answer func(*Prompt, *AssistantMessage) (*ToolMessage, error)) error {
	conv, err := c.store.Load(ctx, conversationID)
	if err != nil {
		return err
	}
	reply, err := pausedReply(conv)
	if err != nil {
		return err
	}
	if pauseID != "" && conv.Pause.ID != pauseID {
		return fmt.Errorf("%w: conversation %q, pause %q: the open pause is %q", ErrNoOpenPause, conversationID, pauseID, conv.Pause.ID)
	}
	t := &turn{c: c, convID: conversationID, stored: len(conv.Messages)}
	prompt := c.prompt(conv.Messages[:conv.Pause.Index], nil)
	claim := &Claim{Token: newClaimToken(), At: time.Now()}
	if decisions != nil {
		claim.Decisions = decisions(reply)
	}
	if err := c.store.ClaimPause(ctx, conversationID, conv.Pause.ID, claim); err != nil {
		return err
	}
	msg, err := answer(prompt, reply)
	if err != nil {
		return err
	}
	return t.save(ctx, []Message{msg}, nil, conv.Pause.ID)
}

func (c *Client) startTurn(ctx context.Context, p *CallParams) (*turn, error) {
	if p == nil {
		p = &CallParams{}
	}
	id := p.ConversationID
	if id == "" {
		id = randomID("conv_")
	}
	conv, err := c.store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	if conv.Pause != nil {
		return nil, fmt.Errorf("%w: conversation %q, pause %q: resume it or deny it first", ErrPauseOpen, id, conv.Pause.ID)
	}
	user := &UserMessage{Text: p.Input}
	if err := c.checkInputParts(p.Parts); err != nil {
		return nil, err
	}
	if len(p.Parts) > 0 {
		user.Parts = cloneParts(p.Parts)
	}
	t := &turn{c: c, convID: id, principal: known(p.Principal), stored: len(conv.Messages)}
	if err := t.begin(ctx, false); err != nil {
		return nil, err
	}
	t.history = append(slices.Clip(conv.Messages), user)
	t.pending = []Message{user}
	return t, nil
}

func (c *Client) resumeTurn(ctx context.Context, p *ResumeTurnParams) (*turn, error) {
	if p == nil || p.PauseID == "" {
		return nil, fmt.Errorf("%w: resume: ResumeTurnParams.PauseID is empty; pass the Response.PauseID of the paused turn", ErrNoOpenPause)
	}
	conv := p.Conversation
	if conv == nil {
		var err error
		if conv, err = c.store.Load(ctx, p.ConversationID); err != nil {
			return nil, err
		}
	} else if conv.ID != p.ConversationID {
		return nil, fmt.Errorf("toolgate: resume: the conversation given is %q, not %q", conv.ID, p.ConversationID)
	}
	reply, err := pausedReply(conv)
	if err != nil {
		return nil, err
	}
	if conv.Pause.ID != p.PauseID {
		return nil, fmt.Errorf("%w: conversation %q, pause %q: the open pause is %q", ErrNoOpenPause, p.ConversationID, p.PauseID, conv.Pause.ID)
	}
	t := &turn{
		c: c, convID: p.ConversationID, principal: known(p.Principal), stored: len(conv.Messages),
		history: slices.Clip(conv.Messages[:conv.Pause.Index]), pause: conv.Pause, reply: reply,
		decisions: p.Decisions, resolved: p.Resolved, mayDecide: p.MayDecide,
	}
	if err := t.begin(ctx, true); err != nil {
		return nil, err
	}
	return t, nil
}

// pausedReply returns the reply of the conversation's open, unclaimed
// pause.
func pausedReply(conv *Conversation) (*AssistantMessage, error) {
	if pr := conv.Pause; pr == nil || pr.Claimed {
		return nil, fmt.Errorf("%w: conversation %q", ErrNoOpenPause, conv.ID)
	}
	return pauseReply(conv)
}

// pauseReply returns the reply of the conversation's pause, which must be
// non-nil.
func pauseReply(conv *Conversation) (*AssistantMessage, error) {
	pr := conv.Pause
	if pr.Index < 0 || pr.Index != len(conv.Messages)-1 {
		return nil, fmt.Errorf("%w: conversation %q: pause at message %d of %d", ErrCorrupt, conv.ID, pr.Index, len(conv.Messages))
	}
	reply, ok := conv.Messages[pr.Index].(*AssistantMessage)
	if !ok || !reply.HasToolCalls() {
		return nil, fmt.Errorf("%w: conversation %q: the paused message is not a reply with tool calls", ErrCorrupt, conv.ID)
	}
	return reply, nil
}
