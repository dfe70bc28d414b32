package server

import (
	"testing"
	"time"
)

// FuzzHistoryCursor: any after value is a cursor or an error, never a
// panic, and a cursor read back makes the same cursor.
func FuzzHistoryCursor(f *testing.F) {
	f.Add(historyKey{time.Unix(1, 5).UTC(), "conv_a", "pause_b"}.cursor())
	f.Add("")
	f.Add("MTIzCmEKYg")
	f.Add("-1\nx\ny")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseHistoryCursor(s)
		if err != nil {
			return
		}
		if k.conv == "" || k.pause == "" {
			t.Fatalf("parseHistoryCursor(%q) = %+v: empty ids", s, k)
		}
		back, err := parseHistoryCursor(k.cursor())
		if err != nil || !back.at.Equal(k.at) || back.conv != k.conv || back.pause != k.pause {
			t.Errorf("cursor %q: %+v read back as %+v, %v", s, k, back, err)
		}
	})
}

// TestHistoryOrder: newest first, then by conversation and pause.
func TestHistoryOrder(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := historyKey{t0.Add(time.Second), "b", "p"}
	b := historyKey{t0, "a", "p"}
	c := historyKey{t0, "a", "q"}
	if !a.before(b) || !b.before(c) || c.before(b) || b.before(b) {
		t.Errorf("order of %v %v %v is wrong", a, b, c)
	}
}
