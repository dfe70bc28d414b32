package privacy

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
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

func TestEvaluateDevSet(t *testing.T) {
	all, tune, held := devSplit(t)
	for _, part := range []struct{ name, data string }{{"full dev set", all}, {"tuning templates", tune}, {"held-out templates", held}} {
		rep := evalString(t, part.data, nil)
		var b strings.Builder
		rep.WriteText(&b)
		t.Logf("%s:\n%s", part.name, b.String())
	}
}
