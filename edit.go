package toolgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// compactArguments returns a compacted copy of args, or a plain copy when
// args is not valid JSON (the checks report it later).
func compactArguments(args json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return bytes.Clone(args)
	}
	return buf.Bytes()
}

// Errors of checkArgumentsObject; their text becomes DecisionError.Detail.
var (
	errArgsNotObject = errors.New("not a JSON object")
	errArgsUTF8      = errors.New("not valid UTF-8")
	errArgsSyntax    = errors.New("not valid JSON")
)

// checkArgumentsObject reports whether args is one well-formed JSON object,
// in valid UTF-8, with no name repeated within an object at any depth.
// Repeated names are refused because readers disagree about them (one takes
// the first, another the last), so an authorizer could judge a value other
// than the one the tool gets.
func checkArgumentsObject(args json.RawMessage) error {
	if !utf8.Valid(args) {
		return errArgsUTF8
	}
	if !json.Valid(args) {
		return errArgsSyntax
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return errArgsSyntax
	}
	if tok != json.Delim('{') {
		return errArgsNotObject
	}
	// One set of names per open object; nil for an open array.
	stack := []map[string]bool{{}}
	expectName := true // in an object, the next string token is a name
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return errArgsSyntax
		}
		top := stack[len(stack)-1]
		if top != nil && expectName {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				expectName = len(stack) > 0 && stack[len(stack)-1] != nil
				continue
			}
			name, ok := tok.(string)
			if !ok {
				return errArgsSyntax
			}
			if top[name] {
				return fmt.Errorf("the name %q appears twice in one object", name)
			}
			top[name] = true
			expectName = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, map[string]bool{})
			expectName = true
		case json.Delim('['):
			stack = append(stack, nil)
			expectName = false
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			expectName = len(stack) > 0 && stack[len(stack)-1] != nil
		default:
			// A value: in an object, a name comes next.
			expectName = top != nil
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errArgsSyntax
	}
	return nil
}

// checkEdit checks the edited arguments of an allowed call against the
// input schema of its tool t, when t is a typed tool.
func checkEdit(t *Tool, key string, args json.RawMessage) error {
	if len(args) == 0 || t.check == nil {
		return nil
	}
	if err := t.check.Validate(args); err != nil {
		return &DecisionError{Problem: ProblemInvalidArguments, Key: key, Tool: t.def.Name, Detail: err.Error()}
	}
	return nil
}

// edited returns the edited arguments of the decision for call i, or ""
// when the call runs as the model made it. decisions is nil for a run
// without decisions.
func edited(decisions []Decision, which []int, i int) string {
	if decisions == nil {
		return ""
	}
	if d := &decisions[which[i]]; d.Verdict == VerdictAllow && len(d.Arguments) > 0 {
		return string(d.Arguments)
	}
	return ""
}

// runCalls returns the calls as they run: the reply's calls with the
// arguments of edited calls replaced. It returns calls itself when nothing
// was edited, so that an ordinary run does not allocate.
func runCalls(calls []ToolCall, decisions []Decision, which []int) []ToolCall {
	var out []ToolCall
	for i := range calls {
		if args := edited(decisions, which, i); args != "" {
			if out == nil {
				out = append([]ToolCall(nil), calls...)
			}
			out[i].Arguments = args
		}
	}
	if out == nil {
		return calls
	}
	return out
}

// recordEdit marks r as the result of a call that ran (or was refused)
// with edited arguments args, and opens its content with [EditNote].
func recordEdit(r *ToolResult, args string) {
	r.EditedArguments = args
	r.Content = EditNote + args + "\n" + r.Content
}

// checkEditedPolicy judges every edited call before anything of the reply
// runs. Two rules apply, in this order:
//
//   - The edited call is asked of [managerOptions.Policy] as a call of its
//     own. A person's yes covers the call they were asked about; when the
//     policy says the arguments they typed need a decision themselves, the
//     edit is refused ([ProblemEditNeedsConfirmation]) rather than run on
//     the strength of a decision about other arguments. The tool-level
//     rules (the metadata flag and [managerOptions.ConfirmTools]) do not
//     refuse an edit: they say the tool needs a decision, which is the
//     decision being made.
//   - When the manager's whole policy says the edited call needs a
//     decision, the decider must be one who may decide the edited call
//     ([resumeParams.MayDecide]).
//
// A policy that panics on the edit refuses the decisions.
func (m *manager) checkEditedPolicy(pl *plan) error {
	keys := pl.keys
	for i, c := range pl.reply.ToolCalls {
		args := edited(pl.decisions, pl.which, i)
		if args == "" {
			continue
		}
		c.Arguments = args
		if m.argPolicy != nil {
			flagged, err := m.ask(m.argPolicy, pl.prompt, c)
			if err != nil {
				return &DecisionError{Problem: ProblemInvalidArguments, Key: keys[i], Detail: "the confirmation policy failed on them"}
			}
			if flagged {
				return &DecisionError{Problem: ProblemEditNeedsConfirmation, Key: keys[i], Tool: c.Name, Detail: "the confirmation policy asks a decision for the edited arguments themselves"}
			}
		}
		needs, err := m.needs(pl.prompt, c)
		if err != nil {
			return &DecisionError{Problem: ProblemInvalidArguments, Key: keys[i], Detail: "the confirmation policy failed on them"}
		}
		if needs && !m.mayDecide(pl.mayDecide, c) {
			return &DecisionError{Problem: ProblemNotDecider, Key: keys[i], Tool: c.Name, Detail: "the edited call needs a decision this decider may not make"}
		}
	}
	return nil
}

// checkEdits checks the edited arguments of the allowed calls of pl
// against the schemas of their tools, where the prompt carries the tool (a
// missing tool is [plan.checkTools]' concern). Decisions are well formed
// already ([newPlan]).
func checkEdits(pl *plan) error {
	for i, c := range pl.reply.ToolCalls {
		d := pl.decision(i)
		if d.Verdict != VerdictAllow || len(d.Arguments) == 0 {
			continue
		}
		if t := pl.prompt.Tool(c.Name); t != nil {
			if err := checkEdit(t, pl.keys[i], d.Arguments); err != nil {
				return err
			}
		}
	}
	return nil
}
