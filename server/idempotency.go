package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// Idempotent requests. POST .../messages and POST .../decisions take an
// Idempotency-Key header: a retry with the same key (by the same caller,
// to the same path, with the same body) is answered with the first
// request's outcome instead of running again.
//
// Before the request runs, a record of its key is reserved in the record
// store, held by the request ([records.KeyStore.ReserveKey]). With a store
// that runs the server's hooks (txaudit.go), every write of the request
// marks the record inside its own transaction ([records.Tx.MarkKey]), so
// that the record says whether anything of the request took effect
// exactly when it did, whatever fails after. When the request ends:
//
//   - an answer other than 500, 503 and 504 is its outcome, stored with
//     the key (a 2xx, a 4xx refusal, a 502 of the model);
//   - a 500, 503 or 504 says the outcome is not known to the server: the
//     record is released. Without marks nothing of the request took
//     effect, and the record goes: a retry runs the request afresh. With
//     marks (a commit whose answer was lost, say) the record stays, and
//     the first retry settles it from what the store holds: the
//     conversation as stored, and, for a decision, the decision record
//     with its outcome. That answer is stored as the key's outcome.
//
// A retry while the first request still holds its record gets 409
// "idempotency_key_in_use" with Retry-After; a retry with another body
// gets 422 "idempotency_key_reused". Records expire after
// [Config.IdempotencyTTL].

// The bounds of idempotency keys.
const (
	// DefaultIdempotencyTTL is how long the outcome of a request sent
	// with an Idempotency-Key is kept when [Config.IdempotencyTTL] is 0.
	DefaultIdempotencyTTL = 24 * time.Hour
	// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes.
	MaxIdempotencyKey = 255
	// idempotencyLeaseMargin is added to the turn timeout for the hold of
	// a running request on its key: past it, the request has ended or
	// its process has died.
	idempotencyLeaseMargin = 30 * time.Second
)

// The error codes of idempotent requests.
const (
	codeInvalidIdempotencyKey = "invalid_idempotency_key" // 400: empty, too long, not visible ASCII, sent twice, or with an event stream
	codeIdempotencyKeyInUse   = "idempotency_key_in_use"  // 409: the first request with the key still runs
	codeIdempotencyKeyReused  = "idempotency_key_reused"  // 422: the key was used for a request with another body
	codeTurnInterrupted       = "turn_interrupted"        // 409: the first request's input was stored, its turn ended without an answer
)

// keyHold is the idempotency key record a running request holds.
type keyHold struct {
	scope, key, token string
	// until is when the hold ends by itself (the record's LockedUntil).
	until time.Time
}

type keyHoldKey struct{}

// heldKey returns the key record the request of ctx holds, or nil.
func heldKey(ctx context.Context) *keyHold {
	h, _ := ctx.Value(keyHoldKey{}).(*keyHold)
	return h
}

// validIdempotencyKey reports whether k may be an Idempotency-Key: 1 to
// [MaxIdempotencyKey] bytes of visible ASCII.
func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotencyTTL returns how long key records live.
func (s *Server) idempotencyTTL() time.Duration {
	if s.cfg.IdempotencyTTL > 0 {
		return s.cfg.IdempotencyTTL
	}
	return DefaultIdempotencyTTL
}

// idempotent wraps h, a handler of a request that changes state, with the
// handling of the Idempotency-Key header described above.
func (s *Server) idempotent(h func(http.ResponseWriter, *http.Request, *toolgate.Principal)) func(http.ResponseWriter, *http.Request, *toolgate.Principal) {
	return func(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
		vals := r.Header.Values("Idempotency-Key")
		if len(vals) == 0 {
			h(w, r, p)
			return
		}
		switch {
		case len(vals) > 1 || !validIdempotencyKey(vals[0]):
			writeError(w, http.StatusBadRequest, codeInvalidIdempotencyKey,
				fmt.Sprintf("Idempotency-Key must be sent once, 1 to %d visible ASCII characters", MaxIdempotencyKey))
			return
		case wantsEvents(r):
			writeError(w, http.StatusBadRequest, codeInvalidIdempotencyKey, "Idempotency-Key is not taken with Accept: text/event-stream: a stream cannot be answered again")
			return
		}
		body, ok := s.readBody(w, r)
		if !ok {
			return
		}
		sum := sha256.Sum256(body)
		t := now()
		k := &records.RequestKey{Scope: p.ID + " " + r.Method + " " + r.URL.EscapedPath(), Key: vals[0],
			Digest: "sha256:" + hex.EncodeToString(sum[:]), Token: rand.Text(),
			CreatedAt: t, LockedUntil: t.Add(s.ops.turnTimeout + idempotencyLeaseMargin), ExpiresAt: t.Add(s.idempotencyTTL())}
		prior, err := s.cfg.Records.ReserveKey(r.Context(), k)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if prior != nil {
			s.retried(w, r, p, k, prior)
			return
		}
		hold := &keyHold{scope: k.Scope, key: k.Key, token: k.Token, until: k.LockedUntil}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &responseCopy{ResponseWriter: w}
		h(rec, r.WithContext(context.WithValue(r.Context(), keyHoldKey{}, hold)), p)
		s.settleKey(r.Context(), hold, rec.status, rec.body.Bytes())
	}
}

