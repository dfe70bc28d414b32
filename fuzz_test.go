package toolgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
)

// fuzzIDs are the ids a fuzzed reply draws from: usable ids, empty ids,
// ids that look positional, and ids that repeat.
var fuzzIDs = []string{"", "a", "b", "call_1", "call_2", "#0", "#1", "#", "#a", " ", "toolu_01", "a"}

// fuzzReply builds a reply from bytes, two bytes a call: the id and the
// tool. Tools are "plain", "gated" (requires confirmation), "failing" and
// "ghost" (not in the prompt).
func fuzzReply(data []byte) *toolgate.AssistantMessage {
	tools := []string{"plain", "gated", "failing", "ghost"}
	args := []string{"", "{}", `{"x":1}`, "{"}
	r := &toolgate.AssistantMessage{}
	for i := 0; i+1 < len(data) && len(r.ToolCalls) < 64; i += 2 {
		id := fuzzIDs[int(data[i])%len(fuzzIDs)]
		if data[i] >= 0xf0 {
			id = "id" + strconv.Itoa(int(data[i]&0x3)) // repeats among long replies
		}
		r.ToolCalls = append(r.ToolCalls, toolgate.ToolCall{
			ID:        id,
			Name:      tools[int(data[i+1])%len(tools)],
			Arguments: args[int(data[i+1]>>2)%len(args)],
		})
	}
	return r
}

func FuzzToolCallKeys(f *testing.F) {
	f.Add([]byte{}, "")
	f.Add([]byte{1, 0}, "")
	f.Add([]byte{1, 0, 2, 1}, "call_9")
	f.Add([]byte{1, 0, 1, 1}, "")                 // duplicated ids
	f.Add([]byte{0, 0, 0, 1, 0, 2}, "")           // empty ids
	f.Add([]byte{5, 0, 6, 0, 7, 0}, "#2")         // ids starting with '#'
	f.Add(make([]byte, 80), "x")                  // a long reply of empty ids
	f.Add([]byte{0xf0, 0, 0xf1, 0, 0xf0, 1}, "a") // repeated generated ids
	f.Add([]byte{0, 0, 0, 1}, "#0")               // an id naming another call's key
	f.Fuzz(func(t *testing.T, data []byte, extra string) {
		r := fuzzReply(data)
		if len(r.ToolCalls) > 0 {
			// One call takes an arbitrary id.
			r.ToolCalls[int(uint(len(extra)))%len(r.ToolCalls)].ID = extra
		}
		before := cloneReply(r)
		keys := r.CallKeys()
		if len(keys) != len(r.ToolCalls) {
			t.Fatalf("got %d keys for %d calls", len(keys), len(r.ToolCalls))
		}
		checkDistinct(t, keys)
		for i, c := range r.ToolCalls {
			unique := true
			for j, d := range r.ToolCalls {
				if j != i && d.ID == c.ID {
					unique = false
				}
			}
			want := "#" + strconv.Itoa(i)
			if unique && c.ID != "" && c.ID[0] != '#' {
				want = c.ID
			}
			if keys[i] != want {
				t.Errorf("call %d (id %q): got key %q, want %q", i, c.ID, keys[i], want)
			}
		}
		if diff := cmp.Diff(before, r); diff != "" {
			t.Errorf("ToolCallKeys changed the reply (-before +after):\n%s", diff)
		}
		// A call is reported as misleading exactly when its id names
		// another call's key.
		var want []string
		for i, c := range r.ToolCalls {
			for j := range keys {
				if j != i && c.ID == keys[j] {
					want = append(want, keys[i])
				}
			}
		}
		if diff := cmp.Diff(want, r.MisleadingCallIDs()); diff != "" {
			t.Errorf("MisleadingCallIDs (-want +got):\n%s", diff)
		}
	})
}

