package recordstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/records"
)

// requestKey returns a record of key in scope held by token, reserved at
// at and live for a day, its hold ending after a minute.
func requestKey(scope, key, token string) *records.RequestKey {
	return &records.RequestKey{Scope: scope, Key: key, Digest: "sha256:one", Token: token,
		CreatedAt: at, LockedUntil: at.Add(time.Minute), ExpiresAt: at.Add(24 * time.Hour)}
}

func testRequestKeys(t *testing.T, s records.Store) {
	ctx := t.Context()
	for _, bad := range []*records.RequestKey{nil, {}, {Scope: "a", Key: "k", Digest: "d"},
		{Scope: "a", Key: "k", Digest: "d", Token: "t", CreatedAt: at, ExpiresAt: at}} {
		_, err := s.ReserveKey(ctx, bad)
		wantErr(t, fmt.Sprintf("ReserveKey(%+v)", bad), err, records.ErrInvalid)
	}
	k := requestKey("ada POST /x", "k1", "t1")
	prior, err := s.ReserveKey(ctx, k)
	if err != nil || prior != nil {
		t.Fatalf("first ReserveKey: %+v, %v; want nil, nil", prior, err)
	}
	// Taken: a second reservation gets the first record.
	second := requestKey("ada POST /x", "k1", "t2")
	second.Digest = "sha256:two"
	second.CreatedAt = at.Add(time.Second)
	prior, err = s.ReserveKey(ctx, second)
	must(t, "second ReserveKey", err)
	if prior == nil || prior.Token != "t1" || prior.Digest != "sha256:one" || prior.Done || prior.Effects != 0 ||
		!prior.CreatedAt.Equal(at) || !prior.LockedUntil.Equal(k.LockedUntil) || !prior.ExpiresAt.Equal(k.ExpiresAt) {
		t.Fatalf("second ReserveKey got %+v, want the first record", prior)
	}
	// The same key in another scope is another record.
	if prior, err := s.ReserveKey(ctx, requestKey("bob POST /x", "k1", "t3")); err != nil || prior != nil {
		t.Errorf("ReserveKey in another scope: %+v, %v; want nil, nil", prior, err)
	}
	// Only the holder completes it, once.
	wantErr(t, "CompleteKey by another token", s.CompleteKey(ctx, "ada POST /x", "k1", "t2", 200, []byte("x")), records.ErrNotFound)
	wantErr(t, "CompleteKey of an unknown key", s.CompleteKey(ctx, "ada POST /x", "nope", "t1", 200, []byte("x")), records.ErrNotFound)
	body := []byte(`{"status":"completed"}`)
	must(t, "CompleteKey", s.CompleteKey(ctx, "ada POST /x", "k1", "t1", 200, body))
	body[0] = 'X' // not retained
	wantErr(t, "second CompleteKey", s.CompleteKey(ctx, "ada POST /x", "k1", "t1", 500, nil), records.ErrNotFound)
	// A done record is answered long after its hold ended, and release
	// leaves it alone.
	must(t, "ReleaseKey of a done record", s.ReleaseKey(ctx, "ada POST /x", "k1", "t1", at))
	late := requestKey("ada POST /x", "k1", "t4")
	late.CreatedAt = at.Add(time.Hour)
	prior, err = s.ReserveKey(ctx, late)
	must(t, "ReserveKey after completion", err)
	if prior == nil || !prior.Done || prior.Status != 200 || !bytes.Equal(prior.Body, []byte(`{"status":"completed"}`)) {
		t.Fatalf("ReserveKey after completion got %+v, want the stored response", prior)
	}
	prior.Body[0] = 'X' // the caller's copy
	// Expired: the key names a new request.
	fresh := requestKey("ada POST /x", "k1", "t5")
	fresh.CreatedAt, fresh.LockedUntil, fresh.ExpiresAt = at.Add(24*time.Hour), at.Add(25*time.Hour), at.Add(48*time.Hour)
	if prior, err := s.ReserveKey(ctx, fresh); err != nil || prior != nil {
		t.Fatalf("ReserveKey after expiry: %+v, %v; want nil, nil", prior, err)
	}
	again := requestKey("ada POST /x", "k1", "t6")
	again.CreatedAt, again.ExpiresAt = fresh.CreatedAt, fresh.ExpiresAt
	if prior, err := s.ReserveKey(ctx, again); err != nil || prior == nil || prior.Token != "t5" || prior.Done || len(prior.Body) != 0 {
		t.Fatalf("ReserveKey of the renewed key: %+v, %v; want t5's record, not done", prior, err)
	}

	// Release without effects deletes: a retry runs afresh.
	must(t, "ReserveKey k2", reserve(ctx, s, requestKey("ada POST /x", "k2", "t1")))
	must(t, "ReleaseKey by another token", s.ReleaseKey(ctx, "ada POST /x", "k2", "t9", at))
	if prior, _ := s.ReserveKey(ctx, requestKey("ada POST /x", "k2", "t2")); prior == nil || prior.Token != "t1" {
		t.Fatalf("after a release by another token: %+v, want t1's record", prior)
	}
	must(t, "ReleaseKey", s.ReleaseKey(ctx, "ada POST /x", "k2", "t1", at))
	if prior, err := s.ReserveKey(ctx, requestKey("ada POST /x", "k2", "t2")); err != nil || prior != nil {
		t.Fatalf("ReserveKey after release: %+v, %v; want nil, nil", prior, err)
	}
	// A hold that ended without effects is taken over.
	over := requestKey("ada POST /x", "k2", "t3")
	over.CreatedAt = at.Add(2 * time.Minute)
	over.LockedUntil = at.Add(3 * time.Minute)
	if prior, err := s.ReserveKey(ctx, over); err != nil || prior != nil {
		t.Fatalf("ReserveKey after the hold ended: %+v, %v; want nil, nil", prior, err)
	}

	// Prune deletes what expired.
	must(t, "ReserveKey k3", reserve(ctx, s, requestKey("ada POST /x", "k3", "t1")))
	n, err := s.PruneKeys(ctx, at.Add(24*time.Hour))
	must(t, "PruneKeys", err)
	if n != 3 { // k2, k3 and bob's k1; ada's k1 was renewed for longer
		t.Errorf("PruneKeys deleted %d, want 3", n)
	}
	if prior, err := s.ReserveKey(ctx, requestKey("ada POST /x", "k3", "t2")); err != nil || prior != nil {
		t.Errorf("ReserveKey after prune: %+v, %v; want nil, nil", prior, err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ReserveKey(canceled, requestKey("ada POST /x", "k4", "t1")); !errors.Is(err, context.Canceled) {
		t.Errorf("ReserveKey with a canceled context: %v", err)
	}
}

func reserve(ctx context.Context, s records.Store, k *records.RequestKey) error {
	prior, err := s.ReserveKey(ctx, k)
	if err == nil && prior != nil {
		err = fmt.Errorf("key %q taken by %q", k.Key, prior.Token)
	}
	return err
}

// testConcurrentReserve: of concurrent reservations of one key exactly
// one wins, and the others get its record.
func testConcurrentReserve(t *testing.T, s records.Store) {
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  []string
		seen = map[string]bool{}
	)
	for i := range n {
		wg.Go(func() {
			tok := fmt.Sprintf("t%d", i)
			prior, err := s.ReserveKey(t.Context(), requestKey("ada POST /x", "k", tok))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("ReserveKey %s: %v", tok, err)
			case prior == nil:
				won = append(won, tok)
			default:
				seen[prior.Token] = true
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d reservations won (%v), want 1", len(won), won)
	}
	for tok := range seen {
		if tok != won[0] {
			t.Errorf("a loser saw the record of %s, not of the winner %s", tok, won[0])
		}
	}
}

// testHookMarkKey: a mark commits with its write, or not at all, and a
// record with effects outlives its release and its hold.
func testHookMarkKey(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	ctx := t.Context()
	must(t, "ReserveKey", reserve(ctx, rs, requestKey("ada POST /x", "k1", "t1")))
	mark := func(token string, fail error) context.Context {
		return records.WithHook(ctx, rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
			if err := tx.MarkKey("ada POST /x", "k1", token); err != nil {
				return err
			}
			return fail
		})
	}
	// Rolled back with its write: no effect.
	boom := errors.New("boom")
	if err := cs.Append(mark("t1", boom), "conv_k", pausedAppend("p1")); !errors.Is(err, boom) {
		t.Fatalf("Append with a failing hook: %v, want boom", err)
	}
	// A mark for a token that holds nothing fails the write.
	if err := cs.Append(mark("t2", nil), "conv_k", pausedAppend("p1")); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("Append marking another token's key: %v, want ErrNotFound", err)
	}
	if conv, err := cs.Load(ctx, "conv_k"); err == nil && len(conv.Messages) != 0 {
		t.Fatalf("the failed appends stored %d messages", len(conv.Messages))
	}
	must(t, "ReleaseKey", rs.ReleaseKey(ctx, "ada POST /x", "k1", "t1", at))
	// Released without effects: gone, reserved again.
	must(t, "ReserveKey again", reserve(ctx, rs, requestKey("ada POST /x", "k1", "t1")))
	must(t, "Append with a mark", cs.Append(mark("t1", nil), "conv_k", pausedAppend("p1")))
	must(t, "ReleaseKey with effects", rs.ReleaseKey(ctx, "ada POST /x", "k1", "t1", at))
	// Its hold ended, but its effects keep it: another instance sees it.
	_, other := open(t)
	late := requestKey("ada POST /x", "k1", "t2")
	late.CreatedAt = at.Add(time.Hour)
	prior, err := other.ReserveKey(ctx, late)
	must(t, "ReserveKey on another instance", err)
	if prior == nil || prior.Token != "t1" || prior.Effects != 1 || prior.Done || !prior.LockedUntil.Equal(at) {
		t.Fatalf("ReserveKey after a release with effects got %+v, want t1's record with 1 effect, its hold ended at the release", prior)
	}
	// Whoever settles it completes it with the holder's token.
	must(t, "CompleteKey", other.CompleteKey(ctx, "ada POST /x", "k1", "t1", 409, []byte(`{}`)))
	if conv, err := cs.Load(ctx, "conv_k"); err != nil || conv.Pause == nil {
		t.Fatalf("Load: %v, %v", conv, err)
	}

}

// testFinalOutcome: an outcome that resolves a pause is final: a later
// Finish, of another outcome or of none, changes nothing.
func testFinalOutcome(t *testing.T, s records.Store) {
	ctx := t.Context()
	for _, final := range []records.Outcome{records.OutcomeDecided, records.OutcomeExpired, records.OutcomeRecovered} {
		pause := "p_" + string(final)
		if _, err := s.Begin(ctx, &records.Decision{ConversationID: "conv_1", PauseID: pause, Source: records.SourcePerson, DecidedBy: "bob",
			DecidedAt: at, Outcome: records.OutcomeDeciding}); err != nil {
			t.Fatal(err)
		}
		must(t, "Finish", s.Finish(ctx, "conv_1", pause, final))
		for _, later := range []records.Outcome{records.OutcomeFailed, records.OutcomeDeciding, records.OutcomeRecovered, records.OutcomeDecided, records.OutcomeNone} {
			must(t, fmt.Sprintf("Finish %q after %q", later, final), s.Finish(ctx, "conv_1", pause, later))
			if d, err := s.Decision(ctx, "conv_1", pause); err != nil || d.Outcome != final {
				t.Errorf("after Finish %q of a %q record: %+v, %v; want it %q", later, final, d, err, final)
			}
		}
	}
	// A failed one is not final.
	if _, err := s.Begin(ctx, &records.Decision{ConversationID: "conv_1", PauseID: "p_f", Source: records.SourcePerson, DecidedBy: "bob",
		DecidedAt: at, Outcome: records.OutcomeDeciding}); err != nil {
		t.Fatal(err)
	}
	must(t, "Finish failed", s.Finish(ctx, "conv_1", "p_f", records.OutcomeFailed))
	must(t, "Finish recovered", s.Finish(ctx, "conv_1", "p_f", records.OutcomeRecovered))
	if d, err := s.Decision(ctx, "conv_1", "p_f"); err != nil || d.Outcome != records.OutcomeRecovered {
		t.Errorf("a failed record recovered: %+v, %v", d, err)
	}
	wantErr(t, "Finish of an unknown pause", s.Finish(ctx, "conv_1", "nope", records.OutcomeNone), records.ErrNotFound)
	wantErr(t, "Finish of an unknown pause", s.Finish(ctx, "conv_1", "nope", records.OutcomeDecided), records.ErrNotFound)
}
