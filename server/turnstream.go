package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/records"
)

// Streamed turns: a request to post a message or decide a pause that
// accepts text/event-stream gets the turn as server-sent events — "chunk"
// events with the text as the model writes it, then one "completed" or
// "paused" event with the turn's outcome (the JSON of the non-streaming
// response), or an "error" event. The turn runs to its end and is stored
// even when the client goes away.

// wantsEvents reports whether the request's Accept header names
// text/event-stream (with a non-zero quality).
func wantsEvents(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == "text/event-stream" && !zeroQuality(params["q"]) {
				return true
			}
		}
	}
	return false
}

// zeroQuality reports whether an Accept quality value is 0.
func zeroQuality(q string) bool {
	return q != "" && strings.Trim(q, "0.") == "" && strings.Count(q, ".") <= 1
}

// errTurnPanicked ends a streamed turn whose code panicked.
var errTurnPanicked = errors.New("server: the turn panicked")

// chunkJSON is the data of a "chunk" event.
type chunkJSON struct {
	Text string `json:"text"`
}

// turnItem is one item of a turn's stream.
type turnItem struct {
	chunk *toolgate.Chunk
	err   error
}

// pumpTurn runs a turn's stream and sends its text as "chunk" events. When
// the stream fails before its first chunk, it sends nothing and returns a
// nil writer, so that the caller answers with a plain error response.
// Otherwise it returns the stream's writer, the turn's response (the
// parts [Server.turnResult] reads: the last round's text and the awaiting
// keys) or the error that ended the turn. The turn runs to its end even
// when the client goes away: the caller made it with a context that the
// request's cancellation does not reach, and pumpTurn drains it.
func (s *Server) pumpTurn(w http.ResponseWriter, r *http.Request, turn iter.Seq2[*toolgate.Chunk, error]) (*sseWriter, *toolgate.Response, error) {
	items := make(chan turnItem)
	go func() {
		defer close(items)
		// A panic of code the turn runs ends the turn with an error
		// (an "error" event, or 500 before the first chunk) instead of
		// the process.
		defer func() {
			if v := recover(); v != nil {
				s.logger.ErrorContext(r.Context(), "server: a streamed turn panicked", "path", capped(r.URL.Path),
					"panic", capped(fmt.Sprint(v)), "stack", string(debug.Stack()))
				items <- turnItem{err: fmt.Errorf("%w: %v", errTurnPanicked, capped(fmt.Sprint(v)))}
			}
		}()
		for c, err := range turn {
			items <- turnItem{c, err}
		}
	}()
	first, ok := <-items
	if !ok {
		return nil, nil, errors.New("server: the turn's stream ended without a chunk")
	}
	if first.err != nil {
		for range items {
		}
		return nil, nil, first.err
	}
	sw := startStream(w)
	tick := time.NewTicker(s.events.heartbeat)
	defer tick.Stop()
	var text strings.Builder
	var awaiting []string
	var err error
	take := func(it turnItem) {
		c := it.chunk
		switch {
		case it.err != nil:
			err = it.err
		case c != nil:
			if len(c.Results) > 0 {
				// A new round: the turn's text is the last round's.
				text.Reset()
			}
			if c.Text != "" {
				text.WriteString(c.Text)
				sw.event("", "chunk", chunkJSON{Text: c.Text})
			}
			if len(c.Awaiting) > 0 {
				awaiting = c.Awaiting
			}
		}
	}
	take(first)
loop:
	for {
		select {
		case it, ok := <-items:
			if !ok {
				break loop
			}
			take(it)
		case <-tick.C:
			sw.comment("ping")
		}
	}
	if err != nil {
		return sw, nil, err
	}
	resp := &toolgate.Response{
		Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: text.String()}}},
		Awaiting:    awaiting,
	}
	return sw, resp, nil
}

