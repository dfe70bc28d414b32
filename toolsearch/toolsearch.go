package toolsearch

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolgate/toolgate"
)

// Defaults of [Options].
const (
	// DefaultName is the search tool's name when [Options.Name] is "".
	DefaultName = "search_tools"
	// DefaultResults is how many tools a search returns when the model
	// asks for none.
	DefaultResults = 5
	// DefaultMaxResults caps the tools one search returns when
	// [Options.MaxResults] is 0.
	DefaultMaxResults = 20
	// DefaultMaxConversations is how many conversations a [Searcher] keeps
	// when [Options.MaxConversations] is 0.
	DefaultMaxConversations = 1024
	// MaxQueryBytes caps the query text: a longer query is cut (on a
	// character boundary) before it is searched.
	MaxQueryBytes = 2048
)

// DefaultDescription is the search tool's description when
// [Options.Description] is "".
const DefaultDescription = "Finds the tools that can do a task. Describe the task in a few words " +
	"(for example \"refund a card payment\"); the tools found can be called from the next step on. " +
	"Search again when you need another kind of tool."

// Options configure a [Searcher]. A nil *Options means all defaults.
type Options struct {
	// Index finds tools. nil: [NewBM25Index].
	Index Index
	// Name is the search tool's name. "": [DefaultName].
	Name string
	// Description is the search tool's description. "":
	// [DefaultDescription].
	Description string
	// Category gives a tool's category, which a search may be limited to.
	// nil: the part of the tool's name before its first '.', or "" when
	// the name has none ("crm.createLead" is in category "crm").
	Category func(toolgate.ToolDefinition) string
	// MaxResults caps the tools one search returns. 0:
	// [DefaultMaxResults].
	MaxResults int
	// LatestOnly offers, with the search tool, only the tools of the
	// latest search. false: every tool found in the conversation so far.
	LatestOnly bool
	// MaxConversations bounds the conversations whose index and found
	// tools are kept; the least recently used is evicted (and cleared from
	// the index) beyond it. 0: [DefaultMaxConversations].
	MaxConversations int
}

// Searcher lets the model find the tools it needs: pass it as
// [toolgate.ClientOptions.SearchTools] (pass its Begin). Each model call is then offered the
// search tool and the tools the model found so far in the conversation,
// chosen among the tools the round allows (the authorizer's, with one), so
// a search never sees, returns or offers a tool the principal may not see.
//
// Per conversation, a Searcher keeps the fingerprint of the indexed tools
// (their names, descriptions, schemas and categories), so that the index
// is rebuilt only when they change, and the names the model found. It keeps
// at most [Options.MaxConversations] conversations, evicting the least
// recently used; [Searcher.Delete] forgets one at once.
//
// A Searcher is safe for concurrent use.
type Searcher struct {
	// fixed at creation
	index      Index
	name, desc string
	category   func(toolgate.ToolDefinition) string
	maxResults int
	latest     bool
	bound      int
	schema     *jsonschema.Schema

	mu      sync.Mutex
	lru     *list.List                    // guarded by mu: of *conversation, most recent first
	convs   map[string]*list.Element      // guarded by mu
	schemas map[*jsonschema.Schema]uint64 // guarded by mu: hash of each schema seen
}

// conversation is what a Searcher keeps of one conversation.
type conversation struct {
	id          string
	fingerprint uint64
	indexed     bool
	found       []string // the names found, in order; or of the latest search
}

// New returns a searcher configured by opts. It panics when the search
// tool's name is not valid ([toolgate.ValidToolName]): a programming error.
func New(opts *Options) *Searcher {
	if opts == nil {
		opts = &Options{}
	}
	s := &Searcher{index: opts.Index, name: opts.Name, desc: opts.Description, category: opts.Category,
		maxResults: opts.MaxResults, latest: opts.LatestOnly, bound: opts.MaxConversations,
		lru: list.New(), convs: make(map[string]*list.Element), schemas: make(map[*jsonschema.Schema]uint64)}
	if s.index == nil {
		s.index = NewBM25Index()
	}
	if s.name == "" {
		s.name = DefaultName
	}
	if s.desc == "" {
		s.desc = DefaultDescription
	}
	if s.category == nil {
		s.category = nameCategory
	}
	if s.maxResults <= 0 {
		s.maxResults = DefaultMaxResults
	}
	if s.bound <= 0 {
		s.bound = DefaultMaxConversations
	}
	if !toolgate.ValidToolName(s.name) {
		panic(fmt.Sprintf("toolsearch: New: invalid tool name %q: want 1-64 of [A-Za-z0-9_.-]", s.name))
	}
	schema, err := jsonschema.For[Input](nil)
	if err != nil {
		panic("toolsearch: New: " + err.Error())
	}
	s.schema = schema
	return s
}

