package recordstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

func testSessions(t *testing.T, s records.Store) {
	ctx := t.Context()
	hash := sha256.Sum256([]byte("key"))
	for _, bad := range []*records.Session{nil, {}, {ID: "s", ExpiresAt: at.Add(time.Hour)},
		{ID: "s", Principal: toolgate.Principal{ID: "ada"}, ExpiresAt: at},
		{ID: "s", Principal: toolgate.Principal{ID: "ada"}, KeyHash: []byte("short"), ExpiresAt: at.Add(time.Hour)}} {
		wantErr(t, fmt.Sprintf("AddSession(%+v)", bad), s.AddSession(ctx, bad, 0, at), records.ErrInvalid)
	}
	oidc := &records.Session{ID: "s1", Principal: toolgate.Principal{ID: "ada", Roles: []string{"approver"}, Attributes: map[string]string{"team": "ops"}},
		ExpiresAt: at.Add(time.Hour)}
	must(t, "AddSession", s.AddSession(ctx, oidc, 0, at))
	oidc.Principal.Roles[0] = "changed after the call"
	wantErr(t, "AddSession of a taken id", s.AddSession(ctx, &records.Session{ID: "s1", Principal: toolgate.Principal{ID: "bob"}, ExpiresAt: at.Add(time.Hour)}, 0, at), records.ErrExists)
	got, err := s.Session(ctx, "s1", at)
	must(t, "Session", err)
	want := &records.Session{ID: "s1", Principal: toolgate.Principal{ID: "ada", Roles: []string{"approver"}, Attributes: map[string]string{"team": "ops"}}, ExpiresAt: at.Add(time.Hour)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Session (-want +got):\n%s", diff)
	}
	keyed := &records.Session{ID: "s2", Principal: toolgate.Principal{ID: "bob"}, KeyHash: hash[:], ExpiresAt: at.Add(2 * time.Hour)}
	must(t, "AddSession with a key", s.AddSession(ctx, keyed, 0, at))
	if got, err := s.Session(ctx, "s2", at); err != nil || !bytes.Equal(got.KeyHash, hash[:]) || got.Principal.ID != "bob" {
		t.Errorf("Session s2 = %+v, %v; want bob's with the key hash", got, err)
	}
	// Expired: not found.
	if _, err := s.Session(ctx, "s1", at.Add(time.Hour)); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Session at its expiry: %v, want ErrNotFound", err)
	}
	_, err = s.Session(ctx, "nope", at)
	wantErr(t, "Session of an unknown id", err, records.ErrNotFound)
	must(t, "EndSession", s.EndSession(ctx, "s2"))
	must(t, "EndSession again", s.EndSession(ctx, "s2"))
	_, err = s.Session(ctx, "s2", at)
	wantErr(t, "Session after its end", err, records.ErrNotFound)

	// The bound: the session that expires first ends.
	for i, d := range []time.Duration{3, 1, 2} {
		must(t, "AddSession", s.AddSession(ctx, &records.Session{ID: fmt.Sprintf("c%d", i), Principal: toolgate.Principal{ID: "cy"}, ExpiresAt: at.Add(d * time.Hour)}, 3, at))
	}
	must(t, "AddSession beyond the bound", s.AddSession(ctx, &records.Session{ID: "c3", Principal: toolgate.Principal{ID: "cy"}, ExpiresAt: at.Add(4 * time.Hour)}, 3, at))
	for id, live := range map[string]bool{"c0": true, "c1": false, "c2": true, "c3": true, "s1": true} {
		if _, err := s.Session(ctx, id, at); (err == nil) != live {
			t.Errorf("session %s: %v, want live %v", id, err, live)
		}
	}
	n, err := s.PruneSessions(ctx, at.Add(3*time.Hour))
	must(t, "PruneSessions", err)
	if n != 3 { // s1, c2, c0
		t.Errorf("PruneSessions deleted %d, want 3", n)
	}
	if _, err := s.Session(ctx, "c3", at); err != nil {
		t.Errorf("session c3 after the prune: %v", err)
	}

	// Shared secrets: the first stored wins.
	_, err = s.SharedSecret(ctx, "", []byte("x"))
	wantErr(t, "SharedSecret without a name", err, records.ErrInvalid)
	_, err = s.SharedSecret(ctx, "seal", nil)
	wantErr(t, "SharedSecret without a value", err, records.ErrInvalid)
	v, err := s.SharedSecret(ctx, "seal", []byte("first"))
	must(t, "SharedSecret", err)
	v2, err := s.SharedSecret(ctx, "seal", []byte("second"))
	must(t, "SharedSecret again", err)
	if string(v) != "first" || string(v2) != "first" {
		t.Errorf("SharedSecret = %q, %q; want first both times", v, v2)
	}
	v[0] = 'X'
	if v3, _ := s.SharedSecret(ctx, "seal", []byte("third")); string(v3) != "first" {
		t.Errorf("SharedSecret after the caller changed its copy: %q", v3)
	}
	var wg sync.WaitGroup
	seen := make([]string, 8)
	for i := range seen {
		wg.Go(func() {
			v, err := s.SharedSecret(ctx, "race", []byte(fmt.Sprint(i)))
			if err != nil {
				t.Errorf("SharedSecret: %v", err)
			}
			seen[i] = string(v)
		})
	}
	wg.Wait()
	for _, v := range seen {
		if v != seen[0] {
			t.Errorf("concurrent SharedSecret calls got %v, want one value", seen)
			break
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Session(canceled, "c3", at); !errors.Is(err, context.Canceled) {
		t.Errorf("Session with a canceled context: %v", err)
	}
}
