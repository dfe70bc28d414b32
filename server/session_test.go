package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
	"github.com/toolgate/toolgate/store/sqlite"
)

// sessionInstances returns two instances of the service over one store
// database, opened twice by open, with sign-in through p.
func sessionInstances(t *testing.T, p *fakeProvider, open func() toolgate.ConversationStore) (a, b *fixture) {
	login := func(c *server.Config) { c.OIDCLogin = loginConfig(p, loginRedirect, time.Now) }
	return newFixtureWith(t, open(), flightdemo.Model(), login), newFixtureWith(t, open(), flightdemo.Model(), login)
}

// testSessionsOnAnyInstance: a browser signed in on one instance, with an
// API key or through the identity provider, is signed in on the other; a
// sign-in through the provider started on one finishes on the other; and
// signing out on one ends the session on both.
func testSessionsOnAnyInstance(t *testing.T, open func() toolgate.ConversationStore) {
	p := newFakeProvider(t)
	a, b := sessionInstances(t, p, open)

	keyed := signIn(t, a.h, approverKey)
	if rec := webRequest(b.h, "GET", "/inbox", "", keyed); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<strong id="user">bob</strong>`) {
		t.Fatalf("GET /inbox on the other instance with a session from the first: %d, want 200 as bob\n%s", rec.Code, rec.Body)
	}
	if code, out := b.doCookie("GET", "/v1/inbox", keyed, ""); code != http.StatusOK {
		t.Errorf("GET /v1/inbox on the other instance with the session: %d %v", code, out)
	}

	login, q := beginLogin(t, a.h, "/inbox")
	rec := callback(b.h, p.approve(q), login)
	if rec.Code != http.StatusOK {
		t.Fatalf("callback on the other instance: status %d, want 200\n%s", rec.Code, rec.Body)
	}
	session := cookieNamed(rec, "toolgate_session")
	if session == nil {
		t.Fatal("callback: no session cookie")
	}
	if code, out := a.doCookie("POST", "/v1/conversations", session, `{"agent":"flights"}`); code != http.StatusCreated || out["owner"] != "ada" {
		t.Errorf("POST /v1/conversations on the first instance with the OIDC session: %d %v, want 201 owned by ada", code, out)
	}

	// Sign out on one: the session ends on both.
	if rec := webRequest(b.h, "POST", "/signout", "", keyed, "Origin: http://example.com", "Sec-Fetch-Site: same-origin"); rec.Code != http.StatusSeeOther {
		t.Fatalf("sign out on the second instance: %d\n%s", rec.Code, rec.Body)
	}
	for name, f := range map[string]*fixture{"first": a, "second": b} {
		if code, _ := f.doCookie("GET", "/v1/inbox", keyed, ""); code != http.StatusUnauthorized {
			t.Errorf("GET /v1/inbox on the %s instance after signing out: %d, want 401", name, code)
		}
	}
	if code, _ := b.doCookie("GET", "/v1/inbox", session, ""); code != http.StatusOK {
		t.Errorf("the other session after one signed out: %d, want 200", code)
	}
}

func TestSessionsOnAnyInstanceSQLite(t *testing.T) {
	path := t.TempDir() + "/toolgate.db"
	testSessionsOnAnyInstance(t, func() toolgate.ConversationStore {
		s, err := sqlite.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSessionsOnAnyInstancePostgres(t *testing.T) {
	url, schema := pgtest.Schema(t, "toolgate_sessions_test_")
	testSessionsOnAnyInstance(t, func() toolgate.ConversationStore {
		s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
