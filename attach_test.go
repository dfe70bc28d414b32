package toolgate_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

type chartIn struct {
	Size int `json:"size"`
}

// TestToolAttachFile: a tool's attached files reach the model in its
// result's parts, also after a pause; invalid and oversized files are
// refused by AttachFile, and a failed call's files are dropped.
func TestToolAttachFile(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nchart")
	var attachErrs []error
	chart := toolgate.NewToolFor("chart", "Draw a chart",
		func(_ context.Context, req *toolgate.ToolRequest, in chartIn) (string, error) {
			attachErrs = append(attachErrs,
				req.AttachFile(toolgate.FilePart{MediaType: "image", Data: png}),                               // invalid media type
				req.AttachFile(toolgate.FilePart{MediaType: "image/png", Data: make([]byte, max(in.Size, 0))}), // too large when size > limit; empty, so invalid, when 0 or less
			)
			if err := req.AttachFile(toolgate.FilePart{MediaType: "image/png", Data: png, Name: "chart.png"}); err != nil {
				return "", err
			}
			if in.Size < 0 {
				return "", errors.New("no chart today")
			}
			return `"drawn"`, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})

	store := memory.New()
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "chart", Arguments: `{"size":64}`}, {ID: "c2", Name: "chart", Arguments: `{"size":-1}`}}},
		scripted.Reply{Text: "Here is the chart."},
	)
	c := toolgate.NewClient(model, []*toolgate.Tool{chart}, &toolgate.ClientOptions{Store: store, MaxFileSize: 32})
	ctx := t.Context()
	resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "conv", Input: "chart it"})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v, paused %v", err, resp.Paused())
	}
	// Resumed by another client over the same store.
	c2 := toolgate.NewClient(model, []*toolgate.Tool{chart}, &toolgate.ClientOptions{Store: store, MaxFileSize: 32})
	if _, err := c2.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: toolgatetest.OpenPauseID(t, c2, "conv"),
		Decisions: []toolgate.Decision{toolgate.Allow(resp.Awaiting[0]), toolgate.Allow(resp.Awaiting[1])}}); err != nil {
		t.Fatalf("Resume: %v", err)
	}

	prompts := model.Prompts()
	if len(prompts) != 2 {
		t.Fatalf("%d model calls, want 2", len(prompts))
	}
	msgs := prompts[1].Messages
	tm, ok := msgs[len(msgs)-1].(*toolgate.ToolMessage)
	if !ok || len(tm.Results) != 2 {
		t.Fatalf("last message sent %#v, want a tool message with two results", msgs[len(msgs)-1])
	}
	ok1, failed := tm.Results[0], tm.Results[1]
	if ok1.Status != toolgate.ResultOK || len(ok1.Parts) != 1 {
		t.Fatalf("first result %+v, want ok with one file", ok1)
	}
	if f := ok1.Parts[0].(toolgate.FilePart); f.MediaType != "image/png" || !bytes.Equal(f.Data, png) || f.Name != "chart.png" {
		t.Errorf("attached file %+v", f)
	}
	if failed.Status != toolgate.ResultError || failed.Parts != nil {
		t.Errorf("failed call's result %+v, want an error without files", failed)
	}
	if len(attachErrs) != 4 {
		t.Fatalf("%d AttachFile results, want 4", len(attachErrs))
	}
	if !errors.Is(attachErrs[0], toolgate.ErrInvalidMessage) {
		t.Errorf("invalid file: %v, want ErrInvalidMessage", attachErrs[0])
	}
	var big *toolgate.FileTooLargeError
	if !errors.As(attachErrs[1], &big) || big.Size != 64 || big.Limit != 32 {
		t.Errorf("oversized file: %v, want a FileTooLargeError of 64 > 32", attachErrs[1])
	}
	if !errors.Is(attachErrs[3], toolgate.ErrInvalidMessage) {
		t.Errorf("an empty file: %v, want ErrInvalidMessage", attachErrs[3])
	}

	// The stored conversation keeps the file with the result.
	conv, err := store.Load(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	var stored *toolgate.ToolMessage
	for _, m := range conv.Messages {
		if m, ok := m.(*toolgate.ToolMessage); ok {
			stored = m
		}
	}
	if stored == nil || len(stored.Results[0].Parts) != 1 {
		t.Errorf("stored tool message %+v, want the first result's file", stored)
	}
}
