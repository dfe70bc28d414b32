package storerows

import (
	"errors"
	"testing"

	"github.com/toolgate/toolgate"
)

func TestMessages(t *testing.T) {
	var m Messages
	if err := m.Add(0, FormatJSON, []byte(`{"role":"user","text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		seq, format int64
		body        string
	}{
		{"gap", 2, FormatJSON, `{"role":"user","text":"x"}`},
		{"format", 1, 9, `{"role":"user","text":"x"}`},
		{"body", 1, FormatJSON, `{"role":"robot"}`},
		{"not json", 1, FormatJSON, `{`},
	} {
		if err := m.Add(tc.seq, tc.format, []byte(tc.body)); !errors.Is(err, toolgate.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
	if len(m.List()) != 1 {
		t.Errorf("bad rows were kept: %d messages", len(m.List()))
	}
	if err := m.ScanError(errors.New("x")); !errors.Is(err, toolgate.ErrCorrupt) {
		t.Errorf("ScanError: %v", err)
	}
}

func TestPause(t *testing.T) {
	var pr toolgate.PauseRecord
	if err := Pause(&pr, []byte(`["a","#1"]`), 1700000000, 123); err != nil || len(pr.Awaiting) != 2 || pr.CreatedAt.Nanosecond() != 123 {
		t.Fatalf("Pause: %v %+v", err, pr)
	}
	for _, tc := range []struct {
		awaiting string
		nanos    int64
	}{{`{`, 0}, {`[]`, -1}, {`[]`, 1e9}} {
		if err := Pause(&toolgate.PauseRecord{}, []byte(tc.awaiting), 0, tc.nanos); !errors.Is(err, toolgate.ErrCorrupt) {
			t.Errorf("Pause(%s, %d): %v, want ErrCorrupt", tc.awaiting, tc.nanos, err)
		}
	}
}
