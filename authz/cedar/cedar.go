package cedar

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	cedargo "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/toolgate/toolgate/authz"
)

// DefaultEntityCacheSize is how many principals' entities a [Policy]
// caches when [Options.EntityCacheSize] is 0.
const DefaultEntityCacheSize = 1024

// Options configure a [Policy]. A nil *Options means all defaults.
type Options struct {
	// EntityCacheSize bounds how many principals (id, roles and attributes)
	// have their Cedar entities, and their definition-phase decisions for
	// the active policies, cached; when full, an arbitrary entry makes room.
	// 0: [DefaultEntityCacheSize]; negative: no cache.
	EntityCacheSize int
	// AllowUnrepresentable lets the policies decide a call whose arguments
	// hold a number Cedar cannot represent (see the package doc): the
	// number is left out of the context and its JSON pointer listed in
	// context.unrepresentable. false: such a call is denied in the
	// execution phase without asking the policies.
	AllowUnrepresentable bool
	// IgnoreForbidErrors skips a forbid policy whose evaluation fails, as
	// Cedar itself does. false: a forbid policy that fails to evaluate
	// denies, since it might have applied. Either way a permit policy that
	// fails to evaluate permits nothing, and every failure is named in the
	// decision's reason.
	IgnoreForbidErrors bool
}

// Source is one Cedar policy document.
type Source struct {
	// Name names the document in policy ids, positions and errors, such as
	// its file name. "": "inline".
	Name string
	// Text is the document in Cedar's policy language.
	Text []byte
}

// LoadError reports a policy document that could not be read or parsed,
// or a policy id used twice. Check for it with [errors.As].
type LoadError struct {
	// File is the document's name (the path for files).
	File string
	// Err is the underlying error.
	Err error
}

func (e *LoadError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "parser error: ")
	// The parser names the document "<input>"; name it.
	msg = strings.Replace(msg, "<input>:", e.File+":", 1)
	return "cedar: " + e.File + ": " + msg
}

func (e *LoadError) Unwrap() error { return e.Err }

// Policy is an [authz.Policy] that decides with Cedar policies: see the
// package doc for how requests are mapped. Its policies are parsed once and
// swapped atomically by [Policy.Reload] and [Policy.Replace]; the entities
// of recent principals are cached. It is safe for concurrent use.
type Policy struct {
	// fixed at creation
	allowUnrepresentable bool
	ignoreForbidErrors   bool
	cache                *entityCache

	set atomic.Pointer[policySet]
}

// policySet is a parsed, immutable set of policies.
type policySet struct {
	set   *cedargo.PolicySet
	info  map[types.PolicyID]*policyInfo
	paths []string // the files or directories it was read from; nil for sources
}

// policyInfo is what a decision's reason says about a policy.
type policyInfo struct {
	forbid    bool
	label     string // `"id"` or `"id" (file:line:col)`
	permitted string // the reason when it alone permits
	forbidden string // the reason when it alone forbids
	loc       string // file:line:col
}

// New returns a policy deciding with the policies in sources. With no
// sources it denies everything until [Policy.Replace] or [Policy.Reload]
// gives it policies. The error is a [*LoadError] naming the document and
// position that could not be parsed.
func New(opts *Options, sources ...Source) (*Policy, error) {
	if opts == nil {
		opts = &Options{}
	}
	size := opts.EntityCacheSize
	if size == 0 {
		size = DefaultEntityCacheSize
	}
	p := &Policy{allowUnrepresentable: opts.AllowUnrepresentable, ignoreForbidErrors: opts.IgnoreForbidErrors,
		cache: newEntityCache(size)}
	if err := p.Replace(sources...); err != nil {
		return nil, err
	}
	return p, nil
}

// Load returns a policy with default options deciding with the policies
// of the given files and directories (see [ReadFiles]).
func Load(paths ...string) (*Policy, error) {
	p, err := New(nil)
	if err != nil {
		return nil, err
	}
	if err := p.Reload(paths...); err != nil {
		return nil, err
	}
	return p, nil
}

// Reload reads and parses the policies of the given files and directories
// (see [ReadFiles]) and, only if all of them load, swaps them in
// atomically: decisions in flight finish with the old policies, later ones
// use the new. On error the old policies stay active. With no paths, it
// reads again the paths of the last successful [Load] or Reload.
func (p *Policy) Reload(paths ...string) error {
	if len(paths) == 0 {
		paths = p.set.Load().paths
		if len(paths) == 0 {
			return errors.New("cedar: Reload: no paths given and none loaded before")
		}
	}
	sources, err := ReadFiles(paths...)
	if err != nil {
		return err
	}
	ps, err := parse(sources)
	if err != nil {
		return err
	}
	ps.paths = slices.Clone(paths)
	p.set.Store(ps)
	return nil
}