func nameCategory(d toolgate.ToolDefinition) string {
	cat, _, ok := strings.Cut(d.Name, ".")
	if !ok {
		return ""
	}
	return cat
}

// Name returns the search tool's name.
func (s *Searcher) Name() string { return s.name }

// Len reports how many conversations the searcher keeps.
func (s *Searcher) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.convs)
}

// Delete forgets a conversation: its found tools, and its tools in the
// index. Call it when the conversation is deleted.
func (s *Searcher) Delete(ctx context.Context, conversationID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.convs[conversationID]; ok {
		s.lru.Remove(e)
		delete(s.convs, conversationID)
	}
	return s.index.Clear(ctx, conversationID)
}

// Input is what the model sends the search tool.
type Input struct {
	Query    string `json:"query" jsonschema:"what the tool should do, in a few words"`
	Max      int    `json:"max,omitempty" jsonschema:"how many tools to return at most (default 5)"`
	Category string `json:"category,omitempty" jsonschema:"only tools of this category (default: any)"`
}

// Result is what the search tool returns to the model, as JSON:
// {"tools":[{"name","description"}],"note"}.
type Result struct {
	// Tools are the tools found, best first; empty (never null) when none.
	Tools []FoundTool `json:"tools"`
	// Note explains an empty or cut result.
	Note string `json:"note,omitempty"`
}

