package toolgate

// The guards' stages of a turn: the protector, the tool search and the
// authorizer begin with the request, choose the tools of every round and
// check the prompt and the replies.

import (
	"context"
	"errors"
	"fmt"
)

// begin starts the guards of the request, if any: the privacy guard first,
// so that the authorization guard wraps the privacy guard's tools and a
// call is authorized (on tokenized arguments) before any original is
// restored into it.
func (t *turn) begin(ctx context.Context, resume bool) error {
	log := t.c.logger
	tools := t.c.tools
	if p := t.c.protector; p != nil {
		err := guarded(log, SeamProtector, func() error {
			rp, err := p(ctx, &BeginParams{Principal: t.principal, ConversationID: t.convID, Resume: resume})
			if err != nil {
				return err
			}
			if rp == nil {
				return errors.New("toolgate: the protector returned no request protector")
			}
			tools = make([]*Tool, len(t.c.tools))
			for i, tool := range t.c.tools {
				tools[i] = rp.Tool(tool)
			}
			t.prot = safeProtector{rp: rp, logger: log}
			return nil
		})
		if err != nil {
			return err
		}
		t.protTools = tools
	}
	if s := t.c.search; s != nil {
		err := guarded(log, SeamToolSearch, func() error {
			rs, err := s(ctx, &BeginParams{Principal: t.principal, ConversationID: t.convID, Resume: resume})
			if err != nil {
				return err
			}
			if rs == nil || rs.Tool() == nil {
				return errors.New("toolgate: the tool search returned no search tool")
			}
			st := rs.Tool()
			if t.c.names[st.Name()] {
				return fmt.Errorf("toolgate: the search tool is named %q like a tool of the client", st.Name())
			}
			t.search, t.searchT = safeSearch{rs: rs, logger: log}, st
			return nil
		})
		if err != nil {
			return err
		}
		if t.prot != nil {
			err := guarded(log, SeamProtector, func() error { t.searchT = t.prot.Tool(t.searchT); return nil })
			if err != nil {
				return err
			}
		}
	}
	if t.c.authz == nil {
		return nil
	}
	return guarded(log, SeamAuthorizer, func() error {
		g, err := t.c.authz(ctx, &BeginParams{Principal: t.principal, Tools: tools, ConversationID: t.convID, Resume: resume, SearchTool: t.searchT})
		if err != nil {
			return err
		}
		if g == nil {
			return errors.New("toolgate: the authorizer returned no guard")
		}
		t.guard = safeAuthorizer{ra: g, logger: log}
		return nil
	})
}

// offer returns the tools to offer the model this round: the authorizer's
// choice (each wrapped by tool middleware once per request), or all tools;
// with tool search, the search tool and the tools it chooses among them, or
// (all true, for a resumption) the search tool and all of them.
func (t *turn) offer(ctx context.Context, all bool) ([]*Tool, error) {
	var tools []*Tool
	switch {
	case t.guard != nil:
		var err error
		if tools, err = t.guard.Tools(ctx); err != nil {
			return nil, err
		}
	case t.prot != nil:
		tools = t.protTools
	case t.search == nil:
		return t.c.wrapped, nil
	default:
		tools = t.c.tools
	}
	if t.search != nil {
		var err error
		if tools, err = t.searchOffer(ctx, tools, all); err != nil {
			return nil, err
		}
	}
	if len(t.c.toolMW) == 0 {
		return tools, nil
	}
	if t.wrapped == nil {
		t.wrapped = make(map[*Tool]*Tool, len(tools))
	}
	out := make([]*Tool, len(tools))
	for i, tool := range tools {
		w, ok := t.wrapped[tool]
		if !ok {
			w = tool.Wrap(t.c.toolMW...)
			t.wrapped[tool] = w
		}
		out[i] = w
	}
	return out, nil
}

