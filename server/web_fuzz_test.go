package server_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// FuzzSafeNext checks that the sign-in form's "next" parameter never leads
// off the server: the result is the input unchanged or "/", and always a
// path without a scheme or host.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"", "/", "/inbox", "//evil", "/\\evil", "https://x/", "/a?b=c#d", "/%2f%2fevil", "/\t/evil", "\\\\evil"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := server.SafeNext(next)
		if got != "/" && got != next {
			t.Fatalf("SafeNext(%q) = %q, want the input or /", next, got)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") {
			t.Fatalf("SafeNext(%q) = %q, not a path on this server", next, got)
		}
		u, err := url.Parse(got)
		if err != nil || u.Scheme != "" || u.Host != "" {
			t.Fatalf("SafeNext(%q) = %q parses as %+v, %v", next, got, u, err)
		}
	})
}
