package server_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

// webRequest sends a request through h with the given cookie (if not
// nil) and extra headers, as "key: value" pairs.
func webRequest(h http.Handler, method, path, body string, cookie *http.Cookie, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == http.MethodPost && strings.HasPrefix(path, "/sign") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ": ")
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// signIn signs in with key and returns the session cookie.
func signIn(t *testing.T, h http.Handler, key string) *http.Cookie {
	t.Helper()
	rec := webRequest(h, "POST", "/signin", url.Values{"key": {key}}.Encode(), nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign in: status %d, want 303\n%s", rec.Code, rec.Body)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == "toolgate_session" {
			return c
		}
	}
	t.Fatalf("sign in: no session cookie in %v", rec.Result().Header["Set-Cookie"])
	return nil
}

func TestSignInCookie(t *testing.T) {
	f := newFixture(t, memory.New())
	for _, tc := range []struct {
		name   string
		tls    bool
		next   string
		wantTo string
	}{
		{"plain", false, "", "/"},
		{"TLS", true, "/inbox?x=1", "/inbox?x=1"},
		{"other host", false, "//evil.example/", "/"},
		{"scheme", false, "https://evil.example/", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/signin", strings.NewReader(url.Values{"key": {approverKey}, "next": {tc.next}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.tls {
				req.TLS = &tls.ConnectionState{}
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.wantTo {
				t.Fatalf("status %d Location %q, want 303 to %q", rec.Code, rec.Header().Get("Location"), tc.wantTo)
			}
			cookies := rec.Result().Cookies()
			if len(cookies) != 1 {
				t.Fatalf("cookies %v, want one", cookies)
			}
			c := cookies[0]
			if c.Name != "toolgate_session" || len(c.Value) < 26 || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure != tc.tls || c.MaxAge <= 0 {
				t.Errorf("cookie %+v: want toolgate_session, a long random value, HttpOnly, SameSite=Strict, Path=/, Secure=%v, a max age", c, tc.tls)
			}
			// The cookie authenticates the pages and the API.
			if rec := webRequest(f.h, "GET", "/inbox", "", c); rec.Code != 200 || !strings.Contains(rec.Body.String(), ">bob<") {
				t.Errorf("GET /inbox with the cookie: %d, want 200 naming bob\n%s", rec.Code, rec.Body)
			}
			if rec := webRequest(f.h, "GET", "/v1/inbox", "", c); rec.Code != 200 {
				t.Errorf("GET /v1/inbox with the cookie: %d, want 200", rec.Code)
			}
		})
	}
}

func TestSignInRefused(t *testing.T) {
	f := newFixture(t, memory.New())
	for _, tc := range []struct{ name, body string }{
		{"unknown key", url.Values{"key": {"not-a-key"}}.Encode()},
		{"empty key", url.Values{"key": {""}}.Encode()},
		{"no key", ""},
		{"hash of a key", url.Values{"key": {server.HashAPIKey(approverKey)}}.Encode()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := webRequest(f.h, "POST", "/signin", tc.body, nil)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", rec.Code)
			}
			if !strings.Contains(rec.Body.String(), `role="alert"`) || !strings.Contains(rec.Body.String(), "That API key is not valid.") {
				t.Errorf("body lacks the error alert:\n%s", rec.Body)
			}
			if c := rec.Result().Cookies(); len(c) != 0 {
				t.Errorf("cookies %v, want none", c)
			}
		})
	}
	t.Run("oversized form", func(t *testing.T) {
		rec := webRequest(f.h, "POST", "/signin", "key="+strings.Repeat("a", 64<<10), nil)
		if rec.Code != http.StatusBadRequest || len(rec.Result().Cookies()) != 0 {
			t.Errorf("status %d cookies %v, want 400 and none", rec.Code, rec.Result().Cookies())
		}
	})
}

func TestSignedOutPages(t *testing.T) {
	f := newFixture(t, memory.New())
	for _, path := range []string{"/", "/inbox", "/conversations/x", "/conversations/x/pauses/y", "/conversations/x/audit"} {
		rec := webRequest(f.h, "GET", path, "", nil)
		if want := "/signin?next=" + url.QueryEscape(path); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
			t.Errorf("GET %s signed out: %d to %q, want 303 to %q", path, rec.Code, rec.Header().Get("Location"), want)
		}
	}
	// An unknown session is no session.
	rec := webRequest(f.h, "GET", "/inbox", "", &http.Cookie{Name: "toolgate_session", Value: "forged"})
	if rec.Code != http.StatusSeeOther {
		t.Errorf("GET /inbox with a forged session: %d, want 303", rec.Code)
	}
	code, out := f.doCookie("GET", "/v1/inbox", &http.Cookie{Name: "toolgate_session", Value: "forged"}, "")
	if code != http.StatusUnauthorized || out["error"] != "unauthorized" {
		t.Errorf("GET /v1/inbox with a forged session: %d %v, want 401 unauthorized", code, out)
	}
}

