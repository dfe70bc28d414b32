package toolgatetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
)

// TestStore runs the conformance tests of a [toolgate.ConversationStore] as
// subtests of t: loading, appending, the optimistic At check, the append
// rules of [github.com/toolgate/toolgate/storekit.ValidateAppend], pauses and their single claim, the
// claim's record and takeover ([github.com/toolgate/toolgate/storekit.ValidateClaim]), calls marked as
// started ([github.com/toolgate/toolgate/storekit.ValidateMark]), and behaviour under concurrent use and
// cancellation, and a reply with parts (reasoning, signatures, opaque
// provider fields) kept byte for byte from a pause to the request that
// resumes it.
//
// newStore is called once per subtest, with the subtest's t, and must
// return a new store holding no conversation; it may register cleanups on
// that t (to close the store, say). A store that is shared between
// processes is tested the same way: the kit uses only the interface.
//
// Messages are compared with [cmp.Diff], treating a nil slice and an empty
// one as equal, and times with [time.Time.Equal].
func TestStore(t *testing.T, newStore func(t *testing.T) toolgate.ConversationStore) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s toolgate.ConversationStore)
	}{
		{"LoadUnknown", testLoadUnknown},
		{"RoundTrip", testRoundTrip},
		{"Conflict", testConflict},
		{"InvalidAppend", testInvalidAppend},
		{"OpenPause", testOpenPause},
		{"PauseBlocksInput", testPauseBlocksInput},
		{"ClaimOnce", testClaimOnce},
		{"ClaimConcurrent", testClaimConcurrent},
		{"ClaimRecord", testClaimRecord},
		{"TakeOver", testTakeOver},
		{"TakeOverConcurrent", testTakeOverConcurrent},
		{"ClaimStarted", testClaimStarted},
		{"MarkStarted", testMarkStarted},
		{"MarkConcurrent", testMarkConcurrent},
		{"Resolve", testResolve},
		{"ResolveAndPauseAgain", testResolveAndPauseAgain},
		{"AppendConcurrent", testAppendConcurrent},
		{"AppendConcurrentRetry", testAppendConcurrentRetry},
		{"Independent", testIndependent},
		{"Canceled", testCanceled},
		{"ResumeParts", testResumeParts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore returned nil")
			}
			tt.run(t, s)
		})
	}
}

// goroutines is how many goroutines the concurrency tests start.
const goroutines = 16

// allKinds returns messages of the four kinds, with the awkward cases a
// store must keep: calls without ids or with duplicated ids, arguments that
// are not JSON, results of every status, and a result with edited
// arguments.
func allKinds() []toolgate.Message {
	return []toolgate.Message{
		&toolgate.SystemMessage{Text: "You are a travel assistant."},
		&toolgate.UserMessage{Text: "Is VX205 on time? \"quoted\", <b>tags</b> & ünïcödé,\nsecond line\ttab"},
		&toolgate.AssistantMessage{Text: "Let me check."},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
			{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
			{Name: "noID", Arguments: `{}`},
			{ID: "dup", Name: "broken", Arguments: `{"flight":`},
			{ID: "dup", Name: "prose", Arguments: `not JSON at all`},
			{ID: "c5", Name: "noArguments"},
			{ID: "c6", Name: "spaced", Arguments: " { \"a\" : [1, 2.50, 1e3] }\n"},
			{ID: "c8", Name: "edited", Arguments: `{"a":[1,2]}`},
		}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "c1", Name: "flightStatus", Content: `{"status":"on time"}`, Status: toolgate.ResultOK},
			{Name: "noID", Content: "tool failed: boom", Status: toolgate.ResultError},
			{CallID: "dup", Name: "broken", Content: "denied by alice: not today", Status: toolgate.ResultDenied},
			{CallID: "dup", Name: "prose", Status: toolgate.ResultSkipped},
			{CallID: "c5", Name: "noArguments", Content: "null", Status: toolgate.ResultOK},
			{CallID: "c6", Name: "spaced", Content: `"ok"`, Status: toolgate.ResultError},
			{CallID: "c8", Name: "edited", Content: toolgate.EditNote + `{"a":[1]}` + "\n" + `"ok"`, Status: toolgate.ResultOK, EditedArguments: `{"a":[1]}`},
		}},
		&toolgate.AssistantMessage{
			Text:      "VX205 is on time; logging that.",
			ToolCalls: []toolgate.ToolCall{{ID: "c7", Name: "log", Arguments: `{"line":"VX205 on time"}`}},
		},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{}},
		&toolgate.UserMessage{},
		&toolgate.SystemMessage{},
	}
}

// user returns a user message.
func user(text string) toolgate.Message { return &toolgate.UserMessage{Text: text} }

// reply returns a reply that calls the named tools, with ids c1, c2, ...
func reply(tools ...string) *toolgate.AssistantMessage {
	m := &toolgate.AssistantMessage{}
	for i, name := range tools {
		m.ToolCalls = append(m.ToolCalls, toolgate.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: name, Arguments: "{}"})
	}
	return m
}

// results answers every call of r with an ok result.
func results(r *toolgate.AssistantMessage) *toolgate.ToolMessage {
	m := &toolgate.ToolMessage{Results: []toolgate.ToolResult{}}
	for _, c := range r.ToolCalls {
		m.Results = append(m.Results, toolgate.ToolResult{CallID: c.ID, Name: c.Name, Content: `"done"`})
	}
	return m
}

var equateEmpty = cmpopts.EquateEmpty()

