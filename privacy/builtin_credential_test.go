package privacy

import (
	"strings"
	"testing"
)

// secretsIn returns the SECRET values the default scanner finds in text.
func secretsIn(t *testing.T, text string) []string {
	t.Helper()
	fs, err := NewScanner(&ScannerOptions{Recognizers: Builtins(Secret)}).Scan(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		if f.Type == Secret {
			out = append(out, text[f.Start:f.End])
		}
	}
	return out
}

func TestCredentials(t *testing.T) {
	const (
		bearer  = "eyZ3kQ9vT2mP8xL4nR6sW1aB7cD0fG5h"
		basic   = "YWxhZGRpbjpvcGVuc2VzYW1l"
		openai  = "sk-3kQ9vT2mP8xL4nR6sW1aB7cD0fG5hJ2kL9mN4pQ7"
		proj    = "sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7"
		sendgr  = "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"
		slackap = "xapp-1-A0123BCDEF4-5678901234567-abcdef0123456789abcdef0123456789"
		google  = "ya29.a0AfH6SMBx3kQ9vT2mP8xL4nR6sW1aB7cD0fG5h"
		stripe  = "pk_live_51H8x3kQ9vT2mP8xL4nR6sW1a"
		azure   = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"bearer header", "GET / HTTP/1.1\nAuthorization: Bearer " + bearer + "\nHost: x", []string{bearer}},
		{"basic header", "authorization: Basic " + basic, []string{basic}},
		{"json header", `{"Authorization": "Bearer ` + bearer + `"}`, []string{bearer}},
		{"api key header", "X-API-Key: " + bearer, []string{bearer}},
		{"subscription key", "Ocp-Apim-Subscription-Key: 0123456789abcdef0123456789abcdef", []string{"0123456789abcdef0123456789abcdef"}},
		{"cookie", "Cookie: sessionid=8f14e45fceea167a5a36dedd4bea2543; theme=dark", []string{"sessionid=8f14e45fceea167a5a36dedd4bea2543; theme=dark"}},
		{"set-cookie", "Set-Cookie: JSESSIONID=A1B2C3D4E5F6G7H8I9J0; Path=/; HttpOnly", []string{"JSESSIONID=A1B2C3D4E5F6G7H8I9J0"}},
		{"query token", "https://api.example.com/v1/items?limit=5&access_token=" + bearer + "&page=2", []string{bearer}},
		{"session id param", "see ?session_id=" + bearer, []string{bearer}},
		{"key=value", "client_secret=" + bearer, []string{bearer}},
		{"yaml field", "db_password: hunter22", []string{"hunter22"}},
		{"openai", "use " + openai + " now", []string{openai}},
		{"openai project", "key " + proj, []string{proj}},
		{"sendgrid", sendgr, []string{sendgr}},
		{"slack app", "token " + slackap, []string{slackap}},
		{"google oauth", "Bearer? no: " + google, []string{google}},
		{"stripe publishable", stripe, []string{stripe}},
		{"azure connection string", "AccountName=acct;AccountKey=" + azure + ";EndpointSuffix=core.windows.net", []string{azure}},
		// Not credentials.
		{"low entropy token", "token=aaaaaaaaaaaaaaaaaaaa", nil},
		{"short token", "token=abc123", nil},
		{"placeholder", "api_key=<YOUR_API_KEY> and password=${PASSWORD}", nil},
		{"monkey is no key", "monkey=Qx7Lm2Nv8Rt4Wz6Yb1Kc3Pd5Fg9", nil},
		{"uuid request id", "request_id=550e8400-e29b-41d4-a716-446655440000", nil},
		{"prose colon", "The key point: keep it simple.", nil},
		{"sk in prose", "ask-me-anything sessions", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := secretsIn(t, tc.text)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("in %q got %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func FuzzCredential(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer abcdefgh12345678", "Cookie: a=b; c=d", "?access_token=x&y=1",
		"password=\"hunter22\"", "sk-proj-abc", "SG.a.b", "AccountKey==", "x-api-key:'"} {
		f.Add(s)
	}
	s := NewScanner(&ScannerOptions{Recognizers: Builtins(Secret)})
	f.Fuzz(func(t *testing.T, text string) {
		fs, err := s.Scan(ctx, text)
		if err != nil {
			return
		}
		last := 0
		for _, fd := range fs {
			if fd.Start < last || fd.End <= fd.Start || fd.End > len(text) {
				t.Fatalf("bad finding %+v in %q", fd, text)
			}
			last = fd.End
		}
	})
}
