package server

import (
	"testing"
	"time"
)

// FuzzOIDCClaims feeds arbitrary payloads to the claims checks and the
// roles mapping, which run on what a verified token carries: they must
// never panic, and a principal they return has an ID.
func FuzzOIDCClaims(f *testing.F) {
	f.Add([]byte(`{"iss":"i","aud":"a","sub":"ada","exp":4102444800,"roles":["traveller"]}`))
	f.Add([]byte(`{"iss":"i","aud":["a","b"],"sub":"ada","exp":4102444800,"realm":{"roles":"x y"}}`))
	f.Add([]byte(`{"iss":"i","aud":"a","sub":"ada","exp":1e400,"roles":[1]}`))
	f.Add([]byte(`{"exp":"soon"}`))
	f.Add([]byte(`[]`))
	v, err := NewOIDC(&OIDCOptions{Issuer: "i", Audience: "a", JWKSURL: "https://id.example.com/jwks", RolesClaim: "realm.roles",
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		p, err := v.principal(payload)
		if err == nil && (p == nil || p.ID == "") {
			t.Fatalf("principal %v without an error", p)
		}
		_, _ = rolesClaim(payload, []string{"roles"})
	})
}
