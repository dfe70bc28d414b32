package server

import "testing"

// FuzzIdempotencyKey: a key is accepted exactly when it is 1 to
// MaxIdempotencyKey bytes of visible ASCII.
func FuzzIdempotencyKey(f *testing.F) {
	for _, k := range []string{"", "k", "6f1c2a9e-4f1d-4c55-9f3a-2b8e7d0c1a44", "a b", "clé", "\x00", string(make([]byte, 256))} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		want := len(k) >= 1 && len(k) <= MaxIdempotencyKey
		for _, b := range []byte(k) {
			if b <= ' ' || b >= 0x7f {
				want = false
			}
		}
		if got := validIdempotencyKey(k); got != want {
			t.Errorf("validIdempotencyKey(%q) = %v, want %v", k, got, want)
		}
	})
}