// searchOffer returns the search tool and the tools the request's tool
// search chooses among tools (all of them when all is true). Without an
// authorizer, the search tool is added; with one, it is offered only when
// the authorizer offered it.
func (t *turn) searchOffer(ctx context.Context, tools []*Tool, all bool) ([]*Tool, error) {
	offered := t.guard == nil
	rest := make([]*Tool, 0, len(tools))
	for _, tool := range tools {
		if tool == t.searchT {
			offered = true
			continue
		}
		rest = append(rest, tool)
	}
	found, err := t.search.Offer(ctx, t.history, rest)
	if err != nil {
		return nil, err
	}
	if len(found) > 0 {
		in := make(map[*Tool]bool, len(rest))
		for _, tool := range rest {
			in[tool] = true
		}
		for _, tool := range found {
			if !in[tool] {
				return nil, errors.New("toolgate: the tool search offered a tool it was not given")
			}
		}
	}
	if all {
		found = rest
	}
	out := make([]*Tool, 0, len(found)+1)
	if offered {
		out = append(out, t.searchT)
	}
	return append(out, found...), nil
}

// recheckAllowed authorizes the calls a person allowed in a paused reply.
// When the authorizer refuses them neutrally, it returns the tool message
// that answers the reply: denied calls keep their decision's message and the
// allowed ones get the refusals.
func (t *turn) recheckAllowed(ctx context.Context, p *Prompt) (*ToolMessage, error) {
	keys := t.reply.CallKeys()
	verdict := make(map[string]Decision, len(t.decisions))
	for _, d := range t.decisions {
		verdict[d.Key] = d
	}
	allowed := &AssistantMessage{Text: t.reply.Text}
	var index []int
	for i, call := range t.reply.ToolCalls {
		if d := verdict[keys[i]]; d.Verdict == VerdictAllow {
			if len(d.Arguments) > 0 {
				call.Arguments = string(d.Arguments) // the authorizer judges the edit
			}
			allowed.ToolCalls = append(allowed.ToolCalls, call)
			index = append(index, i)
		}
	}
	if len(index) == 0 {
		return nil, nil
	}
	allowed.Parts = subsetParts(t.reply.Parts, index)
	refusals, err := t.guard.CheckReply(ctx, p, allowed)
	if err != nil || refusals == nil {
		return nil, err
	}
	if len(refusals) != len(index) {
		return nil, fmt.Errorf("toolgate: the authorizer refused %d calls with %d results", len(index), len(refusals))
	}
	msg := &ToolMessage{Results: make([]ToolResult, len(t.reply.ToolCalls))}
	for i, call := range t.reply.ToolCalls {
		msg.Results[i] = ToolResult{CallID: call.ID, Name: call.Name, Status: ResultDenied, Content: verdict[keys[i]].Message}
	}
	for j, i := range index {
		msg.Results[i] = refusals[j]
		if args := verdict[keys[i]].Arguments; len(args) > 0 {
			recordEdit(&msg.Results[i], string(args))
		}
	}
	return msg, nil
}

// protectReply shows the protector a reply with tool calls as a whole,
// before any of its calls runs.
func (t *turn) protectReply(ctx context.Context, reply *AssistantMessage) error {
	if t.prot == nil {
		return nil
	}
	_, err := t.prot.Messages(ctx, []Message{reply})
	return err
}

// protect returns p with its messages as the model may see them: tokenized
// by the protector. It is the last stage before the model, after every
// model middleware, so that what a middleware adds is tokenized too.
func (t *turn) protect(ctx context.Context, p *Prompt) (*Prompt, error) {
	msgs, err := t.prot.Messages(ctx, p.Messages)
	if err != nil {
		return nil, err
	}
	if len(msgs) != len(p.Messages) {
		return nil, fmt.Errorf("toolgate: the protector returned %d messages for %d", len(msgs), len(p.Messages))
	}
	cp := *p
	cp.Messages = msgs
	return &cp, nil
}