// claimTime is the time of the kit's claims.
var claimTime = time.Date(2025, 3, 14, 15, 10, 0, 123456789, time.UTC)

// newClaim returns the kit's usual claim on a pause opened by openPause:
// token "token-1", with a decision per call.
func newClaim() *toolgate.Claim {
	return &toolgate.Claim{Token: "token-1", At: claimTime, Decisions: []toolgate.Decision{
		toolgate.Allow("c1"), toolgate.Deny("c2", "not that one"),
	}}
}

// setClaimed sets the claim fields of pr to those of [newClaim].
func setClaimed(pr *toolgate.PauseRecord) {
	c := newClaim()
	pr.Claimed, pr.ClaimedAt, pr.ClaimToken, pr.Decisions = true, c.At, c.Token, c.Decisions
}

func mustAppend(t *testing.T, s toolgate.ConversationStore, id string, p *toolgate.AppendParams) {
	t.Helper()
	if err := s.Append(t.Context(), id, p); err != nil {
		t.Fatalf("Append(%q, At %d): %v", id, p.At, err)
	}
}

func mustLoad(t *testing.T, s toolgate.ConversationStore, id string) *toolgate.Conversation {
	t.Helper()
	c, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	if c == nil {
		t.Fatalf("Load(%q) returned a nil conversation and no error", id)
	}
	if c.ID != id {
		t.Errorf("Load(%q).ID = %q, want %q", id, c.ID, id)
	}
	return c
}

// checkStored loads id and compares its messages and pause with want.
func checkStored(t *testing.T, s toolgate.ConversationStore, id string, wantMsgs []toolgate.Message, wantPause *toolgate.PauseRecord) {
	t.Helper()
	c := mustLoad(t, s, id)
	if diff := cmp.Diff(wantMsgs, c.Messages, equateEmpty); diff != "" {
		t.Errorf("Load(%q) messages mismatch (-want +got):\n%s", id, diff)
	}
	if diff := cmp.Diff(wantPause, c.Pause, equateEmpty); diff != "" {
		t.Errorf("Load(%q) pause mismatch (-want +got):\n%s", id, diff)
	}
}

// checkErr reports an error unless err wraps want.
func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want one wrapping %v", what, err, want)
	}
}

// openPause stores [user, reply with calls] in id with an open pause
// pauseID and returns the stored messages and pause.
func openPause(t *testing.T, s toolgate.ConversationStore, id, pauseID string) ([]toolgate.Message, *toolgate.PauseRecord) {
	t.Helper()
	created := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	msgs := []toolgate.Message{user("book a flight"), reply("search", "book")}
	mustAppend(t, s, id, &toolgate.AppendParams{
		Messages: msgs,
		Pause:    &toolgate.PauseRecord{ID: pauseID, Awaiting: []string{"c2"}, CreatedAt: created},
	})
	return msgs, &toolgate.PauseRecord{ID: pauseID, Index: 1, Awaiting: []string{"c2"}, CreatedAt: created}
}

func testLoadUnknown(t *testing.T, s toolgate.ConversationStore) {
	checkStored(t, s, "never-written", nil, nil)
	mustAppend(t, s, "written", &toolgate.AppendParams{Messages: []toolgate.Message{user("hi")}})
	checkStored(t, s, "never-written", nil, nil)
	checkStored(t, s, "writte", nil, nil)
	checkStored(t, s, "written ", nil, nil)
}

func testRoundTrip(t *testing.T, s toolgate.ConversationStore) {
	msgs := allKinds()

	// All at once.
	mustAppend(t, s, "whole", &toolgate.AppendParams{Messages: msgs})
	checkStored(t, s, "whole", msgs, nil)

	// One per append.
	for i, m := range msgs {
		mustAppend(t, s, "single", &toolgate.AppendParams{At: i, Messages: []toolgate.Message{m}})
	}
	checkStored(t, s, "single", msgs, nil)

	// Appended after the first batch.
	more := []toolgate.Message{user("and tomorrow?"), &toolgate.AssistantMessage{Text: "Also on time."}}
	mustAppend(t, s, "whole", &toolgate.AppendParams{At: len(msgs), Messages: more})
	checkStored(t, s, "whole", append(allKinds(), more...), nil)

	// Every status on its own, in a fresh conversation.
	for i, st := range []toolgate.ResultStatus{toolgate.ResultOK, toolgate.ResultError, toolgate.ResultDenied, toolgate.ResultSkipped, toolgate.ResultRefused, toolgate.ResultExpired, toolgate.ResultInterrupted} {
		m := &toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "x", Name: "t", Content: st.String(), Status: st}}}
		mustAppend(t, s, "statuses", &toolgate.AppendParams{At: i, Messages: []toolgate.Message{m}})
		c := mustLoad(t, s, "statuses")
		if len(c.Messages) != i+1 {
			t.Fatalf("after %d appends Load holds %d messages", i+1, len(c.Messages))
		}
		if diff := cmp.Diff(toolgate.Message(m), c.Messages[i], equateEmpty); diff != "" {
			t.Errorf("status %v mismatch (-want +got):\n%s", st, diff)
		}
	}
}

