package privacy

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

// devSet is the labelled dev set, outside the repository.
const devSet = "../../shared/data/pii/generated_large.json"

// heldOut reports whether a dev-set template is held out: tuning looks at
// the other templates only, so these sentences are unseen in form as well
// as in values.
func heldOut(templateID int) bool { return templateID%5 == 2 }

// devSplit reads the dev set and returns it whole, the tuning part and the
// held-out part, each as JSON. It fails the test when CI is set and the
// file is absent, and skips otherwise.
func devSplit(t *testing.T) (all, tune, held string) {
	t.Helper()
	b, err := os.ReadFile(devSet)
	if errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("CI") != "" {
			t.Fatalf("dev set %s is absent; CI needs it", devSet)
		}
		t.Skipf("dev set %s not present; it lives in the shared data folder next to the repository", devSet)
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	var a, h []json.RawMessage
	for _, r := range recs {
		var meta struct {
			TemplateID int `json:"template_id"`
		}
		if err := json.Unmarshal(r, &meta); err != nil {
			t.Fatal(err)
		}
		if heldOut(meta.TemplateID) {
			h = append(h, r)
		} else {
			a = append(a, r)
		}
	}
	enc := func(v []json.RawMessage) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return string(b), enc(a), enc(h)
}

func evalString(t *testing.T, data string, opts *EvalOptions) *Report {
	t.Helper()
	rep, err := Evaluate(strings.NewReader(data), NewScanner(nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// devThresholds are the lowest F2 scores accepted on the dev set, for
// every type the default scanner claims that the dev set labels, and for
// the type-agnostic score ("ANY"). .ci/run checks the same ones through
// toolgate eval pii.
var devThresholds = map[EntityType]float64{
	"ANY": 0.93, Person: 0.91, Address: 0.93, Location: 0.95, Organization: 0.67, DateTime: 0.99, Title: 0.89,
	CreditCard: 0.99, PhoneNumber: 0.98, EmailAddress: 0.99, USSSN: 0.99, IBANCode: 0.99, IPAddress: 0.99, DomainName: 0.99,
}

// heldOutThresholds guard the held-out templates against regressions, just
// below the scores reached (see docs/PRIVACY.md).
var heldOutThresholds = map[EntityType]float64{
	"ANY": 0.87, Person: 0.87, Address: 0.87, Location: 0.80, Organization: 0.42, CreditCard: 0.99, PhoneNumber: 0.94, EmailAddress: 0.99,
	IBANCode: 0.99, IPAddress: 0.99, DateTime: 0.99,
}

func TestEvaluateDevSet(t *testing.T) {
	all, tune, held := devSplit(t)
	for _, part := range []struct {
		name, data string
		min        map[EntityType]float64
	}{{"full dev set", all, devThresholds}, {"tuning templates", tune, nil}, {"held-out templates", held, heldOutThresholds}} {
		rep := evalString(t, part.data, nil)
		var b strings.Builder
		rep.WriteText(&b)
		t.Logf("%s:\n%s", part.name, b.String())
		for typ, min := range part.min {
			s := &rep.Agnostic
			if typ != "ANY" {
				s = rep.Score(typ)
			}
			if s == nil || !(s.F2 >= min) {
				t.Errorf("%s: %s F2 below %.2f", part.name, typ, min)
			}
		}
	}
}

// TestEvaluateScoring checks the scoring on hand-made records: every
// labelled type is scored, predictions of unlabelled types are listed
// apart, labels can be mapped, bad data is refused.
func TestEvaluateScoring(t *testing.T) {
	data := `[{"full_text":"Mail ann@example.com or call Anna Schmidt.","spans":[
		{"entity_type":"EMAIL_ADDRESS","start_position":5,"end_position":20},
		{"entity_type":"PER","start_position":29,"end_position":41},
		{"entity_type":"BADGE","start_position":0,"end_position":4}]},
		{"full_text":"nothing here","spans":[]}]`
	rep := evalString(t, data, nil)
	if s := rep.Score("BADGE"); s == nil || s.FN != 1 || s.TP != 0 || s.F2 != 0 || !math.IsNaN(s.Precision) {
		t.Errorf("BADGE (never predicted) = %+v, want one miss, F2 0, precision n/a", s)
	}
	if s := rep.Score(Person); s == nil || s.FP != 1 || s.Support() != 0 || !math.IsNaN(s.F2) || !slicesContainType(rep.Unlabelled, Person) {
		t.Errorf("PERSON (not labelled) = %+v, want an unlabelled false positive with F2 n/a", s)
	}
	if rep.Agnostic.TP != 2 || rep.Agnostic.FN != 1 {
		t.Errorf("type-agnostic = %+v, want 2 matched, 1 missed", rep.Agnostic)
	}
	mapped := evalString(t, data, &EvalOptions{Labels: map[string]EntityType{"PER": Person, "BADGE": ""}})
	if s := mapped.Score(Person); s == nil || s.TP != 1 || s.F2 != 1 {
		t.Errorf("PER mapped to PERSON = %+v, want one match", s)
	}
	if mapped.Score("BADGE") != nil {
		t.Errorf("BADGE mapped to nothing is still scored")
	}
	for _, bad := range []string{`{}`, `[]`, `[{"text":"x"}]`, `[{"full_text":"ab","spans":[{"entity_type":"X","start_position":1,"end_position":5}]}]`,
		`[{"full_text":"ab","spans":[{"start_position":0,"end_position":1}]}]`, `not json`} {
		if _, err := Evaluate(strings.NewReader(bad), NewScanner(nil), nil); !errors.Is(err, ErrEvalData) {
			t.Errorf("Evaluate(%s) = %v, want ErrEvalData", bad, err)
		}
	}
}

func slicesContainType(ts []TypeScore, t EntityType) bool {
	for _, s := range ts {
		if s.Type == t {
			return true
		}
	}
	return false
}

func FuzzEvaluate(f *testing.F) {
	f.Add(`[{"full_text":"mail ann@example.com","spans":[{"entity_type":"EMAIL_ADDRESS","start_position":5,"end_position":20}]}]`)
	f.Add(`[{"full_text":"é","spans":[{"entity_type":"X","start_position":0,"end_position":1}]}]`)
	f.Add(`[{"full_text":null}]`)
	f.Add(`{}`)
	s := NewScanner(nil)
	f.Fuzz(func(t *testing.T, data string) {
		rep, err := Evaluate(strings.NewReader(data), s, nil)
		if err != nil {
			return
		}
		for _, ts := range append(rep.Types, rep.Unlabelled...) {
			if ts.TP < 0 || ts.FP < 0 || ts.FN < 0 || ts.TP+ts.FP+ts.FN == 0 {
				t.Fatalf("bad score %+v", ts)
			}
		}
		tr := &rep.Tokens
		if a := tr.Agnostic; a.TP < 0 || a.FP < 0 || a.FN < 0 || a.TP+a.FP+a.FN > tr.Count || tr.Overall.TP > a.TP {
			t.Fatalf("bad token scores %+v", tr)
		}
	})
}

// TestEvaluateTokens checks the token-level scores on a record whose
// tokens can be counted by hand: a name found in part, a place found in
// part, a word of an unlabelled type and a labelled place predicted with
// another type.
func TestEvaluateTokens(t *testing.T) {
	rule := func(typ EntityType, re string) Recognizer {
		return &Rule{Type: typ, Pattern: regexp.MustCompile(re)}
	}
	s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{
		rule(Person, `Zoë Schmidt|Ben`), rule(Location, `Paris`), rule(Age, `met`), rule(Organization, `France`),
	}})
	// Tokens: Zoë Schmidt met Ben Lee in Paris , France . (10); labelled:
	// PERSON Zoë Schmidt, PERSON Ben Lee, LOCATION Paris , France.
	data := `[{"full_text":"Zoë Schmidt met Ben Lee in Paris, France.","spans":[
		{"entity_type":"PERSON","start_position":0,"end_position":11},
		{"entity_type":"PERSON","start_position":16,"end_position":23},
		{"entity_type":"LOCATION","start_position":27,"end_position":40}]}]`
	rep, err := Evaluate(strings.NewReader(data), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &rep.Tokens
	if tr.Count != 10 {
		t.Errorf("Count = %d, want 10", tr.Count)
	}
	for _, want := range []TypeScore{
		{Type: Person, TP: 3, FN: 1}, {Type: Location, TP: 1, FN: 2}, {Type: Age, FP: 1}, {Type: Organization, FP: 1},
	} {
		got := tr.Score(want.Type)
		if got == nil || got.TP != want.TP || got.FP != want.FP || got.FN != want.FN {
			t.Errorf("token score of %s = %+v, want TP %d FP %d FN %d", want.Type, got, want.TP, want.FP, want.FN)
		}
	}
	if !slicesContainType(tr.Unlabelled, Age) || slicesContainType(tr.Unlabelled, Person) {
		t.Errorf("token Unlabelled = %+v, want AGE and ORGANIZATION only", tr.Unlabelled)
	}
	if a := tr.Agnostic; a.TP != 5 || a.FP != 1 || a.FN != 2 {
		t.Errorf("token Agnostic = %+v, want TP 5 FP 1 FN 2", a)
	}
	if o := tr.Overall; o.TP != 4 || o.FP != 2 || o.FN != 3 {
		t.Errorf("token Overall = %+v, want TP 4 FP 2 FN 3", o)
	}
	p, r := 5.0/6, 5.0/7
	if f2 := 5 * p * r / (4*p + r); math.Abs(tr.Agnostic.F2-f2) > 1e-12 {
		t.Errorf("token Agnostic F2 = %v, want %v", tr.Agnostic.F2, f2)
	}
	// The span scores are unchanged by the token scores: only Zoë Schmidt
	// matches a labelled span.
	if rep.Agnostic.TP != 1 || rep.Agnostic.FN != 2 {
		t.Errorf("span Agnostic = %+v, want 1 matched, 2 missed", rep.Agnostic)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "token level") || !strings.Contains(out, "10 tokens") {
		t.Errorf("WriteText lacks the token table:\n%s", out)
	}
}
