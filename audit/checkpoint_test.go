package audit_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
)

func TestCheckpoint(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	head := audit.Anchor{Seq: 42, Hash: strings.Repeat("ab", 32)}
	at := time.Date(2026, 5, 1, 12, 0, 0, 5, time.UTC)
	c := audit.NewCheckpoint(key, head, at)
	if err := c.Verify(pub); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := audit.ParseCheckpoint(b)
	if err != nil {
		t.Fatalf("ParseCheckpoint(%s): %v", b, err)
	}
	if back.Anchor != head || !back.Time.Equal(at) || back.Verify(pub) != nil {
		t.Errorf("round trip: %+v", back)
	}
	other := ed25519.NewKeyFromSeed(append(make([]byte, ed25519.SeedSize-1), 1)).Public().(ed25519.PublicKey)
	for name, bad := range map[string]*audit.Checkpoint{
		"other seq":  {Anchor: audit.Anchor{Seq: 41, Hash: head.Hash}, Time: at, Signature: c.Signature},
		"other hash": {Anchor: audit.Anchor{Seq: 42, Hash: strings.Repeat("cd", 32)}, Time: at, Signature: c.Signature},
		"other time": {Anchor: head, Time: at.Add(time.Nanosecond), Signature: c.Signature},
	} {
		if err := bad.Verify(pub); !errors.Is(err, audit.ErrBadCheckpoint) {
			t.Errorf("%s: Verify: %v, want ErrBadCheckpoint", name, err)
		}
	}
	if err := c.Verify(other); !errors.Is(err, audit.ErrBadCheckpoint) {
		t.Errorf("Verify with another key: %v, want ErrBadCheckpoint", err)
	}
	for _, in := range []string{``, `{}`, `[]`, `{"v":2}`, strings.Replace(string(b), `"v":1`, `"v":1,"x":0`, 1),
		strings.Replace(string(b), `"seq":42`, `"seq":0`, 1), strings.Replace(string(b), `"time":"`, `"time":"x`, 1)} {
		if _, err := audit.ParseCheckpoint([]byte(in)); !errors.Is(err, audit.ErrBadCheckpoint) {
			t.Errorf("ParseCheckpoint(%q): %v, want ErrBadCheckpoint", in, err)
		}
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	b, _ := audit.NewCheckpoint(key, audit.Anchor{Seq: 1, Hash: strings.Repeat("0", 64)}, time.Unix(0, 0)).MarshalJSON()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := audit.ParseCheckpoint(data)
		if err != nil {
			return
		}
		_ = c.Verify(key.Public().(ed25519.PublicKey))
		if _, err := c.MarshalJSON(); err != nil {
			t.Fatalf("a parsed checkpoint does not marshal: %v", err)
		}
	})
}