// fuzzDecisions builds decisions from bytes, two bytes a decision: which
// key (one of the reply's, or one naming no call) and which verdict.
func fuzzDecisions(keys []string, data []byte) []toolgate.Decision {
	var ds []toolgate.Decision
	for i := 0; i+1 < len(data) && len(ds) < 80; i += 2 {
		var key string
		switch k := int(data[i]); {
		case k == 0xff:
			key = "#99"
		case k == 0xfe:
			key = "nobody"
		case len(keys) > 0:
			key = keys[k%len(keys)]
		}
		var d toolgate.Decision
		switch data[i+1] % 10 {
		case 0, 1, 2:
			d = toolgate.Allow(key)
		case 3, 4:
			d = toolgate.Deny(key, "")
		case 5:
			d = toolgate.Deny(key, "no "+key)
		case 6:
			d = toolgate.Decision{Key: key} // no verdict
		case 7:
			d = toolgate.Decision{Key: key, Verdict: toolgate.VerdictAllow, Message: "ok"}
		case 8:
			d = toolgate.AllowWithArguments(key, json.RawMessage(fuzzEdits[int(data[i+1]>>4)%len(fuzzEdits)]))
		case 9:
			d = toolgate.Decision{Key: key, Verdict: toolgate.VerdictDeny, Message: "no", Arguments: json.RawMessage(`{"x":2}`)}
		}
		ds = append(ds, d)
	}
	return ds
}

// fuzzEdits are the edited arguments fuzzed decisions draw from: objects
// (compacted and not), and what must be refused.
var fuzzEdits = []string{`{"x":2}`, `{ "x" : [1, {"y":null}] }`, `{}`, `[1]`, `"x"`, `{"x":1,"x":2}`, `{"x":`, "{\"x\":\"\xff\"}", `null`, `{"a":{"b":1},"b":{"a":1}}`, `{"x":"\u003c"}`}

// allDecided returns one well-formed decision bytes pair per call, for
// corpus entries that pass the checks.
func allDecided(calls int, verdict byte) []byte {
	b := make([]byte, 0, 2*calls)
	for i := range calls {
		b = append(b, byte(i), verdict)
	}
	return b
}