// doCookie is fixture.do with a cookie instead of an API key.
func (f *fixture) doCookie(method, path string, c *http.Cookie, body string, headers ...string) (int, map[string]any) {
	f.t.Helper()
	rec := webRequest(f.h, method, path, body, c, headers...)
	out := map[string]any{}
	if rec.Header().Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			f.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return rec.Code, out
}

func TestCrossOriginRefused(t *testing.T) {
	f := newFixture(t, memory.New())
	c := signIn(t, f.h, travellerKey)
	for _, tc := range []struct {
		name    string
		headers []string
		want    int
	}{
		{"same origin", []string{"Sec-Fetch-Site: same-origin"}, http.StatusCreated},
		{"no browser headers", nil, http.StatusCreated},
		{"cross-site", []string{"Sec-Fetch-Site: cross-site"}, http.StatusForbidden},
		{"same site, other origin", []string{"Sec-Fetch-Site: same-site"}, http.StatusForbidden},
		{"origin only", []string{"Origin: https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := f.doCookie("POST", "/v1/conversations", c, `{"agent":"flights"}`, tc.headers...)
			if code != tc.want {
				t.Fatalf("status %d %v, want %d", code, out, tc.want)
			}
			if code == http.StatusForbidden && out["error"] != "cross_origin" {
				t.Errorf("error %v, want cross_origin", out["error"])
			}
		})
	}
	// The forms are guarded too: no signing in (login CSRF) or out from
	// another site.
	for _, path := range []string{"/signin", "/signout"} {
		rec := webRequest(f.h, "POST", path, url.Values{"key": {travellerKey}}.Encode(), c, "Sec-Fetch-Site: cross-site")
		if rec.Code != http.StatusForbidden || len(rec.Result().Cookies()) != 0 {
			t.Errorf("cross-site POST %s: %d, cookies %v; want 403 and none", path, rec.Code, rec.Result().Cookies())
		}
	}
	// Safe methods pass: pages open from links on other sites.
	if rec := webRequest(f.h, "GET", "/signin", "", nil, "Sec-Fetch-Site: cross-site"); rec.Code != 200 {
		t.Errorf("cross-site GET /signin: %d, want 200", rec.Code)
	}
}

// inlineScript matches a script element without a src attribute, and
// inlineHandler an event handler or style attribute.
var (
	scriptTag     = regexp.MustCompile(`<script[^>]*>`)
	inlineHandler = regexp.MustCompile(`(?i)\s(on[a-z]+|style)\s*=`)
)

func TestPagesHeaders(t *testing.T) {
	f := newFixture(t, memory.New())
	conv, pause := f.pause(travellerKey)
	c := signIn(t, f.h, travellerKey)
	for _, path := range []string{"/", "/signin?next=/inbox", "/inbox", "/conversations/" + conv, "/conversations/" + conv + "/pauses/" + pause,
		"/conversations/" + conv + "/audit", "/conversations/nope", "/static/app.js", "/static/app.css"} {
		t.Run(path, func(t *testing.T) {
			cookie := c
			if strings.HasPrefix(path, "/signin") {
				cookie = nil
			}
			rec := webRequest(f.h, "GET", path, "", cookie)
			if rec.Code != 200 && rec.Code != 404 {
				t.Fatalf("status %d, want 200 (404 for nope)", rec.Code)
			}
			h := rec.Header()
			if got := h.Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", h.Get("X-Content-Type-Options"))
			}
			if strings.HasPrefix(path, "/static/") {
				return
			}
			if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if h.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", h.Get("Cache-Control"))
			}
			body := rec.Body.String()
			for _, tag := range scriptTag.FindAllString(body, -1) {
				if !strings.Contains(tag, ` src="/static/`) {
					t.Errorf("inline script %s", tag)
				}
			}
			if m := inlineHandler.FindString(body); m != "" {
				t.Errorf("inline handler or style %q", m)
			}
		})
	}
	if rec := webRequest(f.h, "GET", "/conversations/nope", "", c); rec.Code != 404 || !strings.Contains(rec.Body.String(), "no such conversation") {
		t.Errorf("unknown conversation: %d, want 404 with a message\n%s", rec.Code, rec.Body)
	}
	// Another principal's conversation is not found either.
	other := signIn(t, f.h, guestKey)
	if rec := webRequest(f.h, "GET", "/conversations/"+conv, "", other); rec.Code != 404 {
		t.Errorf("another's conversation: %d, want 404", rec.Code)
	}
}