func testConflict(t *testing.T, s toolgate.ConversationStore) {
	stored := []toolgate.Message{user("one"), &toolgate.AssistantMessage{Text: "two"}}
	mustAppend(t, s, "conv", &toolgate.AppendParams{Messages: stored})
	for _, at := range []int{0, 1, 3, 100, -1} {
		err := s.Append(t.Context(), "conv", &toolgate.AppendParams{At: at, Messages: []toolgate.Message{user("late")}})
		checkErr(t, fmt.Sprintf("Append at %d to a conversation of 2", at), err, toolgate.ErrConflict)
	}
	checkStored(t, s, "conv", stored, nil)

	err := s.Append(t.Context(), "new", &toolgate.AppendParams{At: 1, Messages: []toolgate.Message{user("late")}})
	checkErr(t, "Append at 1 to an unknown conversation", err, toolgate.ErrConflict)
	checkStored(t, s, "new", nil, nil)

	// The stored count is still right: the next append at 2 works.
	mustAppend(t, s, "conv", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{user("three")}})
	checkStored(t, s, "conv", append(stored, user("three")), nil)
}

func testInvalidAppend(t *testing.T, s toolgate.ConversationStore) {
	pause := &toolgate.PauseRecord{ID: "p1", Awaiting: []string{"c1"}}
	tests := []struct {
		name string
		id   string
		p    func(at int) *toolgate.AppendParams
	}{
		{"nil params", "conv", func(int) *toolgate.AppendParams { return nil }},
		{"nil messages", "conv", func(at int) *toolgate.AppendParams { return &toolgate.AppendParams{At: at} }},
		{"empty messages", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{}}
		}},
		{"nil message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{user("x"), nil}}
		}},
		{"nil system message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{(*toolgate.SystemMessage)(nil)}}
		}},
		{"nil user message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{(*toolgate.UserMessage)(nil)}}
		}},
		{"nil assistant message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{user("x"), (*toolgate.AssistantMessage)(nil)}}
		}},
		{"nil tool message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{(*toolgate.ToolMessage)(nil)}}
		}},
		{"empty id", "", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: 0, Messages: []toolgate.Message{user("x")}}
		}},
		{"pause on a user message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{user("x")}, Pause: pause}
		}},
		{"pause on a reply without calls", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{&toolgate.AssistantMessage{Text: "x"}}, Pause: pause}
		}},
		{"pause on a tool message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{reply("a"), results(reply("a"))}, Pause: pause}
		}},
		{"pause not on the last message", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{reply("a"), user("x")}, Pause: pause}
		}},
		{"pause without id", "conv", func(at int) *toolgate.AppendParams {
			return &toolgate.AppendParams{At: at, Messages: []toolgate.Message{reply("a")}, Pause: &toolgate.PauseRecord{Awaiting: []string{"c1"}}}
		}},
	}
	stored := []toolgate.Message{user("hello")}
	mustAppend(t, s, "existing", &toolgate.AppendParams{Messages: stored})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Once on a conversation that exists, once on a new one.
			for _, target := range []struct {
				id string
				at int
			}{{"existing", 1}, {"new", 0}} {
				id := target.id
				if tt.id == "" {
					id = ""
				}
				err := s.Append(t.Context(), id, tt.p(target.at))
				checkErr(t, fmt.Sprintf("Append(%q)", id), err, toolgate.ErrInvalidAppend)
			}
			checkStored(t, s, "existing", stored, nil)
			checkStored(t, s, "new", nil, nil)
			checkStored(t, s, "", nil, nil)
		})
	}
}

func testOpenPause(t *testing.T, s toolgate.ConversationStore) {
	t.Run("fields", func(t *testing.T) {
		created := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))
		first := []toolgate.Message{&toolgate.SystemMessage{Text: "be brief"}, user("book VX205")}
		mustAppend(t, s, "kept", &toolgate.AppendParams{Messages: first})
		r := reply("search", "book", "pay")
		mustAppend(t, s, "kept", &toolgate.AppendParams{
			At:       2,
			Messages: []toolgate.Message{&toolgate.AssistantMessage{Text: "searching"}, r},
			// Index and the claim are set by the store.
			Pause: &toolgate.PauseRecord{ID: "p1", Index: 42, Awaiting: []string{"c2", "c3"}, Claimed: true, CreatedAt: created,
				ClaimedAt: created, ClaimToken: "forged", Decisions: []toolgate.Decision{toolgate.Allow("c2")}, Started: []string{"c2"}},
		})
		want := &toolgate.PauseRecord{ID: "p1", Index: 3, Awaiting: []string{"c2", "c3"}, CreatedAt: created}
		checkStored(t, s, "kept", append(first, &toolgate.AssistantMessage{Text: "searching"}, r), want)
	})

	t.Run("created now", func(t *testing.T) {
		before := time.Now()
		mustAppend(t, s, "now", &toolgate.AppendParams{
			Messages: []toolgate.Message{user("pay"), reply("pay")},
			Pause:    &toolgate.PauseRecord{ID: "p1"},
		})
		after := time.Now()
		c := mustLoad(t, s, "now")
		if c.Pause == nil {
			t.Fatal("Load: no pause after opening one")
		}
		got := c.Pause.CreatedAt
		// Stores may keep coarser times; allow a second either side.
		if got.IsZero() || got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)) {
			t.Errorf("Pause.CreatedAt = %v, want the time of the append (between %v and %v)", got, before, after)
		}
		if c.Pause.Index != 1 || c.Pause.ID != "p1" || c.Pause.Claimed || len(c.Pause.Awaiting) != 0 {
			t.Errorf("Pause = %+v, want id p1, index 1, unclaimed, awaiting nothing", c.Pause)
		}
	})

	t.Run("loaded copy", func(t *testing.T) {
		msgs, want := openPause(t, s, "copy", "p1")
		c := mustLoad(t, s, "copy")
		if c.Pause == nil {
			t.Fatal("Load: no pause after opening one")
		}
		// Changing what Load returned must not change the store.
		c.Pause.Claimed = true
		c.Pause.Started = append(c.Pause.Started, "changed")
		c.Pause.Awaiting[0] = "changed"
		c.Pause.Index = 7
		checkStored(t, s, "copy", msgs, want)
		if err := s.ClaimPause(t.Context(), "copy", "p1", newClaim()); err != nil {
			t.Errorf("ClaimPause after changing a loaded copy: %v", err)
		}
	})
}

