package toolgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// CallKeys returns the keys of the reply's calls, in call order.
//
// A call's key is its id when the id is non-empty, does not start with '#',
// and no other call of the reply has the same id. Otherwise the key is '#'
// followed by the call's 0-based position ("#0", "#1", …); two calls sharing
// an id both get positional keys. The keys of a reply are distinct. The
// reply is not changed.
//
// Positional keys depend on order: store and resume a reply with its calls
// in their original order.
func (m *AssistantMessage) CallKeys() []string {
	if m == nil || len(m.ToolCalls) == 0 {
		return nil
	}
	return appendToolCallKeys(make([]string, 0, len(m.ToolCalls)), m)
}

// appendToolCallKeys appends the keys of reply's calls to dst.
func appendToolCallKeys(dst []string, reply *AssistantMessage) []string {
	if reply == nil {
		return dst
	}
	calls := reply.ToolCalls
	base := len(dst)
	dst = slices.Grow(dst, len(calls))[:base+len(calls)]
	keys := dst[base:]
	if len(calls) <= smallReply {
		// Pairwise, each pair once; bit i is set when call i shares its id.
		var shared uint32
		for i := range calls {
			if shared&(1<<i) != 0 || !usableID(calls[i].ID) {
				continue
			}
			for j := i + 1; j < len(calls); j++ {
				if calls[j].ID == calls[i].ID {
					shared |= 1<<i | 1<<j
				}
			}
		}
		for i, c := range calls {
			if usableID(c.ID) && shared&(1<<i) == 0 {
				keys[i] = c.ID
			} else {
				keys[i] = positionalKey(i)
			}
		}
		return dst
	}
	seen := make(map[string]int, len(calls))
	for _, c := range calls {
		seen[c.ID]++
	}
	for i, c := range calls {
		if usableID(c.ID) && seen[c.ID] == 1 {
			keys[i] = c.ID
		} else {
			keys[i] = positionalKey(i)
		}
	}
	return dst
}

// smallReply is the size up to which replies are scanned pairwise instead of
// through a map: replies are short, and the scan does not allocate. It must
// not exceed the 32 bits of the scan's mask.
const smallReply = 32

func usableID(id string) bool { return id != "" && id[0] != '#' }

var positionalKeys = func() (ks [16]string) {
	for i := range ks {
		ks[i] = "#" + strconv.Itoa(i)
	}
	return
}()

func positionalKey(i int) string {
	if i < len(positionalKeys) {
		return positionalKeys[i]
	}
	return "#" + strconv.Itoa(i)
}

// confirmationPolicy is the type of [ClientOptions.Policy].
type confirmationPolicy = func(call ToolCall, meta ToolMetadata) bool

// fromMetadata returns the default policy: a call needs confirmation when
// its tool's metadata says RequiresConfirmation.
func fromMetadata() confirmationPolicy {
	return func(_ ToolCall, meta ToolMetadata) bool { return meta.RequiresConfirmation }
}

// forTools returns the policy of [ClientOptions.ConfirmTools]: it asks
// for confirmation of every call of the named tools, whatever their
// metadata says. Names are the names the model sees, prefixes included.
func forTools(names ...string) confirmationPolicy {
	set := slices.Clone(names)
	return func(call ToolCall, _ ToolMetadata) bool { return slices.Contains(set, call.Name) }
}

// or returns a policy that asks when any of ps asks. Nil policies are
// skipped; or() never asks.
func or(ps ...confirmationPolicy) confirmationPolicy {
	ps = slices.DeleteFunc(slices.Clone(ps), func(p confirmationPolicy) bool { return p == nil })
	return func(call ToolCall, meta ToolMetadata) bool {
		for _, p := range ps {
			if p(call, meta) {
				return true
			}
		}
		return false
	}
}

// Verdict is the kind of a [Decision]. The zero value is not a verdict: a
// decision without one is rejected, never taken as allow.
type Verdict string

// The two verdicts.
const (
	VerdictAllow Verdict = "allow"
	VerdictDeny  Verdict = "deny"
)

