package toolgate

// The loop of a turn: rounds of model calls and tool calls, the
// resumption of a paused reply, and what a turn stores.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// streamTurn runs a turn with a streaming model stage and yields its
// chunks, ending with the turn's last chunk.
func (c *Client) streamTurn(ctx context.Context, t *turn, yield func(*Chunk, error) bool, run func(context.Context) (*Response, error)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.prot != nil {
		t.outStream = t.prot.OutputStream()
	}
	stopped := false
	t.emit = func(ch *Chunk) bool {
		if stopped {
			return false
		}
		// inBody stays set when the caller's loop body panics.
		t.inBody = true
		ok := yield(ch, nil)
		t.inBody = false
		if !ok {
			stopped = true
			cancel()
			return false
		}
		return true
	}
	resp, err := run(ctx)
	if err == nil && t.outStream != nil {
		var rest string
		if rest, err = t.outStream(ctx, "", true); err == nil && rest != "" {
			t.emit(&Chunk{Text: rest})
		}
	}
	if err == nil {
		err = t.end(ctx)
	} else {
		t.end(ctx)
	}
	if stopped {
		return
	}
	if err != nil {
		yield(nil, err)
		return
	}
	last := &Chunk{FinishReason: resp.FinishReason(), Awaiting: resp.Awaiting, PauseID: resp.PauseID, MisleadingIDs: resp.MisleadingIDs, ID: resp.ID, Model: resp.Model}
	u := resp.Usage
	last.Usage = &u
	if resp.Paused() {
		reply := resp.Message()
		if last.ToolCalls, err = t.outCalls(ctx, reply.ToolCalls); err != nil {
			yield(nil, err)
			return
		}
		// The paused reply's parts, as the caller may see them: with them,
		// Collect gives the paused reply as Call does.
		if t.prot == nil {
			last.Parts = cloneParts(reply.Parts)
		} else if _, last.Parts, err = t.outParts(ctx, reply); err != nil {
			yield(nil, err)
			return
		}
	}
	yield(last, nil)
}

// errStreamStopped ends a turn whose consumer stopped reading.
var errStreamStopped = errors.New("toolgate: stream consumer stopped")

// turn is the state of one running turn.
type turn struct {
	c         *Client
	convID    string
	principal *Principal
	stored    int       // messages in the store
	history   []Message // the conversation as the model sees it, without the system prompt
	pending   []Message // messages of the turn not yet stored
	usage     Usage
	results   []ToolResult // results of the turn's rounds
	emit      func(*Chunk) bool
	inBody    bool       // a streaming caller's loop body is running (see callModel)
	guard     Authorizer // nil without an authorizer
	prot      Protector  // nil without a protector
	protTools []*Tool    // the client's tools wrapped by prot
	search    ToolSearch // nil without tool search
	searchT   *Tool      // the request's search tool, wrapped by prot
	outStream func(context.Context, string, bool) (string, error)
	wrapped   map[*Tool]*Tool // guard's tools wrapped by tool middleware
	// for resumption
	pause     *PauseRecord
	reply     *AssistantMessage
	decisions []Decision
	mayDecide func(ToolCall) bool
	claim     string // the token of the claim held on pause; "" until claimed
	resolved  func(*ToolMessage)
	// for recovery (see recover.go)
	recovering  bool
	interrupted []string     // keys recorded as started by the claim taken over
	resolution  []ToolResult // the results stored for the pause
}

// prompt builds the prompt for the conversation messages and tools.
func (c *Client) prompt(msgs []Message, tools []*Tool) *Prompt {
	all := msgs
	if c.system != "" {
		all = make([]Message, 0, len(msgs)+1)
		all = append(all, &SystemMessage{Text: c.system})
		all = append(all, msgs...)
	}
	return &Prompt{Messages: all, Tools: tools, Options: c.options}
}

// save stores msgs (and opens or resolves a pause) and counts them.
func (t *turn) save(ctx context.Context, msgs []Message, pause *PauseRecord, resolves string) error {
	if len(msgs) == 0 {
		return nil
	}
	// Stored records outlive the turn: keep writing after a cancellation
	// that arrived once the round's work was done. (A context without a
	// Done channel is never canceled and needs no wrapper.)
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	err := t.c.store.Append(ctx, t.convID, &AppendParams{At: t.stored, Messages: msgs, Pause: pause, Resolves: resolves})
	if err != nil {
		return err
	}
	t.stored += len(msgs)
	return nil
}

