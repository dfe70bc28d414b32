package cedar_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
)

var (
	fay  = &toolgate.Principal{ID: "fay", Roles: []string{"finance"}}
	sam  = &toolgate.Principal{ID: "sam", Roles: []string{"support"}}
	mel  = &toolgate.Principal{ID: "mel", Roles: []string{"support", "finance"}}
	nobo = &toolgate.Principal{ID: "nobody"}
)

// bank is the policy set most tests decide with.
const bank = `@id("support-lookup")
permit (principal in Role::"support", action, resource == Tool::"lookup");

@id("finance-all")
permit (principal in Role::"finance", action == Action::"discover", resource);

@id("finance-lookup")
permit (principal in Role::"finance", action == Action::"execute", resource == Tool::"lookup");

@id("small-transfers")
permit (principal in Role::"finance", action == Action::"execute", resource == Tool::"transfer")
when { context.amount < 1000 };

@id("no-support-transfers")
forbid (principal in Role::"support", action, resource == Tool::"transfer");

permit (principal == User::"fay", action == Action::"execute", resource == Tool::"report");
`

func newPolicy(t testing.TB, opts *cedar.Options, text string) *cedar.Policy {
	t.Helper()
	p, err := cedar.New(opts, cedar.Source{Name: "bank.cedar", Text: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ask asks p about tool in phase; args "" in the execution phase means
// the call has no arguments.
func ask(t testing.TB, p authz.Policy, who *toolgate.Principal, phase authz.Phase, tool, args string) authz.Decision {
	t.Helper()
	return askMeta(t, p, who, phase, tool, args, toolgate.ToolMetadata{})
}

func askMeta(t testing.TB, p authz.Policy, who *toolgate.Principal, phase authz.Phase, tool, args string, meta toolgate.ToolMetadata) authz.Decision {
	t.Helper()
	r := &authz.Request{Principal: who, Tool: toolgate.ToolDefinition{Name: tool}, Metadata: meta, Phase: phase}
	if phase == authz.PhaseExecution {
		r.Call = &toolgate.ToolCall{ID: "c1", Name: tool, Arguments: args}
	}
	d, err := p.Authorize(context.Background(), r)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	return d
}

const (
	def  = authz.PhaseDefinition
	exec = authz.PhaseExecution
)

func TestDecisions(t *testing.T) {
	p := newPolicy(t, nil, bank)
	for _, tc := range []struct {
		name  string
		who   *toolgate.Principal
		phase authz.Phase
		tool  string
		args  string
		want  authz.Decision
	}{
		{"permit by role", sam, exec, "lookup", `{"id":"C-1"}`,
			authz.Allow(`permitted by policy "support-lookup" (bank.cedar:1:1)`)},
		{"role inheritance discover", fay, def, "transfer", "",
			authz.Allow(`permitted by policy "finance-all" (bank.cedar:4:1)`)},
		{"default deny", sam, def, "report", "",
			authz.Deny("no policy permits")},
		{"no roles", nobo, def, "lookup", "",
			authz.Deny("no policy permits")},
		{"argument condition holds", fay, exec, "transfer", `{"amount":500}`,
			authz.Allow(`permitted by policy "small-transfers" (bank.cedar:10:1)`)},
		{"argument condition fails", fay, exec, "transfer", `{"amount":5000}`,
			authz.Deny("no policy permits")},
		{"argument written as a float", fay, exec, "transfer", `{"amount":5e2}`,
			authz.Allow(`permitted by policy "small-transfers" (bank.cedar:10:1)`)},
		{"argument missing", fay, exec, "transfer", `{}`,
			authz.Deny(`no policy permits; policy "small-transfers" (bank.cedar:10:1) failed: missing attribute ` + "`amount`")},
		{"forbid overrides permit", mel, exec, "transfer", `{"amount":5}`,
			authz.Deny(`forbidden by policy "no-support-transfers" (bank.cedar:14:1)`)},
		{"forbid overrides permit in discover", mel, def, "transfer", "",
			authz.Deny(`forbidden by policy "no-support-transfers" (bank.cedar:14:1)`)},
		{"several permits", mel, exec, "lookup", `{}`,
			authz.Allow(`permitted by policies "finance-lookup" (bank.cedar:7:1), "support-lookup" (bank.cedar:1:1)`)},
		{"discover without execute", fay, exec, "audit", `{}`,
			authz.Deny("no policy permits")},
		{"execute without discover", fay, def, "report", "",
			authz.Allow(`permitted by policy "finance-all" (bank.cedar:4:1)`)},
		{"policy without id", fay, exec, "report", "",
			authz.Allow(`permitted by policy "bank.cedar:17:1"`)},
		{"not JSON", fay, exec, "transfer", `{"amount":5`,
			authz.Deny("the arguments are not valid JSON")},
		{"trailing data", fay, exec, "transfer", `{"amount":5} {"amount":5000}`,
			authz.Deny("the arguments are not valid JSON: data after the object")},
		{"not an object", fay, exec, "transfer", `[500]`,
			authz.Deny("the arguments are not a JSON object")},
		{"fraction", fay, exec, "transfer", `{"amount":5.5}`,
			authz.Deny("the arguments hold 1 number(s) Cedar cannot represent (not an integer, or out of range)")},
		{"out of range", fay, exec, "transfer", `{"amount":-1e300}`,
			authz.Deny("the arguments hold 1 number(s) Cedar cannot represent (not an integer, or out of range)")},
		{"no principal", nil, def, "lookup", "", authz.Deny("no principal")},
		// A principal without an id is none, whatever roles it claims.
		{"empty principal id", &toolgate.Principal{Roles: []string{"finance"}}, exec, "transfer", `{"amount":5}`, authz.Deny("no principal")},
		{"unknown phase", fay, "LATER", "lookup", "", authz.Deny(`unknown phase "LATER"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ask(t, p, tc.who, tc.phase, tc.tool, tc.args)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			for _, v := range []string{"500", "5000", "C-1"} {
				if strings.Contains(got.Reason, v) {
					t.Errorf("reason %q quotes the argument value %s", got.Reason, v)
				}
			}
		})
	}
}

// TestContext pins the context shape: top-level arguments, the reserved
// keys, nested values and metadata.
func TestContext(t *testing.T) {
	const policies = `
@id("top") permit (principal, action == Action::"execute", resource == Tool::"top")
when { context.amount == 5 && context.arguments.amount == 5 };
@id("nested") permit (principal, action == Action::"execute", resource == Tool::"nested")
when { context.order.lines.contains({"sku": "A", "qty": 2}) && context.order.gift == true && context.tags == ["x", "y"] };
@id("reserved") permit (principal, action == Action::"execute", resource == Tool::"reserved")
when { context.metadata.requires_confirmation == false && context.arguments.metadata.requires_confirmation == true };
@id("confirmed") permit (principal, action, resource == Tool::"confirmed")
when { context.metadata.requires_confirmation && !context.metadata.return_direct };
@id("null") permit (principal, action == Action::"execute", resource == Tool::"null")
when { !(context has note) && context.arguments == {} };
@id("empty") permit (principal, action, resource == Tool::"empty")
when { context.arguments == {} && context.unrepresentable.isEmpty() };
@id("attrs") permit (principal, action, resource == Tool::"attrs")
when { principal.department == "ops" };
@id("escaped") permit (principal, action == Action::"execute", resource == Tool::"escaped")
when { context.unrepresentable == ["/a~1b", "/c~0d/0/e", "/big"] && context.ok == 1 };
`
	p := newPolicy(t, &cedar.Options{AllowUnrepresentable: true}, policies)
	ops := &toolgate.Principal{ID: "olga", Attributes: map[string]string{"department": "ops"}}
	dev := &toolgate.Principal{ID: "olga", Attributes: map[string]string{"department": "dev"}}
	confirm := toolgate.ToolMetadata{RequiresConfirmation: true}
	for _, tc := range []struct {
		name  string
		who   *toolgate.Principal
		phase authz.Phase
		tool  string
		args  string
		meta  toolgate.ToolMetadata
		want  bool
	}{
		{"top-level and arguments", fay, exec, "top", `{"amount":5}`, toolgate.ToolMetadata{}, true},
		{"nested records and sets", fay, exec, "nested",
			`{"order":{"lines":[{"sku":"A","qty":2},{"sku":"B","qty":1}],"gift":true},"tags":["y","x","y"]}`, toolgate.ToolMetadata{}, true},
		{"reserved keys are not spoofed", fay, exec, "reserved",
			`{"metadata":{"requires_confirmation":true}}`, toolgate.ToolMetadata{}, true},
		{"metadata in discover", fay, def, "confirmed", "", confirm, true},
		{"metadata in execute", fay, exec, "confirmed", "{}", confirm, true},
		{"metadata false", fay, def, "confirmed", "", toolgate.ToolMetadata{}, false},
		{"null is absent", fay, exec, "null", `{"note":null}`, toolgate.ToolMetadata{}, true},
		{"no arguments", fay, exec, "empty", "", toolgate.ToolMetadata{}, true},
		{"whitespace arguments", fay, exec, "empty", " \n", toolgate.ToolMetadata{}, true},
		{"discover context", fay, def, "empty", "", toolgate.ToolMetadata{}, true},
		{"principal attributes", ops, def, "attrs", "", toolgate.ToolMetadata{}, true},
		{"changed attributes are not cached", dev, def, "attrs", "", toolgate.ToolMetadata{}, false},
		{"unrepresentable pointers", fay, exec, "escaped",
			`{"a/b":1.5,"c~d":[{"e":0.1}],"big":1e20,"ok":1.0}`, toolgate.ToolMetadata{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := askMeta(t, p, tc.who, tc.phase, tc.tool, tc.args, tc.meta)
			if got.Allowed != tc.want {
				t.Errorf("got allowed=%v (%s), want %v", got.Allowed, got.Reason, tc.want)
			}
		})
	}
}

func TestFailingForbid(t *testing.T) {
	const policies = `
@id("all") permit (principal, action, resource);
@id("few-seats") forbid (principal, action == Action::"execute", resource == Tool::"book")
when { context.seats > 9 };`
	for _, tc := range []struct {
		name string
		opts *cedar.Options
		args string
		want authz.Decision
	}{
		{"applies", nil, `{"seats":10}`, authz.Deny(`forbidden by policy "few-seats" (bank.cedar:3:1)`)},
		{"does not apply", nil, `{"seats":2}`, authz.Allow(`permitted by policy "all" (bank.cedar:2:1)`)},
		{"fails and denies", nil, `{}`, authz.Deny(`denied because forbid policy "few-seats" (bank.cedar:3:1) failed to evaluate; ` +
			`permitted by policy "all" (bank.cedar:2:1); policy "few-seats" (bank.cedar:3:1) failed: missing attribute ` + "`seats`")},
		{"type error", nil, `{"seats":"ten"}`, authz.Deny(`denied because forbid policy "few-seats" (bank.cedar:3:1) failed to evaluate; ` +
			`permitted by policy "all" (bank.cedar:2:1); policy "few-seats" (bank.cedar:3:1) failed: type error: expected comparable value, got string`)},
		{"fails and is ignored", &cedar.Options{IgnoreForbidErrors: true}, `{}`, authz.Allow(`permitted by policy "all" (bank.cedar:2:1); ` +
			`policy "few-seats" (bank.cedar:3:1) failed: missing attribute ` + "`seats`")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, tc.opts, policies)
			got := ask(t, p, fay, exec, "book", tc.args)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorsQuoteNoValues checks that evaluation errors that quote their
// operands in Cedar (overflow) reach the reason without them.
func TestErrorsQuoteNoValues(t *testing.T) {
	p := newPolicy(t, nil, `@id("sum") permit (principal, action, resource) when { context.a + context.b > 0 };`)
	got := ask(t, p, fay, exec, "x", `{"a":9223372036854775807,"b":7654321}`)
	want := authz.Deny(`no policy permits; policy "sum" (bank.cedar:1:1) failed: integer overflow`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	allowLookup = `@id("lookup") permit (principal, action, resource == Tool::"lookup");`
	allowReport = `@id("report") permit (principal, action, resource == Tool::"report");`
	malformed   = "@id(\"ok\") permit (principal, action, resource);\n\npermit (principal, action resource);\n"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.cedar": allowLookup, "b.cedar": allowReport, "notes.txt": "not cedar"})
	if err := os.Mkdir(filepath.Join(dir, "sub.cedar"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Run("directory", func(t *testing.T) {
		p, err := cedar.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"lookup", "report"}, p.PolicyIDs()); diff != "" {
			t.Errorf("policy ids (-want +got):\n%s", diff)
		}
	})
	t.Run("files", func(t *testing.T) {
		p, err := cedar.Load(filepath.Join(dir, "a.cedar"))
		if err != nil {
			t.Fatal(err)
		}
		if !ask(t, p, sam, def, "lookup", "").Allowed || ask(t, p, sam, def, "report", "").Allowed {
			t.Error("wrong policies loaded")
		}
	})
	t.Run("positions name the file", func(t *testing.T) {
		writeFiles(t, dir, map[string]string{"c.cedar": "\n\npermit (principal, action, resource);"})
		p, err := cedar.Load(filepath.Join(dir, "c.cedar"))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{filepath.Join(dir, "c.cedar") + ":3:1"}
		if diff := cmp.Diff(want, p.PolicyIDs()); diff != "" {
			t.Errorf("policy ids (-want +got):\n%s", diff)
		}
	})

	bad := t.TempDir()
	writeFiles(t, bad, map[string]string{"bad.cedar": malformed})
	empty := t.TempDir()
	writeFiles(t, empty, map[string]string{"readme.md": "no policies"})
	for _, tc := range []struct {
		name     string
		paths    []string
		sources  []cedar.Source
		file     string
		contains []string
	}{
		{name: "malformed file", paths: []string{filepath.Join(bad, "bad.cedar")}, file: filepath.Join(bad, "bad.cedar"),
			contains: []string{filepath.Join(bad, "bad.cedar") + ":3:35", "got resource want ,"}},
		{name: "malformed in directory", paths: []string{dir, bad}, file: filepath.Join(bad, "bad.cedar"),
			contains: []string{filepath.Join(bad, "bad.cedar") + ":3:35"}},
		{name: "malformed bytes", sources: []cedar.Source{{Name: "inline.cedar", Text: []byte(malformed)}}, file: "inline.cedar",
			contains: []string{"cedar: inline.cedar: parse error at inline.cedar:3:35"}},
		{name: "bad escape", sources: []cedar.Source{{Name: "esc.cedar", Text: []byte(`permit (principal == User::"\q", action, resource);`)}},
			file: "esc.cedar", contains: []string{"esc.cedar:1:"}},
		{name: "duplicate id", sources: []cedar.Source{{Name: "a.cedar", Text: []byte(allowLookup)}, {Name: "b.cedar", Text: []byte(allowLookup)}},
			file: "b.cedar", contains: []string{`policy id "lookup" at b.cedar:1:1 is already used at a.cedar:1:1`}},
		{name: "missing file", paths: []string{filepath.Join(dir, "nope.cedar")}, file: filepath.Join(dir, "nope.cedar"),
			contains: []string{"nope.cedar"}},
		{name: "directory without policies", paths: []string{empty}, file: empty, contains: []string{"no .cedar files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.sources != nil {
				_, err = cedar.New(nil, tc.sources...)
			} else {
				_, err = cedar.Load(tc.paths...)
			}
			var le *cedar.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got error %v, want a *LoadError", err)
			}
			if le.File != tc.file {
				t.Errorf("got file %q, want %q", le.File, tc.file)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	t.Run("no paths", func(t *testing.T) {
		if _, err := cedar.Load(); err == nil {
			t.Error("Load() succeeded")
		}
	})
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.cedar")
	writeFiles(t, dir, map[string]string{"p.cedar": allowLookup})
	p, err := cedar.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, lookup, report bool) {
		t.Helper()
		if got := ask(t, p, sam, def, "lookup", "").Allowed; got != lookup {
			t.Errorf("%s: lookup allowed = %v, want %v", step, got, lookup)
		}
		if got := ask(t, p, sam, def, "report", "").Allowed; got != report {
			t.Errorf("%s: report allowed = %v, want %v", step, got, report)
		}
	}
	check("loaded", true, false)

	writeFiles(t, dir, map[string]string{"p.cedar": malformed})
	var le *cedar.LoadError
	if err := p.Reload(); !errors.As(err, &le) || le.File != file {
		t.Errorf("Reload of a malformed file: got %v, want a *LoadError for %s", err, file)
	}
	check("after a failed reload", true, false)
	if err := p.Reload(filepath.Join(dir, "missing.cedar")); err == nil {
		t.Error("Reload of a missing file succeeded")
	}
	check("after a failed reload of a missing file", true, false)

	writeFiles(t, dir, map[string]string{"p.cedar": allowReport})
	if err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	check("after a reload", false, true)

	if err := p.Replace(cedar.Source{Name: "x.cedar", Text: []byte(malformed)}); err == nil {
		t.Error("Replace with a malformed source succeeded")
	}
	check("after a failed replace", false, true)
	if err := p.Replace(cedar.Source{Text: []byte(allowLookup + allowReport)}); err != nil {
		t.Fatal(err)
	}
	check("after a replace", true, true)
	if err := p.Reload(); err == nil {
		t.Error("Reload() after Replace succeeded without paths")
	}

	empty, err := cedar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := ask(t, empty, fay, def, "lookup", ""); d.Allowed {
		t.Errorf("a policy without policies allowed: %s", d.Reason)
	}
}

// TestConcurrentReload decides while policies are swapped: every decision
// comes wholly from one set (its reason names the policy that allowed), and
// the race detector sees no race.
func TestConcurrentReload(t *testing.T) {
	a := cedar.Source{Name: "a.cedar", Text: []byte(`@id("a") permit (principal, action, resource == Tool::"lookup");`)}
	b := cedar.Source{Name: "b.cedar", Text: []byte(`@id("b") permit (principal, action, resource == Tool::"report");`)}
	p, err := cedar.New(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 8)
	for i := range 8 {
		who := &toolgate.Principal{ID: "u", Roles: []string{string(rune('a' + i))}}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i, tool := range []string{"lookup", "report", "lookup", "report"} {
					phase := exec
					if i >= 2 {
						phase = def // remembered per principal and policy set
					}
					d := ask(t, p, who, phase, tool, `{"n":1}`)
					switch {
					case !d.Allowed && d.Reason == "no policy permits":
					case d.Allowed && tool == "lookup" && strings.HasPrefix(d.Reason, `permitted by policy "a"`):
					case d.Allowed && tool == "report" && strings.HasPrefix(d.Reason, `permitted by policy "b"`):
					default:
						select {
						case errs <- tool + ": " + d.Reason:
						default:
						}
						return
					}
				}
			}
		})
	}
	for i := range 200 {
		src := a
		if i%2 == 0 {
			src = b
		}
		if err := p.Replace(src); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := p.Replace(cedar.Source{Name: "bad.cedar", Text: []byte(malformed)}); err == nil {
				t.Fatal("malformed replace succeeded")
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("inconsistent decision: %s", e)
	}
}

// TestFlightsExample checks the facts the demo's policy file promises.
func TestFlightsExample(t *testing.T) {
	p, err := cedar.Load(filepath.Join("..", "..", "examples", "flights.cedar"))
	if err != nil {
		t.Fatal(err)
	}
	alice := &toolgate.Principal{ID: "alice", Roles: []string{"traveller"}}
	bob := &toolgate.Principal{ID: "bob", Roles: []string{"guest"}}
	for _, tc := range []struct {
		who   *toolgate.Principal
		phase authz.Phase
		tool  string
		args  string
		want  bool
	}{
		{alice, def, "flightStatus", "", true},
		{alice, exec, "flightStatus", `{"flight":"VX205"}`, true},
		{alice, def, "bookFlight", "", true},
		{alice, exec, "bookFlight", `{"flight":"VX205"}`, true},
		{alice, exec, "bookFlight", `{"flight":"VX205","seats":2}`, true},
		{alice, exec, "bookFlight", `{"flight":"VX205","seats":12}`, false},
		{alice, def, "cancelFlight", "", false},
		{bob, def, "flightStatus", "", true},
		{bob, exec, "flightStatus", `{"flight":"VX205"}`, true},
		{bob, def, "bookFlight", "", false},
		{bob, exec, "bookFlight", `{"flight":"VX205"}`, false},
		{&toolgate.Principal{ID: "eve"}, def, "flightStatus", "", false},
	} {
		t.Run(tc.who.ID+"/"+string(tc.phase)+"/"+tc.tool, func(t *testing.T) {
			d := ask(t, p, tc.who, tc.phase, tc.tool, tc.args)
			if d.Allowed != tc.want {
				t.Errorf("got allowed=%v (%s), want %v", d.Allowed, d.Reason, tc.want)
			}
		})
	}
}
