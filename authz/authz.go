package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate"
)

// Phase is when a decision is asked for.
type Phase string

const (
	// PhaseDefinition: may the tool's definition be shown to the model?
	PhaseDefinition Phase = "DEFINITION"
	// PhaseExecution: may this call the model made run now?
	PhaseExecution Phase = "EXECUTION"
)

// Request is what a [Policy] decides on.
type Request struct {
	// Principal is the caller; never nil, and never with an empty ID, for
	// requests the guard makes.
	Principal *toolgate.Principal
	// Tool and Metadata describe the tool.
	Tool     toolgate.ToolDefinition
	Metadata toolgate.ToolMetadata
	Phase    Phase
	// Call is the call to run, with its arguments, in the execution phase;
	// nil in the definition phase. With privacy protection on, the
	// arguments are the tokenized ones.
	Call *toolgate.ToolCall
	// ConversationID names the conversation.
	ConversationID string
}

// Decision is a policy's answer. The zero value denies.
type Decision struct {
	Allowed bool
	// Reason says why (which rule or policy decided). It must not contain
	// argument values: it reaches errors, events and logs.
	Reason string
}

// Allow returns an allowing decision with a reason.
func Allow(reason string) Decision { return Decision{Allowed: true, Reason: reason} }

// Deny returns a denying decision with a reason.
func Deny(reason string) Decision { return Decision{Reason: reason} }

// Policy decides whether a principal may see or run a tool. An error means
// the policy could not decide (its store is down): the request is aborted
// with that error wrapped, and the tool does not run. A Policy must be safe
// for concurrent use, and must not keep the request after it returns (the
// guard reuses it).
type Policy interface {
	Authorize(ctx context.Context, r *Request) (Decision, error)
}

// PolicyFunc adapts a function to [Policy].
type PolicyFunc func(ctx context.Context, r *Request) (Decision, error)

// Authorize implements [Policy].
func (f PolicyFunc) Authorize(ctx context.Context, r *Request) (Decision, error) { return f(ctx, r) }

// AllowAll returns a policy that allows every tool in both phases. There is
// no implicit allow: a guard needs a policy, and this one must be chosen
// explicitly.
func AllowAll() Policy {
	return PolicyFunc(func(context.Context, *Request) (Decision, error) { return Allow("allow all"), nil })
}

// RoleTools returns a policy that allows, in both phases, the tools listed
// for any of the principal's roles; everything else is denied, and so is
// every tool for a principal with an empty ID.
func RoleTools(byRole map[string][]string) Policy {
	m := make(map[string]map[string]bool, len(byRole))
	reasons := make(map[string]string, len(byRole))
	for role, tools := range byRole {
		set := make(map[string]bool, len(tools))
		for _, t := range tools {
			set[t] = true
		}
		m[role] = set
		reasons[role] = "granted by role " + role
	}
	return PolicyFunc(func(_ context.Context, r *Request) (Decision, error) {
		if !known(r.Principal) {
			return Deny("no principal"), nil
		}
		for _, role := range r.Principal.Roles {
			if m[role][r.Tool.Name] {
				return Allow(reasons[role]), nil
			}
		}
		return Deny("no role of the principal grants the tool"), nil
	})
}

// All returns a policy that allows only when every policy allows: the
// first denial (or error) decides. All() denies.
func All(policies ...Policy) Policy {
	ps := slices.Clone(policies)
	return PolicyFunc(func(ctx context.Context, r *Request) (Decision, error) {
		if len(ps) == 0 {
			return Deny("no policy"), nil
		}
		var last Decision
		for _, p := range ps {
			d, err := p.Authorize(ctx, r)
			if err != nil || !d.Allowed {
				return d, err
			}
			last = d
		}
		return last, nil
	})
}

// Code identifies why a request was refused. Its values are stable: they
// cross the wire in the service's errors and audit records.
type Code string

// Denial codes.
const (
	// CodeAuthenticationRequired: a request carries tools but no principal,
	// or a guarded tool is called for none. A principal with an empty ID
	// is none.
	CodeAuthenticationRequired Code = "AUTHENTICATION_REQUIRED"
	// CodeToolNotExposed: the model called a tool it was not shown.
	CodeToolNotExposed Code = "TOOL_NOT_EXPOSED"
	// CodeExecutionDenied: the policy denied a call in the execution phase.
	CodeExecutionDenied Code = "EXECUTION_DENIED"
	// CodeCallbackAdded: a tool not in the request's starting set reached
	// the model.
	CodeCallbackAdded Code = "CALLBACK_ADDED"
	// CodeCallbackReplaced: a different tool with an exposed tool's name
	// reached the model.
	CodeCallbackReplaced Code = "CALLBACK_REPLACED"
	// CodeToolSearchChanged: the tool-search tool was replaced.
	CodeToolSearchChanged Code = "TOOL_SEARCH_CHANGED"
)

// ErrDenied is matched (with [errors.Is]) by every [*DenialError].
var ErrDenied = errors.New("authz: denied")

// DenialError reports a refused request or call. No tool ran because of
// it. Its message never contains argument values.
type DenialError struct {
	Code Code
	// Phase is "" for denials before either phase (a missing principal,
	// a changed tool set).
	Phase Phase
	// Tool is the tool concerned, if any.
	Tool string
	// Reason is the policy's reason, if any.
	Reason string
}

func (e *DenialError) Error() string {
	s := "authz: " + string(e.Code)
	if e.Phase != "" {
		s += " in " + string(e.Phase)
	}
	if e.Tool != "" {
		s += fmt.Sprintf(" for tool %q", e.Tool)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is matches [ErrDenied], and [toolgate.ErrAbortTurn] so that a denial
// right before a call runs ends the run instead of becoming a result.
func (e *DenialError) Is(target error) bool {
	return target == ErrDenied || target == toolgate.ErrAbortTurn
}

// Event reports one decision to [Options.OnDecision]. It never carries
// argument values.
type Event struct {
	Phase          Phase
	Tool           string
	Allowed        bool
	Reason         string
	PrincipalID    string
	ConversationID string
	// Code is set for refusals that are not a policy's decision
	// (TOOL_NOT_EXPOSED, CALLBACK_ADDED, …).
	Code Code
}

// known reports whether p is a principal: not nil, with an ID.
func known(p *toolgate.Principal) bool { return p != nil && p.ID != "" }