// FoundTool is one tool found by a search.
type FoundTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Begin begins the tool search of one request (it is a
// [toolgate.ClientOptions.SearchTools]): it returns the request's search
// tool, which searches only the tools of the request's latest
// [toolgate.ToolSearch.Offer].
func (s *Searcher) Begin(_ context.Context, r *toolgate.BeginParams) (toolgate.ToolSearch, error) {
	if r == nil {
		r = &toolgate.BeginParams{}
	}
	rs := &request{s: s, convID: r.ConversationID}
	rs.tool = toolgate.NewToolFor(s.name, s.desc, rs.search, &toolgate.ToolOptions{InputSchema: s.schema})
	return rs, nil
}

// request serves one request.
type request struct {
	// fixed at Begin
	s      *Searcher
	convID string
	tool   *toolgate.Tool

	mu     sync.Mutex
	set    *toolSet                  // guarded by mu: the tools of the latest Offer
	hashes map[*toolgate.Tool]uint64 // guarded by mu: each tool's hash (see Searcher.toolHash)
}

// Tool implements [toolgate.ToolSearch].
func (rs *request) Tool() *toolgate.Tool { return rs.tool }

// Offer implements [toolgate.ToolSearch]: it indexes tools for the
// conversation when they differ from the indexed ones, and returns those
// the model found so far (or in the latest search, with
// [Options.LatestOnly]) in the order they were found.
func (rs *request) Offer(ctx context.Context, history []toolgate.Message, tools []*toolgate.Tool) ([]*toolgate.Tool, error) {
	s := rs.s
	rs.mu.Lock()
	set := rs.set
	if set == nil || !slices.Equal(set.tools, tools) {
		// The round's tools changed (or this is the first round): the
		// rounds of a request usually get the same instances.
		set = rs.newToolSet(tools)
		rs.set = set
	}
	rs.mu.Unlock()

	found, err := s.sync(ctx, rs.convID, set.fingerprint, set.entries)
	if err != nil {
		return nil, err
	}
	found = s.merge(found, searchedNames(history, s.name, s.latest))
	out := make([]*toolgate.Tool, 0, len(found))
	for _, name := range found {
		if t, ok := set.byName[name]; ok {
			out = append(out, t.tool)
		}
	}
	return out, nil
}

// toolSet is the tools of one Offer, as the search tool sees them.
type toolSet struct {
	tools       []*toolgate.Tool   // as given
	entries     []Entry            // for the index
	byName      map[string]indexed // by name
	cats        []string           // their categories, lower-cased and sorted
	fingerprint uint64
}

type indexed struct {
	tool     *toolgate.Tool
	category string // lower-cased
}

// newToolSet describes tools. rs.mu is held.
func (rs *request) newToolSet(tools []*toolgate.Tool) *toolSet {
	s := rs.s
	set := &toolSet{tools: slices.Clone(tools), entries: make([]Entry, 0, len(tools)),
		byName: make(map[string]indexed, len(tools)), fingerprint: fnvOffset}
	if rs.hashes == nil {
		rs.hashes = make(map[*toolgate.Tool]uint64, len(tools))
	}
	catSet := make(map[string]bool)
	for _, t := range tools {
		if t == nil {
			continue
		}
		d := t.Definition()
		cat := s.category(d)
		lower := strings.ToLower(cat)
		set.byName[d.Name] = indexed{tool: t, category: lower}
		set.entries = append(set.entries, Entry{Definition: d, Category: cat})
		if cat != "" {
			catSet[lower] = true
		}
		h, ok := rs.hashes[t]
		if !ok {
			h = s.toolHash(&set.entries[len(set.entries)-1])
			rs.hashes[t] = h
		}
		set.fingerprint = fnvUint(set.fingerprint, h)
	}
	for c := range catSet {
		set.cats = append(set.cats, c)
	}
	slices.Sort(set.cats)
	return set
}

// sync makes the conversation the most recently used, evicts beyond the
// bound, re-indexes the conversation when its tools changed (their
// fingerprint fp differs from the indexed one), and returns
// the names found in it. Indexing is serialised, so that an eviction never
// races with the indexing of the same conversation.
func (s *Searcher) sync(ctx context.Context, convID string, fp uint64, entries []Entry) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, evicted := s.touch(convID)
	var errs []error
	for _, id := range evicted {
		if err := s.index.Clear(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if !c.indexed || c.fingerprint != fp {
		if err := s.index.Index(ctx, convID, entries); err != nil {
			c.indexed = false
			return nil, fmt.Errorf("toolsearch: indexing the tools of conversation %q: %w", convID, err)
		}
		c.indexed, c.fingerprint = true, fp
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("toolsearch: clearing evicted conversations: %w", err)
	}
	return slices.Clone(c.found), nil
}

// touch returns the conversation's state, created when needed and moved
// to the front, and the ids it evicted. s.mu is held.
func (s *Searcher) touch(convID string) (*conversation, []string) {
	if e, ok := s.convs[convID]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*conversation), nil
	}
	c := &conversation{id: convID}
	s.convs[convID] = s.lru.PushFront(c)
	var evicted []string
	for s.lru.Len() > s.bound {
		old := s.lru.Remove(s.lru.Back()).(*conversation)
		delete(s.convs, old.id)
		evicted = append(evicted, old.id)
	}
	return c, evicted
}

// merge combines the names the searcher kept with those read from the
// history (which may hold searches of another process, or of a
// conversation it evicted): with LatestOnly the kept ones win when there
// are any; otherwise the history's come first, in their order.
func (s *Searcher) merge(kept, history []string) []string {
	if s.latest {
		if kept != nil {
			return kept
		}
		return history
	}
	out := history
	for _, n := range kept {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// record keeps the names a search found in the conversation.
func (s *Searcher) record(convID string, names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.convs[convID]
	if !ok {
		return
	}
	c := e.Value.(*conversation)
	if s.latest {
		c.found = append(make([]string, 0, len(names)), names...)
		return
	}
	for _, n := range names {
		if !slices.Contains(c.found, n) {
			c.found = append(c.found, n)
		}
	}
}

// fnv64a hashes with FNV-1a, without allocating.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return (h ^ 0xff) * fnvPrime // a separator no UTF-8 text holds
}

func fnvUint(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h = (h ^ (v >> (8 * i) & 0xff)) * fnvPrime
	}
	return h
}