func testPauseBlocksInput(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	tries := []struct {
		name string
		p    *toolgate.AppendParams
	}{
		{"user input", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{user("hello?")}}},
		{"tool message without Resolves", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{results(reply("search", "book"))}}},
		{"another pause", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{reply("x")}, Pause: &toolgate.PauseRecord{ID: "p2"}}},
	}
	for _, claimed := range []bool{false, true} {
		if claimed {
			if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
				t.Fatalf("ClaimPause: %v", err)
			}
			setClaimed(pause)
		}
		for _, tt := range tries {
			err := s.Append(t.Context(), "conv", tt.p)
			checkErr(t, fmt.Sprintf("%s (claimed %v)", tt.name, claimed), err, toolgate.ErrPauseOpen)
		}
		checkStored(t, s, "conv", msgs, pause)
	}
}

func testClaimOnce(t *testing.T, s toolgate.ConversationStore) {
	mustAppend(t, s, "plain", &toolgate.AppendParams{Messages: []toolgate.Message{user("hi")}})
	msgs, pause := openPause(t, s, "conv", "p1")

	for _, c := range []struct{ id, pauseID, what string }{
		{"unknown", "p1", "unknown conversation"},
		{"plain", "p1", "conversation without a pause"},
		{"conv", "p2", "wrong pause id"},
		{"conv", "", "empty pause id"},
	} {
		err := s.ClaimPause(t.Context(), c.id, c.pauseID, newClaim())
		checkErr(t, "ClaimPause on "+c.what, err, toolgate.ErrNoOpenPause)
	}
	checkStored(t, s, "conv", msgs, pause)

	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("first ClaimPause: %v", err)
	}
	setClaimed(pause)
	checkStored(t, s, "conv", msgs, pause)

	err := s.ClaimPause(t.Context(), "conv", "p1", newClaim())
	checkErr(t, "second ClaimPause", err, toolgate.ErrNoOpenPause)
	checkStored(t, s, "conv", msgs, pause)
	checkStored(t, s, "unknown", nil, nil)
}

func testClaimConcurrent(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	ctx := t.Context()
	errs := make([]error, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			<-start
			errs[i] = s.ClaimPause(ctx, "conv", "p1", newClaim())
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, toolgate.ErrNoOpenPause):
			t.Errorf("claim %d: got error %v, want nil or one wrapping %v", i, err, toolgate.ErrNoOpenPause)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent claims succeeded, want exactly 1", won, goroutines)
	}
	setClaimed(pause)
	checkStored(t, s, "conv", msgs, pause)
}

func testResolve(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	r := msgs[1].(*toolgate.AssistantMessage)
	answer := results(r)

	err := s.Append(t.Context(), "conv", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{answer}, Resolves: "p1"})
	checkErr(t, "resolving an unclaimed pause", err, toolgate.ErrInvalidAppend)
	checkStored(t, s, "conv", msgs, pause)

	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	setClaimed(pause)

	tests := []struct {
		name string
		p    *toolgate.AppendParams
		want error
	}{
		{"another pause id", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{answer}, Resolves: "p2"}, toolgate.ErrNoOpenPause},
		{"starting with a user message", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{user("x"), answer}, Resolves: "p1"}, toolgate.ErrInvalidAppend},
		{"starting with a reply", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{reply("x")}, Resolves: "p1"}, toolgate.ErrInvalidAppend},
		{"nil tool message", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{(*toolgate.ToolMessage)(nil)}, Resolves: "p1"}, toolgate.ErrInvalidAppend},
		{"stale At", &toolgate.AppendParams{At: 1, Messages: []toolgate.Message{answer}, Resolves: "p1"}, toolgate.ErrConflict},
	}
	for _, tt := range tests {
		err := s.Append(t.Context(), "conv", tt.p)
		checkErr(t, "resolution "+tt.name, err, tt.want)
	}
	checkStored(t, s, "conv", msgs, pause)

	final := &toolgate.AssistantMessage{Text: "Booked."}
	mustAppend(t, s, "conv", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{answer, final}, Resolves: "p1"})
	msgs = append(msgs, answer, final)
	checkStored(t, s, "conv", msgs, nil)

	err = s.ClaimPause(t.Context(), "conv", "p1", newClaim())
	checkErr(t, "ClaimPause of a resolved pause", err, toolgate.ErrNoOpenPause)
	err = s.Append(t.Context(), "conv", &toolgate.AppendParams{At: 4, Messages: []toolgate.Message{answer}, Resolves: "p1"})
	checkErr(t, "resolving a resolved pause", err, toolgate.ErrNoOpenPause)
	checkStored(t, s, "conv", msgs, nil)

	mustAppend(t, s, "conv", &toolgate.AppendParams{At: 4, Messages: []toolgate.Message{user("thanks")}})
	checkStored(t, s, "conv", append(msgs, user("thanks")), nil)

	// Resolving in a conversation that never paused.
	mustAppend(t, s, "plain", &toolgate.AppendParams{Messages: []toolgate.Message{user("hi")}})
	err = s.Append(t.Context(), "plain", &toolgate.AppendParams{At: 1, Messages: []toolgate.Message{answer}, Resolves: "p1"})
	checkErr(t, "resolving where nothing paused", err, toolgate.ErrNoOpenPause)
	checkStored(t, s, "plain", []toolgate.Message{user("hi")}, nil)
}