// flush stores the pending messages plus more.
func (t *turn) flush(ctx context.Context, pause *PauseRecord, more ...Message) error {
	msgs := append(t.pending, more...)
	t.pending = nil
	return t.save(ctx, msgs, pause, "")
}

// resume runs the decisions on the paused reply and continues the turn.
func (t *turn) resume(ctx context.Context) (*Response, error) {
	c := t.c
	tools, err := t.offer(ctx, true)
	if err != nil {
		return nil, err
	}
	prompt, err := t.modelPrompt(ctx, t.history, tools)
	if err != nil {
		return nil, err
	}
	// The decisions are checked once, into the plan the manager executes:
	// their own rules (one per call, known keys) and who may decide what,
	// the edits, then the authorizer, then the rules that need the tools
	// and the limits.
	pl, err := newPlan(&resumeParams{Prompt: prompt, Reply: t.reply, Decisions: t.decisions, Awaiting: t.awaiting(),
		MayDecide: t.mayDecide, ConversationID: t.convID, Principal: t.principal}, false)
	if err != nil {
		return nil, err
	}
	m := c.manager
	var res *runResult
	if err := m.checkDeciding(pl); err != nil {
		if !t.recovering {
			return nil, err
		}
		// Decisions stored by a claim that no longer pass (recorded by an
		// older version): the recovery resolves the pause, running nothing
		// the decisions allowed.
		res = &runResult{Message: t.unrunnable(err)}
	}
	// Edited arguments are checked (their schema, then the policy and who
	// may decide the edited call) before the authorizer judges them.
	if err := checkEdits(pl); err != nil {
		return nil, err
	}
	// A recovery does not fail on the policy's view of an edit: the pause
	// is resolved as unrunnable below, unless the authorizer refuses first.
	var editErr error
	if res == nil {
		if editErr = m.checkEditedPolicy(pl); editErr != nil && !t.recovering {
			return nil, editErr
		}
	}
	if err := t.protectReply(ctx, t.reply); err != nil {
		return nil, err
	}
	var refused *ToolMessage
	if t.guard != nil && res == nil {
		// Access may have been revoked while the pause waited: authorize the
		// calls the person allowed again, before anything is claimed.
		if refused, err = t.recheckAllowed(ctx, prompt); err != nil {
			if !t.recovering || !errors.Is(err, ErrAbortTurn) {
				return nil, err
			}
			// Refused now (access revoked since the claim, say): the
			// recovery resolves the pause without running what was allowed,
			// instead of failing again after every lease.
			res = &runResult{Message: t.unrunnable(err)}
		}
	}
	if refused == nil && res == nil {
		err := pl.checkTools()
		if err == nil {
			err = editErr
		}
		if err == nil {
			err = m.checkLimits(pl)
		}
		if err != nil {
			if !t.recovering {
				return nil, err
			}
			// The stored decisions cannot run any more (a tool was removed,
			// a limit lowered): the recovery still resolves the pause.
			res = &runResult{Message: t.unrunnable(err)}
		}
	}
	// A recovery holds its claim already. Otherwise, when calls may run,
	// the first of them to start claims the pause, in the same write that
	// records it as started; when none starts, just before the results
	// are stored.
	var claim *Claim
	if t.claim == "" {
		claim = &Claim{Token: newClaimToken(), At: time.Now(), Decisions: t.decisions}
	}
	switch {
	case res != nil:
	case refused != nil:
		res = &runResult{Message: refused}
	default:
		mk := t.newMarker(claim)
		pl.start, pl.together = t.marking(mk), mk.expect
		res, err = m.execute(ctx, pl)
		if mk.claimed() {
			t.claim = claim.Token
		}
		switch {
		case err != nil && t.claim == "":
			return nil, fmt.Errorf("toolgate: conversation %q: resuming pause %q: %w", t.convID, t.pause.ID, err)
		case err != nil:
			return nil, fmt.Errorf("toolgate: conversation %q: pause %q was claimed but its calls did not complete (recover it with RecoverPause): %w", t.convID, t.pause.ID, err)
		}
	}
	if t.claim == "" {
		// No call started (all denied, refused or unrunnable): claim
		// before storing the results.
		if err := t.claimPause(ctx, claim); err != nil {
			return nil, err
		}
	}
	t.markInterrupted(res.Message)
	if err := t.save(ctx, []Message{res.Message}, nil, t.pause.ID); err != nil {
		return nil, err
	}
	if t.resolved != nil {
		t.resolved(res.Message)
	}
	t.resolution = res.Message.Results
	t.history = append(t.history, t.reply, res.Message)
	t.results = append(t.results, res.Message.Results...)
	if err := t.emitResults(ctx, res.Message.Results); err != nil {
		return nil, err
	}
	if res.ReturnDirect {
		return t.returnDirect(res), nil
	}
	return t.loop(ctx)
}