func FuzzResume(f *testing.F) {
	f.Add([]byte{2, 0, 4, 1}, allDecided(2, 0), false)                       // a mixed reply, all allowed
	f.Add([]byte{2, 0, 4, 1}, []byte{0, 0, 1, 5}, true)                      // a mixed reply, allowed and denied
	f.Add([]byte{2, 1}, allDecided(1, 0), false)                             // one gated call, allowed
	f.Add([]byte{1, 0, 1, 1, 0, 2}, allDecided(3, 3), false)                 // duplicated ids, all denied
	f.Add([]byte{1, 0, 2, 3}, []byte{0, 0, 1, 3}, false)                     // ghost denied
	f.Add([]byte{1, 0, 2, 3}, allDecided(2, 0), true)                        // ghost allowed: refused
	f.Add([]byte{1, 0, 2, 1}, []byte{0, 0}, false)                           // missing decision
	f.Add([]byte{1, 0}, []byte{0, 0, 0, 0}, false)                           // duplicate decision
	f.Add([]byte{1, 0}, []byte{0, 0, 0xfe, 0}, false)                        // unknown key
	f.Add([]byte{1, 0}, []byte{0, 6}, false)                                 // no verdict
	f.Add([]byte{1, 0}, []byte{0, 7}, false)                                 // message on allow
	f.Add([]byte{}, []byte{}, false)                                         // no calls
	f.Add(make([]byte, 90), allDecided(45, 0), true)                         // long reply
	f.Add([]byte{0, 8, 0, 12, 0, 2}, []byte{0, 0, 1, 0, 2, 0}, false)        // arguments
	f.Add([]byte{0xf0, 0, 0xf0, 1, 0xf1, 2}, allDecided(3, 1), false)        // repeated generated ids
	f.Add([]byte{3, 0, 4, 0, 2, 0}, []byte{2, 3, 1, 0, 0, 0, 0xff, 0}, true) // extra positional key
	f.Add([]byte{1, 1, 2, 0}, []byte{0, 8, 1, 28}, false)                    // edited arguments
	f.Add([]byte{1, 1, 2, 0}, []byte{0, 8, 1, 28}, true)                     // edited arguments, concurrently
	f.Add([]byte{1, 1}, []byte{0, 48}, false)                                // edit that is not an object
	f.Add([]byte{1, 1}, []byte{0, 88}, false)                                // edit with a repeated name
	f.Add([]byte{1, 1}, []byte{0, 9}, false)                                 // edit on a denial
	f.Fuzz(func(t *testing.T, replyBytes, decisionBytes []byte, concurrent bool) {
		r := fuzzReply(replyBytes)
		keys := r.CallKeys()
		ds := fuzzDecisions(keys, decisionBytes)

		var mu sync.Mutex
		runs := map[string]int{}
		seen := map[string]string{} // key -> the arguments its tool received
		count := func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			runs[req.Key]++
			seen[req.Key] = req.Call.Arguments
			if req.Call.Name == "failing" {
				return "", errors.New("failed")
			}
			return "ran " + req.Key, nil
		}
		p := &toolgate.Prompt{Tools: []*toolgate.Tool{
			toolgate.NewTool(toolgate.ToolDefinition{Name: "plain"}, toolgate.ToolMetadata{}, count),
			toolgate.NewTool(toolgate.ToolDefinition{Name: "gated"}, toolgate.ToolMetadata{RequiresConfirmation: true}, count),
			toolgate.NewTool(toolgate.ToolDefinition{Name: "failing"}, toolgate.ToolMetadata{}, count),
		}}
		conc := 1
		if concurrent {
			conc = 3
		}
		m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: conc})
		// Asked which calls awaited a decision, the manager's policy says
		// the gated ones: a decision other than a plain allow on any other
		// call is refused and nothing runs.
		if _, err := m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: r, Decisions: ds}); err == nil {
			byKey := map[string]toolgate.Decision{}
			for _, d := range ds {
				byKey[d.Key] = d
			}
			for i, c := range r.ToolCalls {
				if d := byKey[keys[i]]; c.Name != "gated" && (d.Verdict != toolgate.VerdictAllow || len(d.Arguments) > 0) {
					t.Fatalf("call %q of %s awaited no decision but ran with %+v", keys[i], c.Name, d)
				}
			}
		} else if len(runs) != 0 {
			t.Fatalf("the decisions were refused (%v) but %d tools ran", err, len(runs))
		}
		clear(runs)
		clear(seen)
		// With every call awaiting a decision, the rules are those of
		// CheckDecisions.
		params := &toolgate.ResumeParams{Prompt: p, Reply: r, Decisions: ds, Awaiting: keys}
		checkErr := toolgate.CheckDecisions(p, r, ds)
		res, err := m.Resume(context.Background(), params)
		if checkErr != nil {
			if !errors.Is(checkErr, toolgate.ErrInvalidDecisions) {
				t.Fatalf("CheckDecisions: got %v, want an error matching ErrInvalidDecisions", checkErr)
			}
			if err == nil || err.Error() != checkErr.Error() {
				t.Fatalf("Resume: got %v, want the CheckDecisions error %v", err, checkErr)
			}
			if res != nil || len(runs) != 0 {
				t.Fatalf("decisions were refused but %d tools ran", len(runs))
			}
			return
		}
		if err != nil {
			t.Fatalf("CheckDecisions passed but Resume failed: %v", err)
		}
		if len(res.Message.Results) != len(r.ToolCalls) {
			t.Fatalf("got %d results for %d calls", len(res.Message.Results), len(r.ToolCalls))
		}
		byKey := map[string]toolgate.Decision{}
		for _, d := range ds {
			byKey[d.Key] = d
		}
		for i, c := range r.ToolCalls {
			d, ok := byKey[keys[i]]
			if !ok {
				t.Fatalf("call %d (key %q) has no decision but the checks passed", i, keys[i])
			}
			got := res.Message.Results[i]
			if got.CallID != c.ID || got.Name != c.Name {
				t.Errorf("result %d is for %q/%s, want %q/%s", i, got.CallID, got.Name, c.ID, c.Name)
			}
			switch d.Verdict {
			case toolgate.VerdictAllow:
				args := c.Arguments
				if len(d.Arguments) > 0 {
					args = string(d.Arguments)
					if !json.Valid(d.Arguments) || args[0] != '{' {
						t.Errorf("call %q ran with edited arguments %q that are not an object", keys[i], args)
					}
					if got.EditedArguments != args || !strings.HasPrefix(got.Content, toolgate.EditNote+args+"\n") {
						t.Errorf("edited call %q: got %+v, want the edit %s recorded", keys[i], got, args)
					}
					if seen[keys[i]] != args {
						t.Errorf("edited call %q: the tool received %q, want %q", keys[i], seen[keys[i]], args)
					}
				} else if got.EditedArguments != "" {
					t.Errorf("call %q was not edited but its result records %q", keys[i], got.EditedArguments)
				}
				// Arguments that are not JSON stop the call before the tool.
				want := 1
				if args != "" && !json.Valid([]byte(args)) {
					want = 0
				}
				if runs[keys[i]] != want {
					t.Errorf("allowed call %q (arguments %q) ran %d times, want %d", keys[i], args, runs[keys[i]], want)
				}
				if !got.Status.Ran() {
					t.Errorf("allowed call %q has status %v", keys[i], got.Status)
				}
			case toolgate.VerdictDeny:
				if runs[keys[i]] != 0 {
					t.Errorf("denied call %q ran %d times, want 0", keys[i], runs[keys[i]])
				}
				if got.Status != toolgate.ResultDenied || got.Content != d.Message {
					t.Errorf("denied call %q: got %+v, want status denied and content %q", keys[i], got, d.Message)
				}
			default:
				t.Errorf("decision %+v passed the checks", d)
			}
		}
	})
}