// Decision is a person's decision on one call of a paused reply, named by
// the call's key. Build one with [Allow], [AllowWithArguments] or [Deny].
//
// JSON: {"key":"...","verdict":"allow"},
// {"key":"...","verdict":"allow","arguments":{...}} or
// {"key":"...","verdict":"deny","message":"..."}. The message of a denial
// goes to the model as the call's result, and edited arguments go to the
// tool and the model: treat both as untrusted input.
type Decision struct {
	Key     string
	Verdict Verdict
	// Message is the result a denied call answers with; empty for allow.
	Message string
	// Arguments, on an allow, replaces the call's arguments: the call runs
	// with these instead of the model's (see [AllowWithArguments]). They
	// must be a JSON object. nil: the call runs as the model made it;
	// always nil for a denial. A Decision does not own the bytes it is
	// built with by a literal; treat them as read-only.
	Arguments json.RawMessage
}

// Allow returns a decision that lets the call with this key run.
func Allow(key string) Decision { return Decision{Key: key, Verdict: VerdictAllow} }

// Deny returns a decision that refuses the call with this key; the model
// reads message as its result ([DefaultDenyMessage] when empty).
func Deny(key, message string) Decision {
	if message == "" {
		message = DefaultDenyMessage
	}
	return Decision{Key: key, Verdict: VerdictDeny, Message: message}
}

// AllowWithArguments returns a decision that lets the call with this key
// run with args instead of the arguments the model gave: the approver's
// edit. The call keeps its tool (a decision cannot rename a call). args must
// be a JSON object without duplicate names; for a typed tool ([NewToolFor])
// it must match the input schema. These rules are checked with the others
// ([Client.CheckDecisions]), not here. args is copied (compacted when it is valid
// JSON); nil or empty args give a plain [Allow].
//
// When the call runs, authorization and the privacy guard see the edited
// arguments like a model's, and its [ToolResult] records the edit (see
// [ToolResult.EditedArguments]); the reply keeps the model's arguments.
func AllowWithArguments(key string, args json.RawMessage) Decision {
	d := Allow(key)
	if len(args) > 0 {
		d.Arguments = compactArguments(args)
	}
	return d
}

// DenyAll returns a denial with message for every call of reply, for
// resolving an abandoned pause ("The user moved on.").
func DenyAll(reply *AssistantMessage, message string) []Decision {
	keys := reply.CallKeys()
	ds := make([]Decision, len(keys))
	for i, k := range keys {
		ds[i] = Deny(k, message)
	}
	return ds
}