// Replace parses sources and, only if all of them parse, swaps them in
// atomically, as [Policy.Reload] does. On error the old policies stay
// active.
func (p *Policy) Replace(sources ...Source) error {
	ps, err := parse(sources)
	if err != nil {
		return err
	}
	p.set.Store(ps)
	return nil
}

// PolicyIDs returns the ids of the active policies, sorted: each policy's
// @id annotation, or else its document name and position
// ("flights.cedar:3:1").
func (p *Policy) PolicyIDs() []string {
	ps := p.set.Load()
	ids := make([]string, 0, len(ps.info))
	for id := range ps.info {
		ids = append(ids, string(id))
	}
	slices.Sort(ids)
	return ids
}

// ReadFiles reads Cedar policy documents: each path is a file, or a
// directory whose regular files ending in ".cedar" are read in name order
// (not its subdirectories). Each source is named by its path. A directory
// without policy files, or no path at all, is an error.
func ReadFiles(paths ...string) ([]Source, error) {
	if len(paths) == 0 {
		return nil, errors.New("cedar: no policy files given")
	}
	var sources []Source
	for _, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, &LoadError{File: path, Err: err}
		}
		if !fi.IsDir() {
			text, err := os.ReadFile(path)
			if err != nil {
				return nil, &LoadError{File: path, Err: err}
			}
			sources = append(sources, Source{Name: path, Text: text})
			continue
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, &LoadError{File: path, Err: err}
		}
		n := len(sources)
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".cedar") {
				continue
			}
			name := filepath.Join(path, e.Name())
			text, err := os.ReadFile(name)
			if err != nil {
				return nil, &LoadError{File: name, Err: err}
			}
			sources = append(sources, Source{Name: name, Text: text})
		}
		if len(sources) == n {
			return nil, &LoadError{File: path, Err: errors.New("no .cedar files in the directory")}
		}
	}
	return sources, nil
}

// parse parses sources into a policy set. Each policy's id is its @id
// annotation, or else "name:line:column".
func parse(sources []Source) (*policySet, error) {
	ps := &policySet{set: cedargo.NewPolicySet(), info: make(map[types.PolicyID]*policyInfo)}
	for _, src := range sources {
		name := src.Name
		if name == "" {
			name = "inline"
		}
		list, err := cedargo.NewPolicyListFromBytes(name, src.Text)
		if err != nil {
			return nil, &LoadError{File: name, Err: err}
		}
		for _, pol := range list {
			pos := pol.Position()
			loc := fmt.Sprintf("%s:%d:%d", name, pos.Line, pos.Column)
			id, label := loc, fmt.Sprintf("%q", loc)
			if a, ok := pol.Annotations()["id"]; ok {
				id, label = string(a), fmt.Sprintf("%q (%s)", string(a), loc)
			}
			if prev, dup := ps.info[types.PolicyID(id)]; dup {
				return nil, &LoadError{File: name, Err: fmt.Errorf("policy id %q at %s is already used at %s", id, loc, prev.loc)}
			}
			info := &policyInfo{forbid: pol.Effect() == cedargo.Forbid, label: label, loc: loc,
				permitted: "permitted by policy " + label, forbidden: "forbidden by policy " + label}
			ps.info[types.PolicyID(id)] = info
			ps.set.Add(types.PolicyID(id), pol)
		}
	}
	return ps, nil
}

// Actions and their phases.
var (
	actionDiscover = types.NewEntityUID(typeAction, "discover")
	actionExecute  = types.NewEntityUID(typeAction, "execute")
)