func FuzzUnmarshalMessage(f *testing.F) {
	for _, m := range append(allMessages(), partsMessages()...) {
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	for _, s := range []string{
		`{"role":"user","text":"hi"}`,
		`{"role":"assistant"}`,
		`{"role":"assistant","tool_calls":[]}`,
		`{"role":"assistant","tool_calls":[{"name":"x","arguments":"{\"a\":1}"}]}`,
		`{"role":"tool"}`,
		`{"role":"tool","results":null}`,
		`{"role":"tool","results":[{"name":"x","content":"y","status":"denied"}]}`,
		`{"role":"tool","results":[{"name":"x","status":"nope"}]}`,
		`{"ROLE":"user","TEXT":"shouting"}`,
		`{"role":"user","role":"system","text":"twice"}`,
		`{"role":"user","text":"\ud800"}`,
		`{"role":"robot"}`,
		`{"text":"no role"}`,
		`[]`, `null`, `"user"`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := toolgate.UnmarshalMessage(data)
		if err != nil {
			if !errors.Is(err, toolgate.ErrInvalidMessage) {
				t.Fatalf("got error %v, want one wrapping ErrInvalidMessage", err)
			}
			if m != nil {
				t.Fatalf("got message %v with error %v", m, err)
			}
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", m, err)
		}
		m2, err := toolgate.UnmarshalMessage(b)
		if err != nil {
			t.Fatalf("decoding the re-encoded %s: %v", b, err)
		}
		if diff := cmp.Diff(m, m2, equateEmptyMessages); diff != "" {
			t.Fatalf("round trip through %s (-first +second):\n%s", b, diff)
		}
		b2, err := json.Marshal(m2)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("encoding is not stable: %s then %s (%v)", b, b2, err)
		}
	})
}

