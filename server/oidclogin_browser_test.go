package server_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

// TestBrowserOIDCLogin signs in through the fake provider in Chromium:
// the inbox sends the browser to the sign-in page, "Sign in with Fake ID"
// to the provider (on localhost, another site than the server's
// 127.0.0.1), whose page sends it back; it lands on the inbox, signed in.
// The provider's page is a real cross-site hop: the login cookie must be
// SameSite=Lax to come back, and the session cookie (Strict) must be sent
// to the inbox afterwards.
func TestBrowserOIDCLogin(t *testing.T) {
	b := newBrowser(t)
	p := newFakeProvider(t)
	p.page = true
	ts := httptest.NewUnstartedServer(nil)
	ts.Start()
	t.Cleanup(ts.Close)
	f := newFixtureWith(t, memory.New(), flightdemo.Model(), func(c *server.Config) {
		c.OIDCLogin = loginConfig(p, ts.URL+"/signin/oidc/callback", nil)
	})
	ts.Config.Handler = f.h

	u := b.user(t)
	u.do("open the inbox, signed out",
		chromedp.Navigate(ts.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.ID("oidc-signin")),
	)
	if got := eval[string](u, `document.getElementById("oidc-signin").textContent`); got != "Sign in with Fake ID" {
		t.Errorf("button %q, want %q", got, "Sign in with Fake ID")
	}
	u.do("sign in with Fake ID",
		chromedp.Click(chromedp.ID("oidc-signin")),
		chromedp.WaitVisible(chromedp.ID("approve")),
	)
	if loc := eval[string](u, `location.origin`); !strings.HasPrefix(loc, "http://localhost:") {
		t.Fatalf("at %s, want the provider's page on localhost", loc)
	}
	u.do("approve at the provider",
		chromedp.Click(chromedp.ID("approve")),
		// Two navigations: the callback, then its page's refresh.
		chromedp.WaitVisible(chromedp.CSS("#user:not(:empty)")),
	)
	if got := eval[string](u, `document.getElementById("user").textContent`); got != "ada" {
		t.Errorf("signed in as %q, want ada", got)
	}
	if got := eval[string](u, `location.href`); got != ts.URL+"/inbox" {
		t.Errorf("at %s, want %s/inbox", got, ts.URL)
	}
	// The cookies are HttpOnly: the page's script sees neither.
	if got := eval[string](u, `document.cookie`); got != "" {
		t.Errorf("document.cookie = %q, want the cookies HttpOnly", got)
	}
	// The session works for the API as for an API-key sign-in.
	if got := eval[float64](u, `fetch("/v1/inbox").then(r => r.status)`); got != 200 {
		t.Errorf("GET /v1/inbox from the page: %v, want 200", got)
	}
}