// Authorize implements [authz.Policy]. It never returns an error: what
// cannot be decided (no principal, arguments that are not a JSON object)
// is denied with a reason.
func (p *Policy) Authorize(_ context.Context, r *authz.Request) (authz.Decision, error) {
	if r == nil || r.Principal == nil || r.Principal.ID == "" {
		return authz.Deny("no principal"), nil
	}
	var req types.Request
	switch r.Phase {
	case authz.PhaseDefinition:
		req.Action = actionDiscover
		req.Context = definitionContexts[b2i(r.Metadata.RequiresConfirmation)][b2i(r.Metadata.ReturnDirect)]
	case authz.PhaseExecution:
		if r.Call == nil {
			return authz.Deny("no call to authorize in the execution phase"), nil
		}
		ctx, unrepresentable, err := executionContext(r.Metadata, r.Call.Arguments)
		if err != nil {
			return authz.Deny(err.Error()), nil
		}
		if unrepresentable > 0 && !p.allowUnrepresentable {
			return authz.Deny(fmt.Sprintf("the arguments hold %d number(s) Cedar cannot represent (not an integer, or out of range)", unrepresentable)), nil
		}
		req.Action = actionExecute
		req.Context = ctx
	default:
		return authz.Deny(fmt.Sprintf("unknown phase %q", r.Phase)), nil
	}
	ents := p.cache.get(r.Principal)
	ps := p.set.Load()
	memoize := r.Phase == authz.PhaseDefinition && p.cache.max > 0
	if memoize {
		if d, ok := ents.remembered(ps, r.Tool.Name, r.Metadata); ok {
			return d, nil
		}
	}
	req.Principal = ents.uid
	req.Resource = types.NewEntityUID(typeTool, types.String(r.Tool.Name))
	dec, diag := cedargo.Authorize(ps.set, ents, req)
	d := ps.decision(dec, diag, p.ignoreForbidErrors)
	if memoize {
		ents.remember(ps, r.Tool.Name, r.Metadata, d)
	}
	return d, nil
}

// decision turns Cedar's answer into a decision whose reason names the
// deciding policies and those that failed to evaluate, never argument
// values.
func (ps *policySet) decision(dec cedargo.Decision, diag cedargo.Diagnostic, ignoreForbidErrors bool) authz.Decision {
	if len(diag.Errors) == 0 && len(diag.Reasons) == 1 {
		if info := ps.info[diag.Reasons[0].PolicyID]; info != nil {
			if dec == cedargo.Allow {
				return authz.Allow(info.permitted)
			}
			return authz.Deny(info.forbidden)
		}
	}
	allowed := dec == cedargo.Allow
	var failedForbids []string
	if !ignoreForbidErrors {
		for _, e := range diag.Errors {
			if info := ps.info[e.PolicyID]; info == nil || info.forbid {
				failedForbids = append(failedForbids, ps.label(e.PolicyID))
			}
		}
	}
	var b strings.Builder
	if allowed && len(failedForbids) > 0 {
		allowed = false
		slices.Sort(failedForbids)
		b.WriteString("denied because forbid ")
		writeList(&b, "policy ", "policies ", failedForbids)
		b.WriteString(" failed to evaluate; ")
	}
	switch {
	case len(diag.Reasons) == 0:
		b.WriteString("no policy permits")
	default:
		labels := make([]string, len(diag.Reasons))
		for i, r := range diag.Reasons {
			labels[i] = ps.label(r.PolicyID)
		}
		slices.Sort(labels)
		if dec == cedargo.Allow {
			b.WriteString("permitted by ")
		} else {
			b.WriteString("forbidden by ")
		}
		writeList(&b, "policy ", "policies ", labels)
	}
	if len(diag.Errors) > 0 {
		errs := slices.Clone(diag.Errors)
		slices.SortFunc(errs, func(a, b cedargo.DiagnosticError) int { return strings.Compare(string(a.PolicyID), string(b.PolicyID)) })
		for _, e := range errs {
			b.WriteString("; policy ")
			b.WriteString(ps.label(e.PolicyID))
			b.WriteString(" failed: ")
			b.WriteString(errorKind(e.Message))
		}
	}
	return authz.Decision{Allowed: allowed, Reason: b.String()}
}

func (ps *policySet) label(id types.PolicyID) string {
	if info := ps.info[id]; info != nil {
		return info.label
	}
	return fmt.Sprintf("%q", string(id))
}

func writeList(b *strings.Builder, one, many string, items []string) {
	if len(items) == 1 {
		b.WriteString(one)
	} else {
		b.WriteString(many)
	}
	b.WriteString(strings.Join(items, ", "))
}

// errorKind describes a Cedar evaluation error without the values it may
// quote (Cedar's overflow and extension errors quote operands, which may
// come from arguments). Attribute names come from the policy text and type
// errors name only types; both are kept.
func errorKind(msg string) string {
	switch {
	case strings.Contains(msg, "does not have the attribute"):
		if i := strings.LastIndexByte(msg, '`'); i > 0 {
			if j := strings.LastIndexByte(msg[:i], '`'); j >= 0 {
				return "missing attribute " + msg[j:i+1]
			}
		}
		return "missing attribute"
	case strings.Contains(msg, "does not have the tag"):
		return "missing tag"
	case strings.Contains(msg, "integer overflow"):
		return "integer overflow"
	case strings.Contains(msg, "does not exist"):
		return "missing entity"
	case strings.HasPrefix(msg, "type error"):
		// Cedar's type errors name types only.
		return msg
	default:
		return "evaluation error"
	}
}