type decisionJSON struct {
	Key       string          `json:"key"`
	Verdict   Verdict         `json:"verdict"`
	Message   string          `json:"message,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MarshalJSON implements [json.Marshaler]. It refuses a decision whose
// verdict is not allow or deny, an allow that carries a message, a denial
// that carries arguments, and arguments that are not a JSON object (see
// [AllowWithArguments]).
func (d Decision) MarshalJSON() ([]byte, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return json.Marshal(decisionJSON(d))
}

// UnmarshalJSON implements [json.Unmarshaler], with the checks of
// [Decision.MarshalJSON]. A denial without a message gets
// [DefaultDenyMessage]; "arguments": null is the same as no arguments, and
// arguments are kept compacted.
func (d *Decision) UnmarshalJSON(data []byte) error {
	var v decisionJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("toolgate: decision: %w", err)
	}
	nd := Decision(v)
	if nd.Verdict == VerdictDeny && nd.Message == "" {
		nd.Message = DefaultDenyMessage
	}
	if string(bytes.TrimSpace(nd.Arguments)) == "null" {
		nd.Arguments = nil
	}
	if err := nd.check(); err != nil {
		return err
	}
	if len(nd.Arguments) > 0 {
		nd.Arguments = compactArguments(nd.Arguments)
	}
	*d = nd
	return nil
}

func (d Decision) check() error {
	switch {
	case d.Verdict != VerdictAllow && d.Verdict != VerdictDeny:
		return &DecisionError{Problem: ProblemInvalidVerdict, Key: d.Key}
	case d.Verdict == VerdictAllow && d.Message != "":
		return &DecisionError{Problem: ProblemMessageOnAllow, Key: d.Key}
	case d.Verdict == VerdictDeny && len(d.Arguments) > 0:
		return &DecisionError{Problem: ProblemArgumentsOnDeny, Key: d.Key}
	case len(d.Arguments) > 0:
		if err := checkArgumentsObject(d.Arguments); err != nil {
			return &DecisionError{Problem: ProblemInvalidArguments, Key: d.Key, Detail: err.Error()}
		}
	}
	return nil
}

// DecisionProblem names the rule a set of decisions breaks. Its values are
// stable: they cross the wire in the service's errors.
type DecisionProblem string

// The problems [Client.CheckDecisions] and [Client.Resume] report.
const (
	// ProblemMissing: a call of the reply has no decision (rule 1).
	ProblemMissing DecisionProblem = "missing_decision"
	// ProblemUnknownKey: a decision names no call of the reply (rule 2).
	ProblemUnknownKey DecisionProblem = "unknown_key"
	// ProblemDuplicate: two decisions name the same call.
	ProblemDuplicate DecisionProblem = "duplicate_decision"
	// ProblemToolNotInPrompt: an allowed call's tool is not in the prompt
	// (rule 3).
	ProblemToolNotInPrompt DecisionProblem = "tool_not_in_prompt"
	// ProblemInvalidVerdict: a decision is neither allow nor deny.
	ProblemInvalidVerdict DecisionProblem = "invalid_verdict"
	// ProblemMessageOnAllow: an allow carries a message.
	ProblemMessageOnAllow DecisionProblem = "message_on_allow"
	// ProblemNoToolCalls: the reply has no tool calls to decide on.
	ProblemNoToolCalls DecisionProblem = "no_tool_calls"
	// ProblemArgumentsOnDeny: a denial carries edited arguments.
	ProblemArgumentsOnDeny DecisionProblem = "arguments_on_deny"
	// ProblemInvalidArguments: the edited arguments of an allow are not a
	// well-formed JSON object, do not match the input schema of a typed
	// tool, or the confirmation policy failed on them; Detail says which.
	ProblemInvalidArguments DecisionProblem = "invalid_arguments"
	// ProblemNotAwaited: a call that awaited no decision got one other than
	// a plain allow (edited arguments, or a denial). Such a call runs as
	// the model wrote it.
	ProblemNotAwaited DecisionProblem = "not_awaited"
	// ProblemNotDecider: whoever decided may not decide a call that
	// awaited a decision, or the call an edit makes of it (see
	// [ResumeTurnParams.MayDecide]).
	ProblemNotDecider DecisionProblem = "not_decider"
	// ProblemEditNeedsConfirmation: [ClientOptions.Policy] asks a decision
	// for the arguments an edit gives a call. The decision was about other
	// arguments, so the edit is refused; deny with a message to have the
	// model propose the call again, which the policy then pauses.
	ProblemEditNeedsConfirmation DecisionProblem = "edit_needs_confirmation"
)

// DecisionError reports decisions that break a rule of resumption. Nothing
// ran. It matches [ErrInvalidDecisions].
type DecisionError struct {
	Problem DecisionProblem
	// Key is the key concerned, if any.
	Key string
	// Tool is the tool concerned (for ProblemToolNotInPrompt,
	// ProblemNotAwaited and ProblemNotDecider, and for
	// ProblemInvalidArguments when a tool's schema refused the arguments).
	Tool string
	// Detail explains ProblemInvalidArguments (the JSON or schema error;
	// it may quote the edited arguments) and ProblemNotDecider (whether
	// the call or its edit was refused). "": no detail.
	Detail string
}

func (e *DecisionError) Error() string {
	switch e.Problem {
	case ProblemMissing:
		return fmt.Sprintf("toolgate: no decision for call %q", e.Key)
	case ProblemUnknownKey:
		return fmt.Sprintf("toolgate: decision for %q names no call of the reply", e.Key)
	case ProblemDuplicate:
		return fmt.Sprintf("toolgate: more than one decision for call %q", e.Key)
	case ProblemToolNotInPrompt:
		return fmt.Sprintf("toolgate: call %q was allowed, but the prompt carries no tool %q", e.Key, e.Tool)
	case ProblemInvalidVerdict:
		return fmt.Sprintf("toolgate: decision for %q has no valid verdict (want allow or deny)", e.Key)
	case ProblemMessageOnAllow:
		return fmt.Sprintf("toolgate: decision for %q allows the call but carries a message", e.Key)
	case ProblemNoToolCalls:
		return "toolgate: the reply has no tool calls"
	case ProblemArgumentsOnDeny:
		return fmt.Sprintf("toolgate: decision for %q denies the call but carries arguments", e.Key)
	case ProblemInvalidArguments:
		msg := fmt.Sprintf("toolgate: the edited arguments for call %q are invalid", e.Key)
		if e.Tool != "" {
			msg = fmt.Sprintf("toolgate: the edited arguments for call %q do not fit tool %q", e.Key, e.Tool)
		}
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
		return msg
	case ProblemNotAwaited:
		return fmt.Sprintf("toolgate: call %q of tool %q awaited no decision: it runs as the model made it, so only a plain allow may name it", e.Key, e.Tool)
	case ProblemNotDecider:
		msg := fmt.Sprintf("toolgate: the decider may not decide call %q of tool %q", e.Key, e.Tool)
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
		return msg
	case ProblemEditNeedsConfirmation:
		return fmt.Sprintf("toolgate: the edited arguments for call %q of tool %q need a decision of their own; deny with a message instead", e.Key, e.Tool)
	}
	return fmt.Sprintf("toolgate: invalid decisions (%s)", e.Problem)
}

// Is reports whether target is [ErrInvalidDecisions].
func (e *DecisionError) Is(target error) bool { return target == ErrInvalidDecisions }

// CheckDecisions checks decisions against a paused reply of a turn of c,
// by the rules of resumption, without running or storing anything (a
// service checks a person's decisions with it before it accepts them):
//  1. every call of the reply has exactly one decision, including calls
//     that no policy flagged;
//  2. every decision names a call of the reply;
//  3. an allowed call's tool is one of the client's tools;
//  4. edited arguments (see [AllowWithArguments]) are a well-formed JSON
//     object and, for a typed tool ([NewToolFor]), match its input schema.
//
// Every decision must also be well formed. The first broken rule is
// returned as a [*DecisionError]; nil means the decisions can be run, as
// far as these rules go. CheckDecisions does not know which calls awaited
// a decision nor who decided: [Client.Resume] checks those rules too
// ([Conversation.Pause], [ResumeTurnParams.MayDecide]).
func (c *Client) CheckDecisions(reply *AssistantMessage, decisions []Decision) error {
	return checkDecisions(&Prompt{Tools: c.tools}, reply, decisions)
}

// checkDecisions is [Client.CheckDecisions] against the tools of prompt p.
func checkDecisions(p *Prompt, reply *AssistantMessage, decisions []Decision) error {
	_, _, err := matchDecisions(p, reply, decisions, true)
	return err
}

// matchDecisions checks decisions and returns the reply's keys and, for
// each call, the index of its decision. With tools false the rules that
// need the prompt's tools (an allowed call's tool is in p, its edit matches
// the tool's schema) are left out.
func matchDecisions(p *Prompt, reply *AssistantMessage, decisions []Decision, tools bool) (keys []string, which []int, err error) {
	if !reply.HasToolCalls() {
		return nil, nil, &DecisionError{Problem: ProblemNoToolCalls}
	}
	keys = reply.CallKeys()
	which = make([]int, len(keys))
	for i := range which {
		which[i] = -1
	}
	var index map[string]int
	if len(keys) > smallReply {
		index = make(map[string]int, len(keys))
		for i, k := range keys {
			index[k] = i
		}
	}
	for di, d := range decisions {
		if err := d.check(); err != nil {
			return nil, nil, err
		}
		ci := -1
		if index != nil {
			if i, ok := index[d.Key]; ok {
				ci = i
			}
		} else {
			ci = slices.Index(keys, d.Key)
		}
		if ci < 0 {
			return nil, nil, &DecisionError{Problem: ProblemUnknownKey, Key: d.Key}
		}
		if which[ci] >= 0 {
			return nil, nil, &DecisionError{Problem: ProblemDuplicate, Key: d.Key}
		}
		which[ci] = di
	}
	for ci, di := range which {
		if di < 0 {
			return nil, nil, &DecisionError{Problem: ProblemMissing, Key: keys[ci]}
		}
		if d := &decisions[di]; tools && d.Verdict == VerdictAllow {
			name := reply.ToolCalls[ci].Name
			t := p.Tool(name)
			if t == nil {
				return nil, nil, &DecisionError{Problem: ProblemToolNotInPrompt, Key: keys[ci], Tool: name}
			}
			if err := checkEdit(t, keys[ci], d.Arguments); err != nil {
				return nil, nil, err
			}
		}
	}
	return keys, which, nil
}