func FuzzPromptJSON(f *testing.F) {
	for _, p := range []*toolgate.Prompt{samplePrompt(), {}, {Messages: allMessages()}} {
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	for _, s := range []string{
		`{"messages":[]}`,
		`{"messages":null,"tools":[]}`,
		`{"messages":[{"role":"user","text":"hi"}],"tools":[{"name":"t","metadata":{"requires_confirmation":true}}]}`,
		`{"tools":[{"name":"t","input_schema":{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"]}}]}`,
		`{"tools":[{"name":"t","input_schema":true}]}`,
		`{"tools":[null]}`,
		`{"options":{"temperature":0.1,"stop":[],"parallel_tool_calls":true}}`,
		`{"messages":[{"role":"tool","results":[{"name":"x","content":"","status":"skipped"}]}]}`,
		`null`, `[]`, `{"messages":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p toolgate.Prompt
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		b, err := json.Marshal(&p)
		if err != nil {
			t.Fatalf("Marshal of a decoded prompt: %v", err)
		}
		var p2 toolgate.Prompt
		if err := json.Unmarshal(b, &p2); err != nil {
			t.Fatalf("decoding the re-encoded %s: %v", b, err)
		}
		if diff := cmp.Diff(&p, &p2, toolsByJSON, equateEmptyMessages); diff != "" {
			t.Fatalf("round trip through %s (-first +second):\n%s", b, diff)
		}
		for _, tool := range p2.Tools {
			if _, err := tool.Call(context.Background(), &toolgate.ToolRequest{}); !errors.Is(err, toolgate.ErrNoImplementation) {
				t.Fatalf("a decoded tool ran: %v", err)
			}
		}
	})
}

func FuzzDecisionJSON(f *testing.F) {
	for _, d := range sampleDecisions() {
		b, _ := json.Marshal(d)
		f.Add(b)
	}
	for _, s := range []string{
		`{"key":"k","verdict":"allow","arguments":{"seats":2}}`,
		`{"key":"k","verdict":"allow","arguments":null}`,
		`{"key":"k","verdict":"allow","arguments":{}}`,
		`{"key":"k","verdict":"allow","arguments":[]}`,
		`{"key":"k","verdict":"allow","arguments":"{}"}`,
		`{"key":"k","verdict":"allow","arguments":{"a":1,"a":2}}`,
		`{"key":"k","verdict":"allow","arguments":{"a":{"b":[{"c":1,"\u0063":2}]}}}`,
		`{"key":"k","verdict":"allow","arguments":{"a":"<b>&amp;"}}`,
		`{"key":"k","verdict":"allow","arguments":{"a":1e400}}`,
		`{"key":"k","verdict":"deny","arguments":{"a":1}}`,
		`{"key":"k","verdict":"deny","message":"no","arguments":{}}`,
		`{"key":"k","verdict":"allow","message":"x","arguments":{}}`,
		`{"key":"k","verdict":"allow","arguments":{"a":1},"arguments":{"a":2}}`,
		"{\"key\":\"k\",\"verdict\":\"allow\",\"arguments\":{\"a\":\"\xff\"}}",
		`{"key":"k","verdict":"allow","name":"other"}`,
		`{"key":"k","verdict":"allow","arguments":{` + strings.Repeat(`"a":{`, 50) + `"b":1` + strings.Repeat(`}`, 51) + `}`,
		`null`, `[]`, `{}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d toolgate.Decision
		err := json.Unmarshal(data, &d)
		if err != nil {
			var de *toolgate.DecisionError
			if errors.As(err, &de) && !errors.Is(err, toolgate.ErrInvalidDecisions) {
				t.Fatalf("a DecisionError does not match ErrInvalidDecisions: %v", err)
			}
			return
		}
		switch {
		case d.Verdict != toolgate.VerdictAllow && d.Verdict != toolgate.VerdictDeny:
			t.Fatalf("decoded a decision without a verdict: %+v", d)
		case d.Verdict == toolgate.VerdictDeny && (len(d.Arguments) > 0 || d.Message == ""):
			t.Fatalf("decoded a denial with arguments or without a message: %+v", d)
		case d.Verdict == toolgate.VerdictAllow && d.Message != "":
			t.Fatalf("decoded an allow with a message: %+v", d)
		}
		if len(d.Arguments) > 0 {
			var obj map[string]any
			if err := decodeNumbers(d.Arguments, &obj); err != nil || obj == nil {
				t.Fatalf("decoded arguments %q that are not a JSON object: %v", d.Arguments, err)
			}
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", d, err)
		}
		var d2 toolgate.Decision
		if err := json.Unmarshal(b, &d2); err != nil {
			t.Fatalf("decoding the re-encoded %s: %v", b, err)
		}
		b2, err := json.Marshal(d2)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("encoding is not stable: %s then %s (%v)", b, b2, err)
		}
		if d2.Key != d.Key || d2.Verdict != d.Verdict || d2.Message != d.Message || !jsonEqual(d.Arguments, d2.Arguments) {
			t.Fatalf("round trip through %s: %+v then %+v", b, d, d2)
		}
	})
}

// jsonEqual reports whether a and b hold the same JSON value (both empty
// counts as equal).
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if decodeNumbers(a, &va) != nil || decodeNumbers(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// decodeNumbers decodes data into v, numbers as [json.Number].
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
