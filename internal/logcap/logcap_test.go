package logcap_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/logcap"
)

func TestCut(t *testing.T) {
	if got := logcap.String("short"); got != "short" {
		t.Errorf("String(short) = %q", got)
	}
	long := strings.Repeat("é", 10_000)
	got := logcap.String(long)
	if len(got) > logcap.MaxString+len("…") || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("String(long) = %q: want at most %d bytes, valid, marked", got, logcap.MaxString)
	}
	if got := logcap.Error(errors.New(long)); len(got) > logcap.MaxError+len("…") || !utf8.ValidString(got) {
		t.Errorf("Error(long) is %d bytes", len(got))
	}
	if logcap.Error(nil) != "" {
		t.Error("Error(nil) is not empty")
	}
	many := make([]string, 1000)
	if got := logcap.Strings(many); len(got) != logcap.MaxString/8+1 || got[len(got)-1] != "…" {
		t.Errorf("Strings of 1000 gives %d", len(got))
	}
}

func ExampleString() {
	fmt.Println(len(logcap.String(strings.Repeat("x", 200))) == logcap.MaxString+len("…"))
	// Output: true
}