// toolHash hashes a tool's name, description, category and schema. A
// schema's hash is kept by pointer (schemas are shared and not modified),
// so that equal tools of another request are not encoded again.
func (s *Searcher) toolHash(e *Entry) uint64 {
	d := &e.Definition
	h := fnvString(fnvString(fnvString(fnvOffset, d.Name), d.Description), e.Category)
	s.mu.Lock()
	sh, ok := s.schemas[d.InputSchema]
	s.mu.Unlock()
	if !ok {
		sh = hashSchema(d.InputSchema)
		s.mu.Lock()
		if len(s.schemas) >= 16*s.bound+4096 {
			clear(s.schemas)
		}
		s.schemas[d.InputSchema] = sh
		s.mu.Unlock()
	}
	return fnvUint(h, sh)
}

func hashSchema(sc *jsonschema.Schema) uint64 {
	if sc == nil {
		return fnvOffset
	}
	b, err := json.Marshal(sc)
	if err != nil {
		// An unencodable schema still gets a hash of its own.
		return fnvString(fnvOffset, fmt.Sprintf("%p", sc))
	}
	return fnvString(fnvOffset, string(b))
}

// searchedNames returns the names found by the search tool's successful
// results in history: all of them in order, or (latest) those of the last.
func searchedNames(history []toolgate.Message, name string, latest bool) []string {
	var out []string
	for i := len(history) - 1; i >= 0; i-- {
		m, ok := history[i].(*toolgate.ToolMessage)
		if !ok {
			continue
		}
		for j := len(m.Results) - 1; j >= 0; j-- {
			r := m.Results[j]
			if r.Name != name || r.Status != toolgate.ResultOK {
				continue
			}
			var res Result
			if json.Unmarshal([]byte(r.Content), &res) != nil {
				continue
			}
			names := make([]string, 0, len(res.Tools))
			for _, t := range res.Tools {
				names = append(names, t.Name)
			}
			if latest {
				return names
			}
			// Walking backwards: earlier searches go before.
			out = append(names, out...)
		}
	}
	if latest {
		return nil
	}
	return dedupe(out)
}

func dedupe(names []string) []string {
	out := names[:0]
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// search runs one search for the model.
func (rs *request) search(ctx context.Context, _ *toolgate.ToolRequest, in Input) (Result, error) {
	s := rs.s
	text := strings.TrimSpace(in.Query)
	if text == "" {
		return Result{}, errors.New("the query is empty: describe the task in a few words")
	}
	var note string
	if len(text) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
		note = fmt.Sprintf("The query was cut to its first %d bytes.", cut)
	}
	limit := in.Max
	switch {
	case limit <= 0:
		limit = DefaultResults
	}
	limit = min(limit, s.maxResults)
	rs.mu.Lock()
	set := rs.set
	rs.mu.Unlock()
	if set == nil {
		set = &toolSet{}
	}
	tools, cats := set.byName, set.cats
	cat := strings.ToLower(strings.TrimSpace(in.Category))
	if cat != "" && !slices.Contains(cats, cat) {
		known := "none"
		if len(cats) > 0 {
			known = strings.Join(cats[:min(len(cats), 50)], ", ")
		}
		return Result{Tools: []FoundTool{}, Note: fmt.Sprintf("There is no category %q. Categories: %s.", truncate(in.Category, 64), known)}, nil
	}
	// The conversation may have been evicted since the round began (more
	// conversations at once than the bound): index it again if so.
	if set.entries != nil {
		if _, err := s.sync(ctx, rs.convID, set.fingerprint, set.entries); err != nil {
			return Result{}, fmt.Errorf("the search failed: %w", err)
		}
	}
	hits, err := s.index.Search(ctx, rs.convID, &Query{Text: text, Max: limit, Category: cat})
	if err != nil {
		return Result{}, fmt.Errorf("the search failed: %w", err)
	}
	res := Result{Tools: make([]FoundTool, 0, len(hits)), Note: note}
	names := make([]string, 0, len(hits))
	for _, h := range hits {
		// Only the tools this request may offer: an index that holds
		// others (stale, or shared) never discloses them.
		t, ok := tools[h.Name]
		if !ok || slices.Contains(names, h.Name) || (cat != "" && t.category != cat) {
			continue
		}
		res.Tools = append(res.Tools, FoundTool{Name: h.Name, Description: t.tool.Definition().Description})
		names = append(names, h.Name)
		if len(names) == limit {
			break
		}
	}
	if len(res.Tools) == 0 && res.Note == "" {
		res.Note = "No tool matches. Try other words."
	}
	s.record(rs.convID, names)
	return res, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