func testResolveAndPauseAgain(t *testing.T, s toolgate.ConversationStore) {
	msgs, _ := openPause(t, s, "conv", "p1")
	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	answer := results(msgs[1].(*toolgate.AssistantMessage))
	next := reply("pay")
	mustAppend(t, s, "conv", &toolgate.AppendParams{
		At:       2,
		Messages: []toolgate.Message{answer, next},
		Resolves: "p1",
		Pause:    &toolgate.PauseRecord{ID: "p2", Awaiting: []string{"c1"}, CreatedAt: time.Unix(1700000000, 0)},
	})
	msgs = append(msgs, answer, next)
	checkStored(t, s, "conv", msgs, &toolgate.PauseRecord{ID: "p2", Index: 3, Awaiting: []string{"c1"}, CreatedAt: time.Unix(1700000000, 0)})

	err := s.ClaimPause(t.Context(), "conv", "p1", newClaim())
	checkErr(t, "ClaimPause of the resolved pause", err, toolgate.ErrNoOpenPause)
	err = s.Append(t.Context(), "conv", &toolgate.AppendParams{At: 4, Messages: []toolgate.Message{user("x")}})
	checkErr(t, "input while the new pause is open", err, toolgate.ErrPauseOpen)
	if err := s.ClaimPause(t.Context(), "conv", "p2", newClaim()); err != nil {
		t.Errorf("ClaimPause of the new pause: %v", err)
	}
}

func testAppendConcurrent(t *testing.T, s toolgate.ConversationStore) {
	first := []toolgate.Message{user("start")}
	mustAppend(t, s, "conv", &toolgate.AppendParams{Messages: first})
	ctx := t.Context()
	errs := make([]error, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			<-start
			errs[i] = s.Append(ctx, "conv", &toolgate.AppendParams{At: 1, Messages: []toolgate.Message{
				user(fmt.Sprintf("writer %d", i)),
				&toolgate.AssistantMessage{Text: fmt.Sprintf("reply %d", i)},
			}})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("appends %d and %d at the same At both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, toolgate.ErrConflict):
			t.Errorf("append %d: got error %v, want nil or one wrapping %v", i, err, toolgate.ErrConflict)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d concurrent appends succeeded", goroutines)
	}
	checkStored(t, s, "conv", append(first,
		user(fmt.Sprintf("writer %d", winner)),
		&toolgate.AssistantMessage{Text: fmt.Sprintf("reply %d", winner)},
	), nil)
}

func testAppendConcurrentRetry(t *testing.T, s toolgate.ConversationStore) {
	// Each writer appends its messages one at a time, reloading and retrying
	// on conflict; in the end every message is stored exactly once, and each
	// writer's messages are in its order.
	const writers, each, maxTries = 8, 3, 1000
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for k := range each {
				m := user(fmt.Sprintf("%d/%d", w, k))
				for try := 0; ; try++ {
					if try == maxTries {
						errs[w] = fmt.Errorf("message %d: no append succeeded in %d tries", k, maxTries)
						return
					}
					c, err := s.Load(ctx, "conv")
					if err != nil {
						errs[w] = err
						return
					}
					err = s.Append(ctx, "conv", &toolgate.AppendParams{At: len(c.Messages), Messages: []toolgate.Message{m}})
					if err == nil {
						break
					}
					if !errors.Is(err, toolgate.ErrConflict) {
						errs[w] = fmt.Errorf("message %d: %w", k, err)
						return
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", w, err)
		}
	}
	c := mustLoad(t, s, "conv")
	if len(c.Messages) != writers*each {
		t.Fatalf("Load holds %d messages, want %d", len(c.Messages), writers*each)
	}
	next := make([]int, writers)
	for i, m := range c.Messages {
		u, ok := m.(*toolgate.UserMessage)
		if !ok {
			t.Fatalf("message %d is a %T, want a user message", i, m)
		}
		var w, k int
		if _, err := fmt.Sscanf(u.Text, "%d/%d", &w, &k); err != nil || w < 0 || w >= writers {
			t.Fatalf("message %d has text %q, not one the writers sent", i, u.Text)
		}
		if k != next[w] {
			t.Errorf("message %d is %q, want %d/%d", i, u.Text, w, next[w])
		}
		next[w] = k + 1
	}
}

func testIndependent(t *testing.T, s toolgate.ConversationStore) {
	// Ids that differ only slightly, or that would break naive quoting.
	ids := []string{"a", "A", "a ", " a", "a/b", "a%", "a_", "a'; DROP TABLE messages; --", "ü"}
	for i, id := range ids {
		mustAppend(t, s, id, &toolgate.AppendParams{Messages: []toolgate.Message{user(fmt.Sprintf("conversation %d", i))}})
	}
	for i, id := range ids {
		checkStored(t, s, id, []toolgate.Message{user(fmt.Sprintf("conversation %d", i))}, nil)
	}

	// A pause in one conversation does not block another, and pauses with
	// the same id in two conversations are claimed separately.
	msgsX, pauseX := openPause(t, s, "x", "p1")
	msgsY, pauseY := openPause(t, s, "y", "p1")
	mustAppend(t, s, "a", &toolgate.AppendParams{At: 1, Messages: []toolgate.Message{user("still open")}})
	if err := s.ClaimPause(t.Context(), "x", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause(x): %v", err)
	}
	setClaimed(pauseX)
	checkStored(t, s, "x", msgsX, pauseX)
	checkStored(t, s, "y", msgsY, pauseY)
	if err := s.ClaimPause(t.Context(), "y", "p1", newClaim()); err != nil {
		t.Errorf("ClaimPause(y) after claiming x: %v", err)
	}

	answer := results(msgsX[1].(*toolgate.AssistantMessage))
	mustAppend(t, s, "x", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{answer}, Resolves: "p1"})
	setClaimed(pauseY)
	checkStored(t, s, "x", append(msgsX, answer), nil)
	checkStored(t, s, "y", msgsY, pauseY)
	checkStored(t, s, "a", []toolgate.Message{user("conversation 0"), user("still open")}, nil)
	checkStored(t, s, "A", []toolgate.Message{user("conversation 1")}, nil)
}

func testCanceled(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	if _, err := s.Load(ctx, "conv"); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a canceled context: got error %v, want one wrapping %v", err, context.Canceled)
	}
	err := s.Append(ctx, "other", &toolgate.AppendParams{Messages: []toolgate.Message{user("x")}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a canceled context: got error %v, want one wrapping %v", err, context.Canceled)
	}
	if err := s.ClaimPause(ctx, "conv", "p1", newClaim()); !errors.Is(err, context.Canceled) {
		t.Errorf("ClaimPause with a canceled context: got error %v, want one wrapping %v", err, context.Canceled)
	}
	checkStored(t, s, "other", nil, nil)
	checkStored(t, s, "conv", msgs, pause)
	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Errorf("ClaimPause after a canceled one: %v", err)
	}
}