// loop runs rounds until the turn ends.
func (t *turn) loop(ctx context.Context) (*Response, error) {
	c := t.c
	var last *Response
	for round := 0; round < c.maxRounds; round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tools, err := t.offer(ctx, false)
		if err != nil {
			return nil, err
		}
		prompt, err := t.modelPrompt(ctx, t.history, tools)
		if err != nil {
			return nil, err
		}
		resp, err := t.callModel(ctx, prompt)
		if err != nil {
			return nil, err
		}
		t.usage = t.usage.Add(resp.Usage)
		last = resp
		reply := resp.Message()
		if reply == nil {
			return nil, fmt.Errorf("toolgate: the model returned no message")
		}
		// A reply whose parts disagree with its text or calls is neither
		// stored nor run: what the gate checks must be what is sent back.
		if err := checkAssistantParts(reply); err != nil {
			return nil, fmt.Errorf("toolgate: the model's reply: %w", err)
		}
		if !reply.HasToolCalls() {
			if err := t.flush(ctx, nil, reply); err != nil {
				return nil, err
			}
			return t.response(resp, resp.FinishReason()), nil
		}
		if err := t.protectReply(ctx, reply); err != nil {
			return nil, err
		}
		var res *runResult
		if t.guard != nil {
			refusals, err := t.guard.CheckReply(ctx, prompt, reply)
			if err != nil {
				return nil, err
			}
			if refusals != nil {
				if len(refusals) != len(reply.ToolCalls) {
					return nil, fmt.Errorf("toolgate: the authorizer refused %d calls with %d results", len(reply.ToolCalls), len(refusals))
				}
				res = &runResult{Message: &ToolMessage{Results: refusals}}
			}
		}
		if res == nil {
			res, err = c.manager.Run(ctx, &runParams{Prompt: prompt, Reply: reply, ConversationID: t.convID, Principal: t.principal})
		}
		if err != nil {
			// A pause, a limit or a failure ends the turn (declared here,
			// pe and le cost an allocation only when a round ends so).
			var pe *pauseError
			var le *limitError
			switch {
			case errors.As(err, &pe):
				pr := &PauseRecord{ID: randomID("pause_"), Awaiting: pe.Awaiting}
				if err := t.flush(ctx, pr, reply); err != nil {
					return nil, err
				}
				out := t.response(resp, FinishToolCalls)
				out.Awaiting, out.MisleadingIDs, out.PauseID = pe.Awaiting, pe.MisleadingIDs, pr.ID
				return out, nil
			case errors.As(err, &le):
				return t.endWithSkipped(ctx, resp, reply, le)
			default:
				return nil, err
			}
		}
		t.history = append(t.history, reply, res.Message)
		t.results = append(t.results, res.Message.Results...)
		if c.everyRound || res.ReturnDirect {
			if err := t.flush(ctx, nil, reply, res.Message); err != nil {
				return nil, err
			}
		}
		if err := t.emitResults(ctx, res.Message.Results); err != nil {
			return nil, err
		}
		if res.ReturnDirect {
			return t.returnDirect(res), nil
		}
	}
	// The round limit: the last round ran tools and the model has not
	// answered them.
	if !c.everyRound {
		n := len(t.history)
		if err := t.flush(ctx, nil, t.history[n-2], t.history[n-1]); err != nil {
			return nil, err
		}
	}
	out := t.response(last, FinishRoundLimit)
	out.Results = t.results
	out.Metadata = maps.Clone(out.Metadata)
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.Metadata["limit"] = fmt.Sprintf("the turn reached its limit of %d model calls", c.maxRounds)
	return out, nil
}

// endWithSkipped ends a turn whose next reply would exceed a tool call
// limit: its calls answer "skipped" so that the stored conversation stays
// valid, and the response says which limit was hit.
func (t *turn) endWithSkipped(ctx context.Context, resp *Response, reply *AssistantMessage, le *limitError) (*Response, error) {
	msg := &ToolMessage{Results: make([]ToolResult, len(reply.ToolCalls))}
	for i, call := range reply.ToolCalls {
		msg.Results[i] = ToolResult{CallID: call.ID, Name: call.Name, Status: ResultSkipped,
			Content: "This call did not run: the tool call limit of the turn was reached."}
	}
	if err := t.flush(ctx, nil, reply, msg); err != nil {
		return nil, err
	}
	t.results = append(t.results, msg.Results...)
	out := t.response(resp, FinishToolLimit)
	out.Results = t.results
	out.Metadata = map[string]string{"limit": le.Error()}
	return out, nil
}

