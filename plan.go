package toolgate

import "context"

// plan is a reply's calls as they will run: for a resumption, its
// decisions matched to the calls and checked once by the rules of
// resumption, stage by stage, before the manager executes it. Every rule is
// judged exactly once per resumption; [manager.execute] runs a plan without
// judging it again.
//
// The stages, in the order the [Client] applies them, with its
// authorizer's re-check between stages 4 and 5 (a recovery turns some
// failures into results). [manager.Resume] checks stages 3 and 5 with
// stage 1, call by call, as [Client.CheckDecisions] does:
//
//  1. newPlan: each decision well formed, naming a call, one per call;
//  2. checkDeciding: who may decide what ([resumeParams.Awaiting],
//     [resumeParams.MayDecide]);
//  3. checkEdits: edited arguments match their tool's schema;
//  4. checkEditedPolicy: the policy on the edited calls;
//  5. checkTools: every allowed call's tool is in the prompt;
//  6. checkLimits: the turn's tool call limits.
type plan struct {
	prompt    *Prompt
	reply     *AssistantMessage
	decisions []Decision // nil for a run without decisions (every call allowed)
	keys      []string   // the reply's call keys
	which     []int      // for each call, the index of its decision; nil without decisions
	awaiting  []string   // resumeParams.Awaiting
	mayDecide func(ToolCall) bool
	convID    string
	principal *Principal

	// start, when set, runs for each allowed call once its arguments are
	// normalised, right before its tool is entered; an error ends the call
	// with it. The client records the call as started there (the first
	// start claims the pause) and gives it its idempotency key.
	start func(context.Context, *ToolRequest) error
	// together, when set with start, is told the keys of the calls a
	// concurrent execution launches at once, before it launches them, so
	// that their starts are recorded together; the function it returns is
	// called with each launched call's key when the call ends.
	together func(keys []string) (ended func(ctx context.Context, key string))
}

// newPlan matches the decisions of p to the calls of its reply (stage 1):
// the rules of [Client.CheckDecisions] that need no tool and, with tools true,
// also those that do (stages 3 and 5, call by call, as CheckDecisions
// reports them).
func newPlan(p *resumeParams, tools bool) (*plan, error) {
	keys, which, err := matchDecisions(p.Prompt, p.Reply, p.Decisions, tools)
	if err != nil {
		return nil, err
	}
	return &plan{
		prompt: p.Prompt, reply: p.Reply, decisions: p.Decisions, keys: keys, which: which,
		awaiting: p.Awaiting, mayDecide: p.MayDecide, convID: p.ConversationID, principal: p.Principal,
	}, nil
}

// decision returns the decision for call i.
func (pl *plan) decision(i int) *Decision { return &pl.decisions[pl.which[i]] }

// allowed reports whether call i may run.
func (pl *plan) allowed(i int) bool {
	return pl.decisions == nil || pl.decision(i).Verdict == VerdictAllow
}

// checkTools checks that the tool of every allowed call is in the prompt
// (stage 5).
func (pl *plan) checkTools() error {
	for i, c := range pl.reply.ToolCalls {
		if pl.allowed(i) && pl.prompt.Tool(c.Name) == nil {
			return &DecisionError{Problem: ProblemToolNotInPrompt, Key: pl.keys[i], Tool: c.Name}
		}
	}
	return nil
}

// resumePlan applies every rule of resumption to p, in order, and returns
// the plan to execute.
func (m *manager) resumePlan(p *resumeParams) (*plan, error) {
	pl, err := newPlan(p, true)
	if err != nil {
		return nil, err
	}
	for _, check := range [...]func(*plan) error{m.checkDeciding, m.checkEditedPolicy, m.checkLimits} {
		if err := check(pl); err != nil {
			return nil, err
		}
	}
	return pl, nil
}