func testClaimRecord(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	for _, c := range []struct {
		what  string
		claim *toolgate.Claim
	}{
		{"nil claim", nil},
		{"empty token", &toolgate.Claim{At: claimTime}},
	} {
		err := s.ClaimPause(t.Context(), "conv", "p1", c.claim)
		checkErr(t, "ClaimPause with "+c.what, err, toolgate.ErrInvalidAppend)
	}
	checkStored(t, s, "conv", msgs, pause)

	c := newClaim()
	if err := s.ClaimPause(t.Context(), "conv", "p1", c); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	// The store keeps its own copy of the decisions.
	c.Decisions[0] = toolgate.Deny("c1", "")
	setClaimed(pause)
	checkStored(t, s, "conv", msgs, pause)
	loaded := mustLoad(t, s, "conv")
	loaded.Pause.Decisions[1] = toolgate.Allow("c2")
	checkStored(t, s, "conv", msgs, pause)

	// A claim without decisions (an expiry) and without a time.
	msgs, pause = openPause(t, s, "expiry", "p1")
	before := time.Now()
	if err := s.ClaimPause(t.Context(), "expiry", "p1", &toolgate.Claim{Token: "expire"}); err != nil {
		t.Fatalf("ClaimPause without decisions: %v", err)
	}
	after := time.Now()
	got := mustLoad(t, s, "expiry").Pause
	if got == nil {
		t.Fatal("Load: no pause after claiming it")
	}
	if at := got.ClaimedAt; at.Before(before.Add(-time.Second)) || at.After(after.Add(time.Second)) {
		t.Errorf("ClaimedAt = %v, want the time of the claim (between %v and %v)", at, before, after)
	}
	pause.Claimed, pause.ClaimedAt, pause.ClaimToken = true, got.ClaimedAt, "expire"
	checkStored(t, s, "expiry", msgs, pause)

	// Resolving forgets the claim: the next pause starts unclaimed.
	answer := results(msgs[1].(*toolgate.AssistantMessage))
	next := reply("pay")
	mustAppend(t, s, "expiry", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{answer, next}, Resolves: "p1",
		Pause: &toolgate.PauseRecord{ID: "p2", Awaiting: []string{"c1"}, CreatedAt: claimTime}})
	checkStored(t, s, "expiry", append(msgs, answer, next), &toolgate.PauseRecord{ID: "p2", Index: 3, Awaiting: []string{"c1"}, CreatedAt: claimTime})
	err := s.MarkStarted(t.Context(), "expiry", "p2", "expire", []string{"c1"})
	checkErr(t, "MarkStarted with the token of the resolved pause", err, toolgate.ErrClaimLost)
}

