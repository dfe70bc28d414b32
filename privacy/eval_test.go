package privacy

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// devSet is the labelled dev set, outside the repository.
const devSet = "../../shared/data/pii/generated_large.json"

func TestEvaluateDevSet(t *testing.T) {
	f, err := os.Open(devSet)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("dev set %s not present; it lives in the shared data folder next to the repository", devSet)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Evaluate(f, NewScanner(nil))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	t.Logf("\n%s", b.String())
	for _, typ := range []EntityType{CreditCard, IBANCode} {
		if s := rep.Score(typ); s.F2 < 0.95 {
			t.Errorf("%s: F2 %.3f, want >= 0.95", typ, s.F2)
		}
	}
}