func TestStaticFiles(t *testing.T) {
	f := newFixture(t, memory.New())
	for path, want := range map[string]int{
		"/static/app.js":      200,
		"/static/app.css":     200,
		"/static/":            404,
		"/static/nope.js":     404,
		"/static/../web.go":   404,
		"/static/%2e%2e/x.go": 404,
	} {
		rec := webRequest(f.h, "GET", path, "", nil)
		// The mux cleans paths with dot segments by redirecting first.
		if rec.Code == http.StatusMovedPermanently {
			rec = webRequest(f.h, "GET", rec.Header().Get("Location"), "", nil)
		}
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d", path, rec.Code, want)
		}
	}
	rec := webRequest(f.h, "GET", "/static/app.js", "", nil)
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("app.js Content-Type %q", ct)
	}
	if strings.Contains(rec.Body.String(), "innerHTML") || strings.Contains(rec.Body.String(), "insertAdjacentHTML") || strings.Contains(rec.Body.String(), "document.write") {
		t.Error("app.js writes HTML; it must build the DOM with textContent")
	}
}

func TestPagesEscapeHostileData(t *testing.T) {
	const hostile = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	client := toolgate.NewClient(flightdemo.Model(), (&flightdemo.Tools{}).Tools(), &toolgate.ClientOptions{Store: memory.New()})
	srv, err := server.New(&server.Config{
		Agents:  map[string]*server.Agent{"flights": {Client: client}},
		APIKeys: []server.APIKey{{SHA256: server.HashAPIKey("k"), Principal: toolgate.Principal{ID: hostile, Roles: []string{hostile}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := signIn(t, srv, "k")
	for _, path := range []string{"/", "/inbox", "/conversations/" + url.PathEscape(hostile) + "/pauses/" + url.PathEscape(hostile)} {
		rec := webRequest(srv, "GET", path, "", c)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		for _, bad := range []string{"<script>alert", "<img", `"'>`} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: the page holds %q unescaped", path, bad)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("GET %s: the page lacks the escaped principal", path)
		}
	}
	// A hostile next parameter stays an attribute value.
	rec := webRequest(srv, "GET", "/signin?next="+url.QueryEscape(`/"><script>alert(3)</script>`), "", nil)
	if strings.Contains(rec.Body.String(), "<script>alert(3)") {
		t.Errorf("the sign-in page holds the next parameter unescaped:\n%s", rec.Body)
	}
}

func TestSignOut(t *testing.T) {
	f := newFixture(t, memory.New())
	c := signIn(t, f.h, approverKey)
	rec := webRequest(f.h, "POST", "/signout", "", c)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/signin" {
		t.Fatalf("sign out: %d to %q, want 303 to /signin", rec.Code, rec.Header().Get("Location"))
	}
	cleared := rec.Result().Cookies()
	if len(cleared) != 1 || cleared[0].Name != "toolgate_session" || cleared[0].MaxAge >= 0 || cleared[0].Value != "" {
		t.Errorf("sign out cookies %+v, want the session cookie cleared", cleared)
	}
	if code, _ := f.doCookie("GET", "/v1/inbox", c, ""); code != http.StatusUnauthorized {
		t.Errorf("the old cookie after signing out: %d, want 401", code)
	}
}

func TestSessionsPerPrincipal(t *testing.T) {
	f := newFixture(t, memory.New())
	first := signIn(t, f.h, approverKey)
	var last *http.Cookie
	for range 16 {
		last = signIn(t, f.h, approverKey)
	}
	if code, _ := f.doCookie("GET", "/v1/inbox", first, ""); code != http.StatusUnauthorized {
		t.Errorf("the first of 17 sessions: %d, want 401 (ended)", code)
	}
	if code, _ := f.doCookie("GET", "/v1/inbox", last, ""); code != 200 {
		t.Errorf("the last session: %d, want 200", code)
	}
	other := signIn(t, f.h, approver2Key)
	if code, _ := f.doCookie("GET", "/v1/inbox", other, ""); code != 200 {
		t.Errorf("another principal's session: %d, want 200", code)
	}
}

func TestSessionExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := toolgate.NewClient(flightdemo.Model(), nil, &toolgate.ClientOptions{Store: memory.New()})
		srv, err := server.New(&server.Config{
			Agents:     map[string]*server.Agent{"flights": {Client: client}},
			APIKeys:    []server.APIKey{{SHA256: server.HashAPIKey("k"), Principal: toolgate.Principal{ID: "ada"}}},
			SessionTTL: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		c := signIn(t, srv, "k")
		if c.MaxAge != 3600 {
			t.Errorf("cookie max age %d, want 3600", c.MaxAge)
		}
		time.Sleep(time.Hour - time.Second)
		if rec := webRequest(srv, "GET", "/inbox", "", c); rec.Code != 200 {
			t.Fatalf("before expiry: %d, want 200", rec.Code)
		}
		time.Sleep(time.Second)
		if rec := webRequest(srv, "GET", "/inbox", "", c); rec.Code != http.StatusSeeOther {
			t.Errorf("page after expiry: %d, want 303 to the sign-in page", rec.Code)
		}
		if rec := webRequest(srv, "GET", "/v1/inbox", "", c); rec.Code != http.StatusUnauthorized {
			t.Errorf("API after expiry: %d, want 401", rec.Code)
		}
	})
}

func TestSessionTTLNegative(t *testing.T) {
	client := toolgate.NewClient(flightdemo.Model(), nil, nil)
	_, err := server.New(&server.Config{Agents: map[string]*server.Agent{"a": {Client: client}}, SessionTTL: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "session_ttl") {
		t.Errorf("New: %v, want a session_ttl error", err)
	}
}

func TestBearerBeatsCookie(t *testing.T) {
	f := newFixture(t, memory.New())
	c := signIn(t, f.h, approverKey)
	// A request with both runs as the API key's principal.
	rec := webRequest(f.h, "POST", "/v1/conversations", `{"agent":"flights"}`, c, "Authorization: Bearer "+travellerKey)
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"owner":"ada"`) {
		t.Errorf("status %d %s, want 201 owned by ada", rec.Code, rec.Body)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "/",
		"/":                             "/",
		"/inbox":                        "/inbox",
		"/conversations/a?b=c":          "/conversations/a?b=c",
		"inbox":                         "/",
		"//evil.example":                "/",
		"/\\evil.example":               "/",
		"https://evil.example/":         "/",
		"javascript:alert(1)":           "/",
		"/\x00":                         "/",
		"/a\nb":                         "/",
		"/" + strings.Repeat("a", 3000): "/",
	} {
		if got := server.SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPageRoutesDocumented checks that docs/API.md lists every page.
func TestPageRoutesDocumented(t *testing.T) {
	f := newFixture(t, memory.New())
	doc, err := readFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	routes := f.srv.PageRoutes()
	if len(routes) == 0 {
		t.Fatal("no page routes")
	}
	for _, r := range routes {
		if !strings.Contains(string(doc), "`"+strings.Replace(r, "{$}", "", 1)+"`") {
			t.Errorf("page %q is not in docs/API.md", r)
		}
	}
}

// TestFavicon: the icon is served without a session, as SVG, cacheable,
// revalidated by its ETag.
func TestFavicon(t *testing.T) {
	f := newFixture(t, memory.New())
	rec := webRequest(f.h, "GET", "/favicon.ico", "", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(rec.Body.String(), "<svg") {
		t.Fatalf("GET /favicon.ico: %d %q %.40q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "max-age=") || strings.Contains(cc, "no-store") {
		t.Errorf("Cache-Control %q, want a max-age", cc)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("the icon lacks the pages' security headers: %v", rec.Header())
	}
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if rec := webRequest(f.h, "GET", "/favicon.ico", "", nil, "If-None-Match: "+etag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("revalidation: %d with %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
	if rec := webRequest(f.h, "POST", "/favicon.ico", "", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /favicon.ico: %d, want 405", rec.Code)
	}
}

// TestPagesFollowRoles: the Inbox link only for those who decide; an
// approver who starts no conversation is sent to the inbox; the chat
// page of a paused conversation opens to the approver who may decide it
// and nobody else.
func TestPagesFollowRoles(t *testing.T) {
	f := newFixture(t, memory.New())
	conv, _ := f.pause(travellerKey)
	traveller, approver, guest := signIn(t, f.h, travellerKey), signIn(t, f.h, approverKey), signIn(t, f.h, guestKey)
	rec := webRequest(f.h, "GET", "/", "", traveller)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), `href="/inbox"`) {
		t.Errorf("the traveller's page: %d, with an Inbox link: %v", rec.Code, strings.Contains(rec.Body.String(), `href="/inbox"`))
	}
	rec = webRequest(f.h, "GET", "/", "", approver)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/inbox" {
		t.Errorf("the approver's start page: %d to %q, want 303 to /inbox", rec.Code, rec.Header().Get("Location"))
	}
	rec = webRequest(f.h, "GET", "/inbox", "", approver)
	if !strings.Contains(rec.Body.String(), `href="/inbox"`) {
		t.Error("the approver's pages have no Inbox link")
	}
	for _, c := range []struct {
		who  *http.Cookie
		want int
		post bool
	}{{traveller, 200, true}, {approver, 200, false}, {guest, 404, false}} {
		rec := webRequest(f.h, "GET", "/conversations/"+conv, "", c.who)
		if rec.Code != c.want {
			t.Errorf("chat page for %s: %d, want %d", c.who.Value[:4], rec.Code, c.want)
		}
		if got := strings.Contains(rec.Body.String(), `id="send"`); rec.Code == 200 && got != c.post {
			t.Errorf("chat page: message box %v, want %v", got, c.post)
		}
	}
}