func testTakeOver(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	later := claimTime.Add(time.Hour)
	takeOver := func(token, supersedes string) *toolgate.Claim {
		return &toolgate.Claim{Token: token, At: later, Decisions: newClaim().Decisions, TakeOver: true, Supersedes: supersedes}
	}
	err := s.ClaimPause(t.Context(), "conv", "p1", takeOver("token-2", ""))
	checkErr(t, "taking over an unclaimed pause", err, toolgate.ErrNoOpenPause)
	checkStored(t, s, "conv", msgs, pause)

	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	if err := s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c1"}); err != nil {
		t.Fatalf("MarkStarted: %v", err)
	}
	setClaimed(pause)
	pause.Started = []string{"c1"}

	for _, c := range []struct {
		what        string
		conv, pause string
		claim       *toolgate.Claim
		want        error
	}{
		{"with another token", "conv", "p1", takeOver("token-2", "token-0"), toolgate.ErrClaimLost},
		{"with no token", "conv", "p1", takeOver("token-2", ""), toolgate.ErrClaimLost},
		{"keeping the token", "conv", "p1", takeOver("token-1", "token-1"), toolgate.ErrInvalidAppend},
		{"without a new token", "conv", "p1", takeOver("", "token-1"), toolgate.ErrInvalidAppend},
		{"of another pause", "conv", "p2", takeOver("token-2", "token-1"), toolgate.ErrNoOpenPause},
		{"in another conversation", "other", "p1", takeOver("token-2", "token-1"), toolgate.ErrNoOpenPause},
	} {
		err := s.ClaimPause(t.Context(), c.conv, c.pause, c.claim)
		checkErr(t, "takeover "+c.what, err, c.want)
	}
	checkStored(t, s, "conv", msgs, pause)

	if err := s.ClaimPause(t.Context(), "conv", "p1", takeOver("token-2", "token-1")); err != nil {
		t.Fatalf("takeover: %v", err)
	}
	pause.ClaimedAt, pause.ClaimToken = later, "token-2"
	checkStored(t, s, "conv", msgs, pause)

	// The superseded claimant can start nothing more; the new one can.
	err = s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c2"})
	checkErr(t, "MarkStarted with the superseded token", err, toolgate.ErrClaimLost)
	err = s.ClaimPause(t.Context(), "conv", "p1", takeOver("token-3", "token-1"))
	checkErr(t, "a second takeover of the superseded claim", err, toolgate.ErrClaimLost)
	if err := s.MarkStarted(t.Context(), "conv", "p1", "token-2", []string{"c2"}); err != nil {
		t.Fatalf("MarkStarted with the new token: %v", err)
	}
	pause.Started = []string{"c1", "c2"}
	checkStored(t, s, "conv", msgs, pause)
}

func testTakeOverConcurrent(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	ctx := t.Context()
	errs := make([]error, goroutines)
	var markErr error
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			<-start
			errs[i] = s.ClaimPause(ctx, "conv", "p1", &toolgate.Claim{
				Token: fmt.Sprintf("recovery-%d", i), At: claimTime.Add(time.Hour), TakeOver: true, Supersedes: "token-1", Decisions: newClaim().Decisions,
			})
		})
	}
	// The old claimant races the takeovers to start a call.
	wg.Go(func() {
		<-start
		markErr = s.MarkStarted(ctx, "conv", "p1", "token-1", []string{"c1"})
	})
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("takeovers %d and %d of the same claim both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, toolgate.ErrClaimLost):
			t.Errorf("takeover %d: got error %v, want nil or one wrapping %v", i, err, toolgate.ErrClaimLost)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d concurrent takeovers succeeded", goroutines)
	}
	setClaimed(pause)
	pause.ClaimedAt, pause.ClaimToken = claimTime.Add(time.Hour), fmt.Sprintf("recovery-%d", winner)
	switch {
	case markErr == nil:
		// The mark came first: the takeover kept it.
		pause.Started = []string{"c1"}
	case !errors.Is(markErr, toolgate.ErrClaimLost):
		t.Errorf("MarkStarted racing the takeovers: got error %v, want nil or one wrapping %v", markErr, toolgate.ErrClaimLost)
	}
	checkStored(t, s, "conv", msgs, pause)
}

// testClaimStarted checks a claim that records its first calls as started
// in the same write.
func testClaimStarted(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	withStarted := func(keys ...string) *toolgate.Claim {
		c := newClaim()
		c.Started = keys
		return c
	}
	for _, c := range []struct {
		what  string
		claim *toolgate.Claim
	}{
		{"an empty started key", withStarted("c1", "")},
		{"a started key twice", withStarted("c1", "c1")},
		{"a takeover starting calls", &toolgate.Claim{Token: "token-2", TakeOver: true, Supersedes: "token-1", Started: []string{"c1"}}},
	} {
		err := s.ClaimPause(t.Context(), "conv", "p1", c.claim)
		checkErr(t, "ClaimPause with "+c.what, err, toolgate.ErrInvalidAppend)
	}
	checkStored(t, s, "conv", msgs, pause)

	c := withStarted("c1", "ü'; --")
	if err := s.ClaimPause(t.Context(), "conv", "p1", c); err != nil {
		t.Fatalf("ClaimPause with started keys: %v", err)
	}
	c.Started[0] = "changed" // the store keeps its own copy
	setClaimed(pause)
	pause.Started = []string{"c1", "ü'; --"}
	checkStored(t, s, "conv", msgs, pause)

	// A second claim fails, and starts nothing.
	err := s.ClaimPause(t.Context(), "conv", "p1", withStarted("c2"))
	checkErr(t, "a second claim with started keys", err, toolgate.ErrNoOpenPause)
	// The keys count as started: marking one again is refused.
	err = s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c1"})
	checkErr(t, "MarkStarted of a key the claim started", err, toolgate.ErrInvalidAppend)
	checkStored(t, s, "conv", msgs, pause)
	if err := s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c2"}); err != nil {
		t.Fatalf("MarkStarted after a claim with started keys: %v", err)
	}
	pause.Started = append(pause.Started, "c2")
	checkStored(t, s, "conv", msgs, pause)

	// A takeover keeps them.
	if err := s.ClaimPause(t.Context(), "conv", "p1", &toolgate.Claim{Token: "token-2", At: claimTime, TakeOver: true, Supersedes: "token-1", Decisions: newClaim().Decisions}); err != nil {
		t.Fatalf("takeover: %v", err)
	}
	pause.ClaimToken = "token-2"
	checkStored(t, s, "conv", msgs, pause)
}

