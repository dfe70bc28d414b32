// Package confcheck holds the checks of the approval service's settings
// that both package server (on a [server.Config] built in Go) and package
// serve (on a configuration file, with the line of each problem) apply, so
// that the two report the same problems.
package confcheck

import (
	"fmt"
	"net/url"
	"time"
)

// LoginCallbackPath is the path of the OIDC login's redirect URL.
const LoginCallbackPath = "/signin/oidc/callback"

// HTTPURL reports whether s is an absolute http or https URL with a host.
func HTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// RedirectProblem says what is wrong with the redirect URL of the OIDC
// login; "" when nothing.
func RedirectProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "required"
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "not an http or https URL"
	case u.Path != LoginCallbackPath || u.RawQuery != "" || u.Fragment != "":
		return "want the address of " + LoginCallbackPath + ", such as https://toolgate.example.com" + LoginCallbackPath
	}
	return ""
}

// ScopeProblem says what is wrong with an OAuth scope; "" when nothing.
func ScopeProblem(s string) string {
	if s == "" {
		return "empty"
	}
	for _, c := range s {
		// RFC 6749, 3.3: %x21 / %x23-5B / %x5D-7E.
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "not a scope token (printable ASCII, no spaces, quotes or backslashes)"
		}
	}
	return ""
}

// FieldProblem is a problem of one field of a setting: Field is its key
// in a configuration file, such as "sticky_max".
type FieldProblem struct{ Field, Msg string }

// ApprovalRule returns what is wrong with the numbers of an approval rule:
// the count of approvers it needs and the longest sticky grant.
func ApprovalRule(approvers int, stickyMax time.Duration) []FieldProblem {
	var out []FieldProblem
	if approvers < 0 || approvers > 2 {
		out = append(out, FieldProblem{"approvers", fmt.Sprintf("approvers %d: want 1 or 2", approvers)})
	}
	if stickyMax < 0 {
		out = append(out, FieldProblem{"sticky_max", fmt.Sprintf("sticky_max %v is negative", stickyMax)})
	}
	if stickyMax > 0 && approvers == 2 {
		out = append(out, FieldProblem{"sticky_max", "sticky_max with approvers 2: a sticky grant would let one approval stand in for two"})
	}
	return out
}
