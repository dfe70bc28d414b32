package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/server"
)

// subjectTokens authenticates tokens "eyJ.SUBJECT.sig" as SUBJECT of
// issuer iss, a wirer.
type subjectTokens struct{ iss string }

func (v subjectTokens) VerifyToken(_ context.Context, token string) (*toolgate.Principal, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[1] == "" {
		return nil, errors.New("not a token")
	}
	return &toolgate.Principal{ID: parts[1], Roles: []string{"wirer"}, Attributes: map[string]string{"iss": v.iss}}, nil
}

// Case-insensitivity is a property of an identity source: under a
// two-person rule, "Bob" and "bob" of an issuer configured so are one
// person, while the API keys, not configured so, keep "WES" and "wes"
// apart.
func TestIdentitySourcesCaseInsensitive(t *testing.T) {
	const iss = "https://idp.example"
	f := newAtkFixture(t, atkOptions{configure: func(c *server.Config) {
		c.Agents["ops"].Approvals[1].Approvers = 2
		c.APIKeys = append(c.APIKeys, server.APIKey{SHA256: server.HashAPIKey("key-atk-WES"), Principal: toolgate.Principal{ID: "WES", Roles: []string{"wirer"}}})
		c.Tokens = subjectTokens{iss: iss}
		c.IdentitySources = map[string]server.IdentitySource{iss: {CaseInsensitive: true}}
	}})
	allow := `{"decisions":[{"key":"c1","verdict":"allow"}]}`

	conv, pause := f.paused(call("c1", "wire", `{"to":"x"}`))
	f.must(202, "POST", decisionsPath(conv, pause), "eyJ.Bob.sig", allow)
	if code, out := f.decide("eyJ.bob.sig", conv, pause, allow); code != 409 || out["error"] != "same_approver" {
		t.Fatalf("bob after Bob of a case-insensitive issuer: %d %v, want 409 same_approver", code, out)
	}
	f.noneRan("wire")
	f.noRecord(conv, "c1", audit.KindDecided)

	conv, pause = f.paused(call("c1", "wire", `{"to":"y"}`))
	f.must(202, "POST", decisionsPath(conv, pause), atkWirer, allow)
	f.must(200, "POST", decisionsPath(conv, pause), "key-atk-WES", allow)
	if got := f.ranWith("wire"); len(got) != 1 {
		t.Errorf("wire ran %d times, want once: WES and wes of the API keys are two people", len(got))
	}
}