// outcomeKnown reports whether a response of status is the outcome of its
// request, to be stored with its key: everything but the answers that say
// the server does not know what became of the request.
func outcomeKnown(status int) bool {
	return status != http.StatusInternalServerError && status != http.StatusServiceUnavailable && status != http.StatusGatewayTimeout
}

// settleKey stores the response of the request holding hold, or releases
// the hold when the response says nothing of the outcome.
func (s *Server) settleKey(ctx context.Context, hold *keyHold, status int, body []byte) {
	ctx = context.WithoutCancel(ctx)
	err := s.settleOnce(ctx, hold, status, body)
	if err == nil {
		return
	}
	if transient(err) && s.settling.start() {
		// The database is unavailable for now: settle the record once it
		// answers again, so that a retry does not wait for the hold to
		// end (the turn timeout and a margin) to be answered.
		s.logger.WarnContext(ctx, "server: storing the outcome of an idempotency key failed; retrying in the background", "err", logcap.Error(err))
		go s.settleLater(hold, status, body)
		return
	}
	// A retry finds the hold until it ends, then settles the record
	// from the store (or runs afresh when nothing took effect).
	s.logger.ErrorContext(ctx, "server: storing the outcome of an idempotency key failed", "err", logcap.Error(err))
}

// settleOnce stores the outcome of hold's request (status and body), or
// releases the hold when status says nothing of the outcome.
func (s *Server) settleOnce(ctx context.Context, hold *keyHold, status int, body []byte) error {
	if outcomeKnown(status) {
		return s.cfg.Records.CompleteKey(ctx, hold.scope, hold.key, hold.token, status, body)
	}
	return s.cfg.Records.ReleaseKey(ctx, hold.scope, hold.key, hold.token, now())
}

// The waits between the background attempts to settle a key record.
const (
	settleFirstWait = 50 * time.Millisecond
	settleMaxWait   = 2 * time.Second
)

// settleLater retries settleOnce with growing waits until it succeeds,
// fails for good, the hold ends by itself (a retry then settles the
// record from the store) or the server closes.
func (s *Server) settleLater(hold *keyHold, status int, body []byte) {
	defer s.settling.done()
	wait := settleFirstWait
	for {
		timer := time.NewTimer(wait)
		select {
		case <-s.settling.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if !now().Before(hold.until) {
			return
		}
		err := s.settleOnce(s.settling.ctx, hold, status, body)
		switch {
		case err == nil:
			return
		case errors.Is(err, records.ErrNotFound):
			// Settled meanwhile: an attempt whose answer was lost
			// committed, or a retry took the record over.
			return
		case !transient(err) || s.settling.ctx.Err() != nil:
			s.logger.Error("server: storing the outcome of an idempotency key failed", "err", logcap.Error(err))
			return
		}
		wait = min(2*wait, settleMaxWait)
	}
}

// settlers tracks the background attempts to settle key records, which
// [Server.Close] stops and waits for.
type settlers struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newSettlers() settlers {
	ctx, cancel := context.WithCancel(context.Background())
	return settlers{ctx: ctx, cancel: cancel}
}

// start counts a new background attempt; false once stopped.
func (st *settlers) start() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	st.wg.Add(1)
	return true
}

func (st *settlers) done() { st.wg.Done() }

// stop cancels the attempts and waits for them to return.
func (st *settlers) stop() {
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	st.cancel()
	st.wg.Wait()
}

// retried answers a request whose key has the record prior.
func (s *Server) retried(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, k, prior *records.RequestKey) {
	switch {
	case prior.Digest != k.Digest:
		writeError(w, http.StatusUnprocessableEntity, codeIdempotencyKeyReused, "the Idempotency-Key was used for a request with another body; use a new key for a new request")
	case prior.Done:
		replay(w, prior.Status, prior.Body)
	case prior.LockedUntil.After(k.CreatedAt):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusConflict, codeIdempotencyKeyInUse, "the first request with this Idempotency-Key is still running; retry later for its outcome")
	default:
		status, body, err := s.storedOutcome(r, p)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if status == http.StatusConflict && body == nil {
			// The store still resolves the request (a recovery of its
			// claim is due): its outcome is not there yet.
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusConflict, codeIdempotencyKeyInUse, "the first request with this Idempotency-Key is being finished; retry later for its outcome")
			return
		}
		if err := s.cfg.Records.CompleteKey(context.WithoutCancel(r.Context()), prior.Scope, prior.Key, prior.Token, status, body); err != nil && !errors.Is(err, records.ErrNotFound) {
			s.logger.ErrorContext(r.Context(), "server: storing the outcome of an idempotency key failed", "err", logcap.Error(err))
		}
		replay(w, status, body)
	}
}

