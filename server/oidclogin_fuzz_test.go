package server

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// FuzzLoginCookie opens login cookies as browsers may send them: anything
// but a cookie this process sealed, unexpired, is refused with
// errLoginCookie, and nothing panics.
func FuzzLoginCookie(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := &oidcLogin{seal: newLoginSeal(), now: func() time.Time { return now }}
	valid := l.sealCookie(&loginState{State: "s", Nonce: "n", Verifier: "v", Next: "/inbox", Expires: now.Add(loginTTL).Unix()})
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add("")
	f.Add("AAAA")
	f.Add(base64.RawURLEncoding.EncodeToString(make([]byte, 28)))
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, value string) {
		st, err := l.openCookie(value)
		if value == valid {
			if err != nil || st.Next != "/inbox" {
				t.Fatalf("the sealed cookie: %+v, %v", st, err)
			}
			return
		}
		if err == nil || !errors.Is(err, errLoginCookie) || st != nil {
			t.Fatalf("openCookie(%q) = %+v, %v: want errLoginCookie", value, st, err)
		}
	})
}

func TestLoginCookieRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := now
	l := &oidcLogin{seal: newLoginSeal(), now: func() time.Time { return clock }}
	for _, tc := range []struct {
		name string
		st   loginState
		want *loginState // nil: refused
	}{
		{"valid", loginState{State: "s", Nonce: "n", Verifier: "v", Next: "/conversations/c?x=1", Expires: now.Add(time.Minute).Unix()},
			&loginState{State: "s", Nonce: "n", Verifier: "v", Next: "/conversations/c?x=1", Expires: now.Add(time.Minute).Unix()}},
		{"unsafe next", loginState{State: "s", Nonce: "n", Verifier: "v", Next: "//evil.example.com", Expires: now.Add(time.Minute).Unix()},
			&loginState{State: "s", Nonce: "n", Verifier: "v", Next: "/", Expires: now.Add(time.Minute).Unix()}},
		{"expired", loginState{State: "s", Nonce: "n", Verifier: "v", Expires: now.Unix()}, nil},
		{"no state", loginState{Nonce: "n", Verifier: "v", Expires: now.Add(time.Minute).Unix()}, nil},
		{"no nonce", loginState{State: "s", Verifier: "v", Expires: now.Add(time.Minute).Unix()}, nil},
		{"no verifier", loginState{State: "s", Nonce: "n", Expires: now.Add(time.Minute).Unix()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.openCookie(l.sealCookie(&tc.st))
			if tc.want == nil {
				if !errors.Is(err, errLoginCookie) {
					t.Fatalf("got %+v, %v; want errLoginCookie", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Another process's key does not open it.
	other := &oidcLogin{seal: newLoginSeal(), now: l.now}
	if _, err := other.openCookie(l.sealCookie(&loginState{State: "s", Nonce: "n", Verifier: "v", Expires: now.Add(time.Minute).Unix()})); !errors.Is(err, errLoginCookie) {
		t.Errorf("another key: %v, want errLoginCookie", err)
	}
	if _, err := l.openCookie(string(make([]byte, maxLoginCookie+1))); !errors.Is(err, errLoginCookie) {
		t.Errorf("a long cookie: %v, want errLoginCookie", err)
	}
}