func testMarkStarted(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	err := s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c1"})
	checkErr(t, "MarkStarted on an unclaimed pause", err, toolgate.ErrClaimLost)
	checkStored(t, s, "conv", msgs, pause)
	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	setClaimed(pause)

	for _, c := range []struct {
		what               string
		conv, pause, token string
		keys               []string
		want               error
	}{
		{"another token", "conv", "p1", "token-2", []string{"c1"}, toolgate.ErrClaimLost},
		{"another pause", "conv", "p2", "token-1", []string{"c1"}, toolgate.ErrClaimLost},
		{"an unknown conversation", "unknown", "p1", "token-1", []string{"c1"}, toolgate.ErrClaimLost},
		{"no token", "conv", "p1", "", []string{"c1"}, toolgate.ErrInvalidAppend},
		{"no keys", "conv", "p1", "token-1", nil, toolgate.ErrInvalidAppend},
		{"an empty key", "conv", "p1", "token-1", []string{"c1", ""}, toolgate.ErrInvalidAppend},
		{"a key twice", "conv", "p1", "token-1", []string{"c1", "c1"}, toolgate.ErrInvalidAppend},
	} {
		err := s.MarkStarted(t.Context(), c.conv, c.pause, c.token, c.keys)
		checkErr(t, "MarkStarted with "+c.what, err, c.want)
	}
	checkStored(t, s, "conv", msgs, pause)

	// Keys round-trip in the order recorded, whatever they look like.
	keys := []string{"c2", "#1", "ü'; --", "a b"}
	if err := s.MarkStarted(t.Context(), "conv", "p1", "token-1", keys[:1]); err != nil {
		t.Fatalf("MarkStarted: %v", err)
	}
	if err := s.MarkStarted(t.Context(), "conv", "p1", "token-1", keys[1:]); err != nil {
		t.Fatalf("MarkStarted of three keys: %v", err)
	}
	pause.Started = keys
	checkStored(t, s, "conv", msgs, pause)

	// A key already started is refused, and with it the whole batch.
	err = s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c9", "#1"})
	checkErr(t, "MarkStarted of a started key", err, toolgate.ErrInvalidAppend)
	checkStored(t, s, "conv", msgs, pause)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.MarkStarted(ctx, "conv", "p1", "token-1", []string{"c9"}); !errors.Is(err, context.Canceled) {
		t.Errorf("MarkStarted with a canceled context: got error %v, want one wrapping %v", err, context.Canceled)
	}
	checkStored(t, s, "conv", msgs, pause)

	// Resolving ends the claim.
	mustAppend(t, s, "conv", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{results(msgs[1].(*toolgate.AssistantMessage))}, Resolves: "p1"})
	err = s.MarkStarted(t.Context(), "conv", "p1", "token-1", []string{"c9"})
	checkErr(t, "MarkStarted after the pause was resolved", err, toolgate.ErrClaimLost)
}

func testMarkConcurrent(t *testing.T, s toolgate.ConversationStore) {
	msgs, pause := openPause(t, s, "conv", "p1")
	if err := s.ClaimPause(t.Context(), "conv", "p1", newClaim()); err != nil {
		t.Fatalf("ClaimPause: %v", err)
	}
	ctx := t.Context()
	// Every goroutine marks its own key, and all of them one shared key.
	own := make([]error, goroutines)
	shared := make([]error, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			<-start
			own[i] = s.MarkStarted(ctx, "conv", "p1", "token-1", []string{fmt.Sprintf("k%02d", i)})
			shared[i] = s.MarkStarted(ctx, "conv", "p1", "token-1", []string{"shared"})
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i := range goroutines {
		if own[i] != nil {
			t.Errorf("MarkStarted of key k%02d: %v", i, own[i])
		}
		switch err := shared[i]; {
		case err == nil:
			won++
		case !errors.Is(err, toolgate.ErrInvalidAppend):
			t.Errorf("MarkStarted of the shared key: got error %v, want nil or one wrapping %v", err, toolgate.ErrInvalidAppend)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent marks of one key succeeded, want exactly 1", won, goroutines)
	}
	c := mustLoad(t, s, "conv")
	if c.Pause == nil {
		t.Fatal("Load: the pause is gone")
	}
	want := []string{"shared"}
	for i := range goroutines {
		want = append(want, fmt.Sprintf("k%02d", i))
	}
	got := slices.Sorted(slices.Values(c.Pause.Started))
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("started keys mismatch (-want +got):\n%s", diff)
	}
	setClaimed(pause)
	pause.Started = c.Pause.Started
	checkStored(t, s, "conv", msgs, pause)
}

// OpenPauseID returns the id of the open pause of conversation id in c's
// store, or "" when it has none (a resumption with "" then fails with
// [toolgate.ErrNoOpenPause], as one for a pause that is gone does). It
// fails tb when the conversation cannot be loaded.
func OpenPauseID(tb testing.TB, c *toolgate.Client, id string) string {
	tb.Helper()
	conv, err := c.Store().Load(tb.Context(), id)
	if err != nil {
		tb.Fatalf("loading conversation %q: %v", id, err)
	}
	if conv.Pause == nil {
		return ""
	}
	return conv.Pause.ID
}
