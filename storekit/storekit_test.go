package storekit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storekit"
)

var reply = &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "a", Name: "book", Arguments: "{}"}}}

func TestValidateAppend(t *testing.T) {
	open := &toolgate.PauseRecord{ID: "p1", Index: 1, Awaiting: []string{"a"}}
	claimed := &toolgate.PauseRecord{ID: "p1", Index: 1, Awaiting: []string{"a"}, Claimed: true, ClaimToken: "t"}
	user := []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}
	tool := []toolgate.Message{&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "a", Name: "book"}}}}
	for _, tc := range []struct {
		name  string
		id    string
		n     int
		pause *toolgate.PauseRecord
		p     *toolgate.AppendParams
		want  error
	}{
		{"ok", "c", 0, nil, &toolgate.AppendParams{Messages: user}, nil},
		{"empty id", "", 0, nil, &toolgate.AppendParams{Messages: user}, toolgate.ErrInvalidAppend},
		{"nil params", "c", 0, nil, nil, toolgate.ErrInvalidAppend},
		{"nil message", "c", 0, nil, &toolgate.AppendParams{Messages: []toolgate.Message{nil}}, toolgate.ErrInvalidAppend},
		{"stale", "c", 2, nil, &toolgate.AppendParams{At: 1, Messages: user}, toolgate.ErrConflict},
		{"pause open", "c", 2, open, &toolgate.AppendParams{At: 2, Messages: user}, toolgate.ErrPauseOpen},
		{"resolve unclaimed", "c", 2, open, &toolgate.AppendParams{At: 2, Messages: tool, Resolves: "p1"}, toolgate.ErrInvalidAppend},
		{"resolve other", "c", 2, claimed, &toolgate.AppendParams{At: 2, Messages: tool, Resolves: "p2"}, toolgate.ErrNoOpenPause},
		{"resolve with user", "c", 2, claimed, &toolgate.AppendParams{At: 2, Messages: user, Resolves: "p1"}, toolgate.ErrInvalidAppend},
		{"resolve", "c", 2, claimed, &toolgate.AppendParams{At: 2, Messages: tool, Resolves: "p1"}, nil},
		{"pause on text", "c", 0, nil, &toolgate.AppendParams{Messages: user, Pause: &toolgate.PauseRecord{ID: "p"}}, toolgate.ErrInvalidAppend},
		{"pause without id", "c", 0, nil, &toolgate.AppendParams{Messages: []toolgate.Message{reply}, Pause: &toolgate.PauseRecord{}}, toolgate.ErrInvalidAppend},
		{"pause", "c", 0, nil, &toolgate.AppendParams{Messages: []toolgate.Message{reply}, Pause: &toolgate.PauseRecord{ID: "p"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := storekit.ValidateAppend(tc.id, tc.n, tc.pause, tc.p)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("ValidateAppend = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestValidateClaimAndMark(t *testing.T) {
	open := &toolgate.PauseRecord{ID: "p1", Index: 1}
	claimed := &toolgate.PauseRecord{ID: "p1", Index: 1, Claimed: true, ClaimToken: "t1", Started: []string{"a"}}
	for _, tc := range []struct {
		name string
		pr   *toolgate.PauseRecord
		c    *toolgate.Claim
		want error
	}{
		{"ok", open, &toolgate.Claim{Token: "t1", Started: []string{"a"}}, nil},
		{"nil", open, nil, toolgate.ErrInvalidAppend},
		{"no token", open, &toolgate.Claim{}, toolgate.ErrInvalidAppend},
		{"bad decision", open, &toolgate.Claim{Token: "t", Decisions: []toolgate.Decision{{Key: "a"}}}, toolgate.ErrInvalidAppend},
		{"repeated start", open, &toolgate.Claim{Token: "t", Started: []string{"a", "a"}}, toolgate.ErrInvalidAppend},
		{"no pause", nil, &toolgate.Claim{Token: "t"}, toolgate.ErrNoOpenPause},
		{"claimed", claimed, &toolgate.Claim{Token: "t2"}, toolgate.ErrNoOpenPause},
		{"takeover", claimed, &toolgate.Claim{Token: "t2", TakeOver: true, Supersedes: "t1"}, nil},
		{"takeover of another", claimed, &toolgate.Claim{Token: "t2", TakeOver: true, Supersedes: "t0"}, toolgate.ErrClaimLost},
		{"takeover same token", claimed, &toolgate.Claim{Token: "t1", TakeOver: true, Supersedes: "t1"}, toolgate.ErrInvalidAppend},
	} {
		t.Run("claim "+tc.name, func(t *testing.T) {
			err := storekit.ValidateClaim("c", tc.pr, "p1", tc.c)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("ValidateClaim = %v, want %v", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		token string
		keys  []string
		want  error
	}{
		{"ok", "t1", []string{"b"}, nil},
		{"no token", "", []string{"b"}, toolgate.ErrInvalidAppend},
		{"no keys", "t1", nil, toolgate.ErrInvalidAppend},
		{"repeated", "t1", []string{"b", "b"}, toolgate.ErrInvalidAppend},
		{"started", "t1", []string{"a"}, toolgate.ErrInvalidAppend},
		{"lost", "t0", []string{"b"}, toolgate.ErrClaimLost},
	} {
		t.Run("mark "+tc.name, func(t *testing.T) {
			err := storekit.ValidateMark("c", claimed, "p1", tc.token, tc.keys)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("ValidateMark = %v, want %v", err, tc.want)
			}
		})
	}
}

// A store checks an append against what it holds before it writes.
func ExampleValidateAppend() {
	// The conversation holds one message and no pause; the writer saw none.
	err := storekit.ValidateAppend("conv_1", 1, nil, &toolgate.AppendParams{
		At:       0,
		Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hello"}},
	})
	fmt.Println(errors.Is(err, toolgate.ErrConflict))
	// Output: true
}