// streamError sends an "error" event for a turn that failed once its
// stream had begun.
func (s *Server) streamError(sw *sseWriter, r *http.Request, err error) {
	code, msg := codeInternal, "internal error"
	var de *toolgate.DecisionError
	switch {
	case errors.Is(err, toolgate.ErrConflict):
		code, msg = codeConflict, "another turn of the conversation ran at the same time; retry"
	case r.Context().Err() == nil && transient(err):
		// The turn's own context is not cancelled with the request's, so a
		// deadline here is the store's (or another dependency's): the same
		// answer as the 503 of a turn that had not begun streaming.
		s.logger.WarnContext(r.Context(), "server: the store did not answer in a streamed turn", "method", r.Method, "path", capped(r.URL.Path), "err", logcap.Error(err))
		code, msg = codeStoreUnavailable, "the database the turn needs is unavailable or did not answer in time; read the conversation, then retry"
	case errors.As(err, &de):
		_, code = decisionStatus(de)
		msg = de.Error()
	case errors.As(err, new(*authz.DenialError)):
		_, body, _ := s.denial(r, err)
		sw.event("", "error", body)
		return
	case errors.As(err, new(*provider.Error)):
		body, _ := modelError(err)
		s.logger.ErrorContext(r.Context(), "server: the model failed in a streamed turn", "method", r.Method, "path", capped(r.URL.Path), "kind", body.Kind, "err", logcap.Error(err))
		sw.event("", "error", body)
		return
	default:
		s.logger.ErrorContext(r.Context(), "server: streamed turn failed", "method", r.Method, "path", capped(r.URL.Path), "err", logcap.Error(err))
	}
	sw.event("", "error", errorJSON{Error: code, Message: msg})
}

// streamMessage runs the turn of a posted message as a stream.
func (s *Server) streamMessage(w http.ResponseWriter, r *http.Request, c *conversation, a *Agent, p *toolgate.Principal, input string, parts toolgate.Parts) {
	ctx := context.WithoutCancel(r.Context())
	sw, resp, err := s.pumpTurn(w, r, a.Client.Stream(ctx, &toolgate.CallParams{ConversationID: c.ID, Principal: p, Input: input, Parts: parts}))
	if problem, ok := callPartsProblem(err); ok && sw == nil {
		writeError(w, problem.status, problem.code, problem.message)
		return
	}
	switch {
	case sw == nil && errors.Is(err, toolgate.ErrPauseOpen):
		writeError(w, http.StatusConflict, codePauseOpen, "the conversation waits for a decision on its open pause")
		return
	case sw == nil && errors.Is(err, toolgate.ErrConflict):
		writeError(w, http.StatusConflict, codeConflict, "another turn of the conversation ran at the same time; retry")
		return
	case sw == nil:
		s.publish(ctx, c.ID, EventAppended, "")
		s.internal(w, r, err)
		return
	case err != nil:
		s.publish(ctx, c.ID, EventAppended, "")
		s.streamError(sw, r, err)
		return
	}
	out, err := s.turnResult(ctx, c, resp)
	if err != nil {
		s.streamError(sw, r, err)
		return
	}
	s.publishTurn(ctx, out)
	sw.event("", out.Status, out)
}

// streamDecision resumes a pause the request has taken in the records, as
// a stream: rec is the decision's record, grants the sticky grants the
// decision makes once it succeeds, and audited writes the audit records of
// the resolution (see [Server.auditResolution]).
func (s *Server) streamDecision(w http.ResponseWriter, r *http.Request, c *conversation, a *Agent, p *toolgate.Principal, rec *DecisionRecord, params *toolgate.ResumeTurnParams, grants []*records.Grant, audited func(error)) {
	ctx := context.WithoutCancel(r.Context())
	sw, resp, err := s.pumpTurn(w, r, a.Client.ResumeStream(ctx, params))
	audited(err)
	if err != nil {
		taken, prior := s.resumeFailed(r.Context(), c, params.PauseID, err)
		if taken && sw == nil {
			s.conflictOrNone(w, r, p, c, prior, params.Conversation)
			return
		}
		if sw == nil {
			s.decisionError(w, r, err)
			return
		}
		s.streamError(sw, r, err)
		return
	}
	out, err := s.decided(ctx, c, p, rec, grants, resp)
	if err != nil {
		s.streamError(sw, r, err)
		return
	}
	sw.event("", out.Status, out)
}