// replay answers a stored outcome, saying so.
func replay(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Idempotent-Replayed", "true")
	writeRaw(w, status, body)
}

// writeRaw answers body, a JSON value, as [writeJSON] does.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// storedOutcome returns the outcome of the request r, by p, whose first
// attempt took effect but whose answer is not known, as the store holds
// it: the conversation's turn as stored, with, for a decision, the
// decision's record. A conflict with a nil body means the outcome is not
// stored yet.
func (s *Server) storedOutcome(r *http.Request, p *toolgate.Principal) (int, []byte, error) {
	ctx := r.Context()
	c, err := s.conversation(ctx, r.PathValue("id"))
	if err != nil || c == nil {
		return 0, nil, cmpNil(err, errors.New("server: the conversation of a stored request key is gone"))
	}
	var rec *DecisionRecord
	if pauseID := r.PathValue("pause"); pauseID != "" {
		if rec, err = s.decision(ctx, c.ID, pauseID); err != nil {
			return 0, nil, err
		}
		if rec == nil || rec.Outcome == outcomeDeciding {
			return http.StatusConflict, nil, nil
		}
		if rec, err = s.viewRecord(ctx, c, p, rec, false); err != nil {
			return 0, nil, err
		}
	}
	conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
	if err != nil {
		return 0, nil, err
	}
	out := &turnJSON{ConversationID: c.ID, Decision: rec}
	pause, reply := openPause(conv)
	var last *toolgate.AssistantMessage
	if n := len(conv.Messages); n > 0 {
		last, _ = conv.Messages[n-1].(*toolgate.AssistantMessage)
	}
	switch {
	case pause != nil && !pause.Claimed:
		s.setExpiry(c, conv, pause)
		if err := s.viewPause(ctx, c, p, pause, reply, false); err != nil {
			return 0, nil, err
		}
		out.Status, out.Pause, out.Text = "paused", pause, reply.Text
	case last != nil && !last.HasToolCalls():
		out.Status, out.Text = "completed", last.Text
	case rec != nil:
		out.Status = "completed"
	default:
		return http.StatusConflict, encodeJSON(errorJSON{Error: codeTurnInterrupted,
			Message: "the first request's input was stored, and its turn ended before the model answered; read the conversation and post the next message"}), nil
	}
	return http.StatusOK, encodeJSON(out), nil
}

// encodeJSON returns v as [writeJSON] writes it.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	return b.Bytes()
}

// carriedOut answers the outcome of the decision rec, whose resumption
// failed, when the store holds it decided anyway (a commit whose answer
// was lost), and reports whether it did.
func (s *Server) carriedOut(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, rec *DecisionRecord) bool {
	ctx := context.WithoutCancel(r.Context())
	stored, err := s.decision(ctx, rec.ConversationID, rec.PauseID)
	if err != nil || stored == nil || !sameDecision(stored, rec) || stored.Outcome != outcomeDecided {
		return false
	}
	status, body, err := s.storedOutcome(r.WithContext(ctx), p)
	if err != nil || status != http.StatusOK {
		return false
	}
	writeRaw(w, status, body)
	return true
}

// pruneKeys deletes the idempotency key records and the sessions that
// have expired; the recovery of claims calls it on each round. (Expired
// records are never answered in any case: pruning bounds the tables.)
func (s *Server) pruneKeys(ctx context.Context) {
	if _, err := s.cfg.Records.PruneKeys(ctx, now()); err != nil && ctx.Err() == nil {
		s.logger.ErrorContext(ctx, "server: deleting expired idempotency keys failed", "err", logcap.Error(err))
	}
	if _, err := s.cfg.Records.PruneSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
		s.logger.ErrorContext(ctx, "server: deleting expired sessions failed", "err", logcap.Error(err))
	}
}

// cmpNil returns err, or alt when err is nil.
func cmpNil(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// readBody reads the body within the size limit, answering the error
// itself and returning false on failure.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, codeBodyTooLarge, fmt.Sprintf("the body exceeds %d bytes", mbe.Limit))
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, codeInvalidJSON, "cannot read the body")
		return nil, false
	}
	return body, true
}

// responseCopy passes a response on and keeps a copy of its status and
// body.
type responseCopy struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *responseCopy) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *responseCopy) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// Unwrap returns the response writer c passes on to, for
// [http.ResponseController].
func (c *responseCopy) Unwrap() http.ResponseWriter { return c.ResponseWriter }