func (t *turn) returnDirect(res *runResult) *Response {
	return &Response{
		ConversationID: t.convID,
		Generations:    res.Generations(),
		Usage:          t.usage,
		Results:        res.Message.Results,
	}
}

// response is the turn's response ending with resp's reply.
func (t *turn) response(resp *Response, finish FinishReason) *Response {
	// The response and its one generation share an allocation.
	out := &struct {
		r Response
		g [1]Generation
	}{g: [1]Generation{{Message: resp.Message(), FinishReason: finish}}}
	out.r = Response{
		ID:             resp.ID,
		Model:          resp.Model,
		ConversationID: t.convID,
		Generations:    out.g[:],
		Usage:          t.usage,
		Metadata:       resp.Metadata,
	}
	return &out.r
}

// callModel runs the model stage through the middleware. A panic of the
// model or of model middleware ends the turn with a [*PanicError]; a panic
// of a streaming caller's loop body is not the model's and goes on.
func (t *turn) callModel(ctx context.Context, p *Prompt) (_ *Response, err error) {
	c := t.c
	defer func() {
		if v := recover(); v != nil {
			if t.inBody {
				panic(v)
			}
			err = panicked(c.logger, SeamModel, v)
		}
	}()
	// call stays nil, and costs no method value, when nothing wraps the
	// model.
	var call ModelFunc
	switch {
	case t.emit != nil:
		call = t.streamModel
	case t.guard != nil || t.prot != nil || len(c.modelMW) > 0:
		call = c.model.Generate
	}
	if t.prot != nil {
		model := call
		call = func(ctx context.Context, p *Prompt) (*Response, error) {
			p, err := t.protect(ctx, p)
			if err != nil {
				return nil, err
			}
			return model(ctx, p)
		}
	}
	if t.guard != nil {
		offered, model := p.Tools, call
		call = func(ctx context.Context, p *Prompt) (*Response, error) {
			if err := t.guard.CheckPrompt(ctx, offered, p); err != nil {
				return nil, err
			}
			return model(ctx, p)
		}
	}
	if len(c.modelMW) > 0 {
		// Middleware gets its own copy of the prompt: nothing it changes
		// reaches the client's state.
		cp := *p
		cp.Messages = slices.Clone(p.Messages)
		cp.Tools = slices.Clone(p.Tools)
		p = &cp
		for i := len(c.modelMW) - 1; i >= 0; i-- {
			call = c.modelMW[i](call)
		}
	}
	var resp *Response
	if call == nil {
		resp, err = c.model.Generate(ctx, p)
	} else {
		resp, err = call(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("toolgate: the model returned a nil response")
	}
	return resp, nil
}

// streamModel is the streaming model stage: it forwards text as it
// arrives and returns the aggregated reply.
func (t *turn) streamModel(ctx context.Context, p *Prompt) (*Response, error) {
	var a accumulator
	rewrite, show := t.outReasoning()
	for ch, err := range t.c.model.Stream(ctx, p) {
		if err != nil {
			return nil, err
		}
		if err := a.add(ch); err != nil {
			return nil, err
		}
		if ch != nil && ch.Reasoning != "" && show {
			if err := t.emitReasoning(ctx, rewrite, ch.Reasoning, false); err != nil {
				return nil, err
			}
		}
		if ch != nil && ch.Text != "" {
			if err := t.emitText(ctx, ch.Text); err != nil {
				return nil, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rewrite != nil {
		if err := t.emitReasoning(ctx, rewrite, "", true); err != nil {
			return nil, err
		}
	}
	return a.response(), nil
}

// awaiting returns the keys of the paused reply that may carry a decision
// other than a plain allow: those that awaited one and, for a recovery,
// those recorded as started (the recovery denies them itself). nil when the
// pause does not say (the policy is asked).
func (t *turn) awaiting() []string {
	if t.pause.Awaiting == nil || !t.recovering || len(t.interrupted) == 0 {
		return t.pause.Awaiting
	}
	return append(slices.Clip(t.pause.Awaiting), t.interrupted...)
}

// modelPrompt builds the prompt of a round: the conversation and the
// offered tools. The protector, if any, rewrites it last, right before the
// model (see protect).
func (t *turn) modelPrompt(_ context.Context, history []Message, tools []*Tool) (*Prompt, error) {
	return t.c.prompt(history, tools), nil
}
