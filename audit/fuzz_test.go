package audit_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/audit"
)

// FuzzRecord decodes arbitrary bytes as a stored record and verifies a
// one-record log made of it. Decoding must either fail with a *RecordError
// or give a record whose JSON form decodes back to it; Verify must either
// accept the record or name a problem with it; nothing may panic.
func FuzzRecord(f *testing.F) {
	for i := range 3 {
		r := sample(i)
		if err := audit.Seal(audit.Anchor{}, r); err != nil {
			f.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// An unsealed record, as a log that seals after commit holds it.
	if b, err := json.Marshal(sample(4)); err == nil {
		f.Add(b)
	} else {
		f.Fatal(err)
	}
	v := vectorRecord()
	v.Hash = v.ComputeHash()
	b, _ := json.Marshal(v)
	f.Add(b)
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"v":1}`, `{"v":2,"seq":1}`, `{"v":1e400}`, `{"v":1,"v":1}`,
		`{"v":1,"seq":1,"time":"0000-01-01T00:00:00.000000000Z","kind":"requested","actor":{"source":"system"},"hash":"` + vectorHash + `"}`,
		`{"v":1,"seq":18446744073709551615,"time":"9999-12-31T23:59:59.999999999Z","kind":"expired","actor":{"id":"\u0000","source":"rule"},"hash":"` + vectorHash + `"}`,
		"{\"v\":1,\"tool\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r audit.Record
		if err := r.UnmarshalJSON(data); err != nil {
			var re *audit.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("UnmarshalJSON: got error %v, want a *RecordError", err)
			}
			return
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		var back audit.Record
		if err := back.UnmarshalJSON(again); err != nil {
			t.Fatalf("a decoded record's JSON %s does not decode: %v", again, err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Errorf("a decoded record changes through JSON (-first +again):\n%s", diff)
		}
		rep, err := audit.Verify(t.Context(), sliceReader{r}, nil)
		if err != nil {
			var re *audit.RecordError
			if !errors.As(err, &re) || re.Seq != 1 {
				t.Fatalf("Verify: got error %v, want nil or a *RecordError at record 1", err)
			}
			return
		}
		if r.Unsealed() {
			// Committed but not sealed: counted apart, in no chain.
			if rep.Records != 0 || rep.Unsealed != 1 {
				t.Errorf("Verify of one unsealed record: %+v, want it counted as unsealed", rep)
			}
			return
		}
		if r.Seq != 1 || r.PrevHash != "" || r.ComputeHash() != r.Hash || rep.Unsealed != 0 {
			t.Errorf("Verify accepted record %+v as a log's first", r)
		}
	})
}
