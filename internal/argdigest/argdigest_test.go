package argdigest_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/argdigest"
)

// TestVectors pins the digest: a change to any of these breaks every
// stored grant and the digests of every audit log. The digests were
// computed with sha256sum over the canonical text.
func TestVectors(t *testing.T) {
	for _, tc := range []struct{ args, canonical, digest string }{
		{`{"flight":"VX205"}`, `{"flight":"VX205"}`, "sha256:492a3f94503c9c6ca1e372bf32dd4335e8081475405b8b14798f93e71b0abc9d"},
		{`{ "seat" : "12A", "flight": "VX205" }`, `{"flight":"VX205","seat":"12A"}`, ""},
		{`{"n":1.0,"m":1e2,"k":-0}`, `{"k":0,"m":100,"n":1}`, "sha256:cd6aeaf7795e3cff9e2758186ed5552a960ed5bc0ce189d65115dfe1f8ea5b29"},
		{`{"s":"\u00e9\u0041","t":"\u003c"}`, `{"s":"éA","t":"<"}`, ""},
		{`{"b":[3,{"z":1,"a":2}],"a":null}`, `{"a":null,"b":[3,{"a":2,"z":1}]}`, ""},
		{`{"a":1,"a":2}`, `{"a":1,"a":2}`, ""}, // repeated names: as they are
		{`not json`, `not json`, ""},
		{``, ``, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	} {
		if got := string(argdigest.Canonical([]byte(tc.args))); got != tc.canonical {
			t.Errorf("Canonical(%q) = %q, want %q", tc.args, got, tc.canonical)
		}
		if tc.digest != "" {
			if got := argdigest.Digest([]byte(tc.args)); got != tc.digest {
				t.Errorf("Digest(%q) = %s, want %s", tc.args, got, tc.digest)
			}
		}
		if d := argdigest.Digest([]byte(tc.args)); !argdigest.Current(d) {
			t.Errorf("Current(%s) = false", d)
		}
	}
	for _, d := range []string{"", "ae9c0c2b", "sha256:AE9C0C2B5E0A3C0CB41E0BB2D5E2D6E8BB4E1C9D50CCDD1CD19BFF0E46C1AB3F", "sha256:zz"} {
		if argdigest.Current(d) {
			t.Errorf("Current(%q) = true, want false", d)
		}
	}
}

// FuzzCanonical: any arguments digest without panicking, the canonical
// form of a canonical form is itself, and a digest is always current.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,"x"]}`, `{`, ``, `"\ud800"`, `{"a":1,"a":2}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		c := argdigest.Canonical(args)
		if again := argdigest.Canonical(c); string(again) != string(c) {
			t.Errorf("Canonical(%q) = %q, but Canonical of that is %q", args, c, again)
		}
		if d := argdigest.Digest(args); !argdigest.Current(d) || d != argdigest.Digest(c) {
			t.Errorf("Digest(%q) = %s, not current or not the canonical form's", args, d)
		}
	})
}
