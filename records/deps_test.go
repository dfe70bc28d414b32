package records_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the record store's package free of SDKs and
// drivers: besides the standard library it may use only toolgate's core
// package and the audit package (and what they use), and the canonical
// JSON of digests.
func TestDependencies(t *testing.T) {
	const pkg = "github.com/toolgate/toolgate/records"
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(dep, "/")
		switch {
		case !strings.Contains(first, "."), dep == pkg, dep == "github.com/toolgate/toolgate",
			dep == "github.com/toolgate/toolgate/audit",
			dep == "github.com/toolgate/toolgate/internal/argcheck",
			dep == "github.com/toolgate/toolgate/internal/logcap",
			dep == "github.com/toolgate/toolgate/internal/storerules",
			strings.HasPrefix(dep, "github.com/google/jsonschema-go/"),
			// The canonical JSON of argument digests.
			dep == "github.com/toolgate/toolgate/internal/argdigest",
			strings.HasPrefix(dep, "github.com/go-json-experiment/json"):
		default:
			t.Errorf("%s depends on %s; want only the standard library, the core and the audit package", pkg, dep)
		}
	}
}
