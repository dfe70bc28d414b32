package toolsearch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolsearch"
)

// spyIndex is a [toolsearch.Index] over a BM25 index that records what it
// is given.
type spyIndex struct {
	inner *toolsearch.BM25Index
	extra []toolsearch.Hit // added to every search's hits, first

	mu      sync.Mutex
	builds  int
	indexed map[string]bool // every tool name ever indexed
	queries []string
	live    map[string]bool // conversations indexed and not cleared
	maxLive int
}

func newSpy() *spyIndex {
	return &spyIndex{inner: toolsearch.NewBM25Index(), indexed: map[string]bool{}, live: map[string]bool{}}
}

func (s *spyIndex) Index(ctx context.Context, conv string, entries []toolsearch.Entry) error {
	s.mu.Lock()
	s.builds++
	for _, e := range entries {
		s.indexed[e.Definition.Name] = true
	}
	s.live[conv] = true
	s.maxLive = max(s.maxLive, len(s.live))
	s.mu.Unlock()
	return s.inner.Index(ctx, conv, entries)
}

func (s *spyIndex) Search(ctx context.Context, conv string, q *toolsearch.Query) ([]toolsearch.Hit, error) {
	s.mu.Lock()
	s.queries = append(s.queries, q.Text)
	s.mu.Unlock()
	hits, err := s.inner.Search(ctx, conv, q)
	return append(append([]toolsearch.Hit(nil), s.extra...), hits...), err
}

func (s *spyIndex) Clear(ctx context.Context, conv string) error {
	s.mu.Lock()
	delete(s.live, conv)
	s.mu.Unlock()
	return s.inner.Clear(ctx, conv)
}

func (s *spyIndex) Builds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.builds
}

// counter counts the runs of tools.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *counter) tool(name, description string, meta toolgate.ToolMetadata) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: description}, meta,
		func(context.Context, *toolgate.ToolRequest) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.runs == nil {
				c.runs = map[string]int{}
			}
			c.runs[name]++
			return name + " done", nil
		})
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[name]
}

// travelTools are a few tools, bookFlight gated.
func travelTools(c *counter) []*toolgate.Tool {
	return []*toolgate.Tool{
		c.tool("flightStatus", "Get the live status of a flight: on time or delayed.", toolgate.ToolMetadata{}),
		c.tool("bookFlight", "Book a flight for a passenger and issue the ticket.", toolgate.ToolMetadata{RequiresConfirmation: true}),
		c.tool("bookHotel", "Reserve a hotel room for some nights.", toolgate.ToolMetadata{}),
		c.tool("refundPayment", "Refund a card payment to the customer.", toolgate.ToolMetadata{}),
		c.tool("sendEmail", "Send an e-mail message.", toolgate.ToolMetadata{}),
	}
}

func searchCall(id, query string) toolgate.ToolCall {
	args, _ := json.Marshal(toolsearch.Input{Query: query})
	return toolgate.ToolCall{ID: id, Name: toolsearch.DefaultName, Arguments: string(args)}
}

func toolNames(ts []*toolgate.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

// searchResult decodes the first result of the search tool in rs.
func searchResult(t *testing.T, rs []toolgate.ToolResult) toolsearch.Result {
	t.Helper()
	for _, r := range rs {
		if r.Name == toolsearch.DefaultName {
			var res toolsearch.Result
			if err := json.Unmarshal([]byte(r.Content), &res); err != nil {
				t.Fatalf("search result %q: %v", r.Content, err)
			}
			return res
		}
	}
	t.Fatalf("no search result in %+v", rs)
	return toolsearch.Result{}
}

// TestFoundToolPausesAndResumes: the first round offers only the search
// tool; the found gated tool is offered next, pauses the turn, and runs on
// resumption (whose prompt carries every tool); the rounds after it are
// offered the search tool and the found tools again. Both memory
// placements, and a resumption by a fresh searcher (another process).
func TestFoundToolPausesAndResumes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		everyRound bool
		fresh      bool // resume with a new searcher, as another process would
	}{
		{"outside loop", false, false},
		{"inside loop", true, false},
		{"inside loop, other process", true, true},
		{"outside loop, other process", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var c counter
			tools := travelTools(&c)
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "book a flight")}},
				scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "b1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}},
				scripted.Reply{Text: "Booked."},
			)
			store := memory.New()
			opts := &toolgate.ClientOptions{Store: store, StoreEveryRound: tc.everyRound, SearchTools: toolsearch.New(nil).Begin}
			client := toolgate.NewClient(model, tools, opts)
			resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "trip", Input: "Book VX205"})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Paused() || len(resp.Awaiting) != 1 {
				t.Fatalf("got paused %v awaiting %v, want a pause on bookFlight", resp.Paused(), resp.Awaiting)
			}
			if n := c.get("bookFlight"); n != 0 {
				t.Fatalf("bookFlight ran %d times before the decision", n)
			}
			if tc.fresh {
				opts.SearchTools = toolsearch.New(nil).Begin
				client = toolgate.NewClient(model, tools, opts)
			}
			resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "trip", Decisions: []toolgate.Decision{toolgate.Allow(resp.Awaiting[0])}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "Booked." || c.get("bookFlight") != 1 {
				t.Fatalf("got %q with bookFlight run %d times, want Booked. and 1", resp.Text(), c.get("bookFlight"))
			}
			prompts := model.Prompts()
			got := [][]string{toolNames(prompts[0].Tools), toolNames(prompts[1].Tools)}
			want := [][]string{{"search_tools"}, {"search_tools", "bookFlight", "flightStatus", "bookHotel"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("offered tools (-want +got):\n%s", diff)
			}
			// After the resumption, the found tools are offered again when the
			// searcher kept them or the stored history holds the search.
			last := toolNames(prompts[2].Tools)
			wantLast := []string{"search_tools", "bookFlight", "flightStatus", "bookHotel"}
			if tc.fresh && !tc.everyRound {
				wantLast = []string{"search_tools"}
			}
			if diff := cmp.Diff(wantLast, last); diff != "" {
				t.Errorf("tools offered after the resumption (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResumeCarriesEveryTool: the prompt a resumption runs the paused reply
// with carries the search tool and every tool of the round, so that each
// call the person allowed finds its tool (rule 3 of the decisions), even
// one the model did not find: without an authorizer, a reply may name such
// a tool next to a gated one, and the person's decision covers it. With an
// authorizer, the reply is refused before it pauses: its calls must name
// tools the model was shown.
func TestResumeCarriesEveryTool(t *testing.T) {
	ctx := context.Background()
	replies := func() *scripted.Model {
		return scripted.New(
			scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "book a flight")}},
			scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "b1", Name: "bookFlight"}, {ID: "e1", Name: "sendEmail"}}},
			scripted.Reply{Text: "ok"},
		)
	}
	t.Run("no authorizer", func(t *testing.T) {
		var c counter
		model := replies()
		client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{SearchTools: toolsearch.New(nil).Begin})
		resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: "book"})
		if err != nil || !resp.Paused() {
			t.Fatalf("got %v, %v; want a pause", resp, err)
		}
		if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "c"), ConversationID: "c", Decisions: []toolgate.Decision{toolgate.Allow("b1"), toolgate.Allow("e1")}}); err != nil {
			t.Fatal(err)
		}
		if c.get("bookFlight") != 1 || c.get("sendEmail") != 1 {
			t.Fatalf("bookFlight ran %d times, sendEmail %d; want 1 and 1", c.get("bookFlight"), c.get("sendEmail"))
		}
		for i, p := range model.Prompts() {
			if p.Tool("sendEmail") != nil || p.Tool("refundPayment") != nil {
				t.Errorf("prompt %d offered the model %v, tools it never found", i, toolNames(p.Tools))
			}
		}
	})
	t.Run("authorizer", func(t *testing.T) {
		var c counter
		client := toolgate.NewClient(replies(), travelTools(&c), &toolgate.ClientOptions{SearchTools: toolsearch.New(nil).Begin,
			Authorize: authz.NewGuard(authz.AllowAll(), nil).Begin})
		_, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Principal: &toolgate.Principal{ID: "p"}, Input: "book"})
		var de *authz.DenialError
		if !errors.As(err, &de) || de.Code != authz.CodeToolNotExposed || de.Tool != "sendEmail" {
			t.Fatalf("got %v, want %s for sendEmail", err, authz.CodeToolNotExposed)
		}
	})
}

// TestDeniedToolsNeverIndexedNorOffered: with authz.RoleTools, the index
// is built from the tools the authorizer offers; denied tools are neither
// indexed, found nor offered, and calling one is refused.
func TestDeniedToolsNeverIndexedNorOffered(t *testing.T) {
	ctx := context.Background()
	var c counter
	tools := travelTools(&c)
	spy := newSpy()
	guard := authz.NewGuard(authz.RoleTools(map[string][]string{
		"agent": {"flightStatus", "bookHotel", "sendEmail"},
	}), nil)
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "book a flight and refund the payment")}},
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "r1", Name: "refundPayment"}}},
	)
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Authorize: guard.Begin, SearchTools: toolsearch.New(&toolsearch.Options{Index: spy}).Begin})
	_, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Principal: &toolgate.Principal{ID: "sam", Roles: []string{"agent"}}, Input: "hi"})
	var de *authz.DenialError
	if !errors.As(err, &de) || de.Code != authz.CodeToolNotExposed {
		t.Fatalf("calling a denied tool: got %v, want %s", err, authz.CodeToolNotExposed)
	}
	for _, denied := range []string{"bookFlight", "refundPayment"} {
		if spy.indexed[denied] {
			t.Errorf("the denied tool %s was indexed", denied)
		}
		for i, p := range model.Prompts() {
			if p.Tool(denied) != nil {
				t.Errorf("prompt %d offered the denied tool %s", i, denied)
			}
			if strings.Contains(fmt.Sprint(p.Messages), denied) {
				t.Errorf("prompt %d names the denied tool %s", i, denied)
			}
		}
	}
	if !spy.indexed["bookHotel"] {
		t.Errorf("the allowed tool bookHotel was not indexed: %v", spy.indexed)
	}
	if c.get("refundPayment") != 0 {
		t.Error("refundPayment ran")
	}
}

// TestSearchResultNamingDeniedToolRefused: an index that returns a tool the
// request may not see (stale, or shared with other principals) does not
// disclose it: the search drops it and it is never offered.
func TestSearchResultNamingDeniedToolRefused(t *testing.T) {
	ctx := context.Background()
	var c counter
	spy := newSpy()
	spy.extra = []toolsearch.Hit{{Name: "refundPayment", Score: 99}}
	guard := authz.NewGuard(authz.RoleTools(map[string][]string{"agent": {"flightStatus", "bookHotel"}}), nil)
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "hotel")}},
		scripted.Reply{Text: "done"},
	)
	client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{Authorize: guard.Begin, StoreEveryRound: true,
		SearchTools: toolsearch.New(&toolsearch.Options{Index: spy}).Begin})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Principal: &toolgate.Principal{ID: "sam", Roles: []string{"agent"}}, Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := client.Store().Load(ctx, resp.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	res := searchResult(t, conv.Messages[2].(*toolgate.ToolMessage).Results)
	var names []string
	for _, f := range res.Tools {
		names = append(names, f.Name)
	}
	if diff := cmp.Diff([]string{"bookHotel"}, names); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	if p := model.Prompts()[1]; p.Tool("refundPayment") != nil {
		t.Error("the denied tool was offered")
	}
}

// TestQueryTokenizedBeforeIndex: with the privacy guard, personal data the
// model typed into a query never reaches the index: the search tool, like
// every tool, receives tokens of the types it is not granted.
func TestQueryTokenizedBeforeIndex(t *testing.T) {
	ctx := context.Background()
	const email = "ada.lovelace@example.com"
	const card = "4111 1111 1111 1111"
	var c counter
	spy := newSpy()
	guard, err := privacy.NewGuard(&privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"sendEmail": privacy.Types(privacy.EmailAddress)}})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "send an e-mail to "+email+" about card "+card)}},
		scripted.Reply{Text: "done"},
	)
	client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{Protect: guard.Begin, SearchTools: toolsearch.New(&toolsearch.Options{Index: spy}).Begin})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	spy.mu.Lock()
	queries := append([]string(nil), spy.queries...)
	spy.mu.Unlock()
	if len(queries) != 1 {
		t.Fatalf("the index got %d queries, want 1", len(queries))
	}
	q := queries[0]
	if strings.Contains(q, email) || strings.Contains(q, "4111") || !strings.Contains(q, "send an e-mail to ") {
		t.Errorf("the index got the query %q, want it tokenized", q)
	}
	if !strings.Contains(q, "EMAIL") {
		t.Errorf("the query %q holds no e-mail token", q)
	}
	if resp.Text() != "done" {
		t.Errorf("got %q", resp.Text())
	}
	// The search still works on the words around the tokens.
	if p := model.Prompts()[1]; p.Tool("sendEmail") == nil {
		t.Errorf("sendEmail was not found: offered %v", toolNames(p.Tools))
	}
}

// TestReindexOnlyOnChange: the index is built once for a conversation and
// rebuilt only when the tools (names, descriptions, schemas) change.
func TestReindexOnlyOnChange(t *testing.T) {
	ctx := context.Background()
	var c counter
	tools := travelTools(&c)
	spy := newSpy()
	search := toolsearch.New(&toolsearch.Options{Index: spy})
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if len(p.Messages)%4 == 1 { // a new user message: search first
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s", "flight status")}}, nil
		}
		return scripted.Reply{Text: "ok"}, nil
	})
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{SearchTools: search.Begin, StoreEveryRound: true})
	call := func(input string) {
		t.Helper()
		if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: input}); err != nil {
			t.Fatal(err)
		}
	}
	call("one")
	call("two")
	call("three")
	if n := spy.Builds(); n != 1 {
		t.Fatalf("3 turns of 2 rounds built the index %d times, want 1", n)
	}
	// Same names, same instances' definitions: a new client with equal tools
	// does not rebuild.
	client = toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{SearchTools: search.Begin, StoreEveryRound: true})
	call("four")
	if n := spy.Builds(); n != 1 {
		t.Fatalf("equal tools rebuilt the index: %d builds, want 1", n)
	}
	// A changed description rebuilds once.
	changed := travelTools(&c)
	changed[0] = c.tool("flightStatus", "Tell whether a flight is on time.", toolgate.ToolMetadata{})
	client = toolgate.NewClient(model, changed, &toolgate.ClientOptions{SearchTools: search.Begin, StoreEveryRound: true})
	call("five")
	call("six")
	if n := spy.Builds(); n != 2 {
		t.Fatalf("a changed description: %d builds, want 2", n)
	}
	// Another conversation has its own index.
	if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "d", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	if n := spy.Builds(); n != 3 {
		t.Fatalf("a second conversation: %d builds, want 3", n)
	}
}

// TestEvictionBound: the searcher keeps at most MaxConversations
// conversations, clears evicted ones from the index, and Delete forgets one
// at once.
func TestEvictionBound(t *testing.T) {
	ctx := context.Background()
	var c counter
	spy := newSpy()
	const bound = 3
	search := toolsearch.New(&toolsearch.Options{Index: spy, MaxConversations: bound})
	model := scripted.NewFunc(func(*toolgate.Prompt) (scripted.Reply, error) { return scripted.Reply{Text: "ok"}, nil })
	client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{SearchTools: search.Begin})
	for i := range 10 {
		if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: fmt.Sprint("c", i), Input: "x"}); err != nil {
			t.Fatal(err)
		}
		if n := search.Len(); n > bound {
			t.Fatalf("after %d conversations the searcher keeps %d, want at most %d", i+1, n, bound)
		}
	}
	spy.mu.Lock()
	live, maxLive := len(spy.live), spy.maxLive
	spy.mu.Unlock()
	if live != bound || maxLive > bound+1 {
		t.Errorf("the index holds %d conversations (at most %d at once), want %d (at most %d while one is added)", live, maxLive, bound, bound+1)
	}
	if err := search.Delete(ctx, "c9"); err != nil {
		t.Fatal(err)
	}
	if search.Len() != bound-1 || spy.live["c9"] {
		t.Errorf("after Delete: searcher keeps %d, index holds c9: %v", search.Len(), spy.live["c9"])
	}
	// A conversation used again is the most recent: c7 survives two more.
	for _, id := range []string{"c7", "n1", "n2"} {
		if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: id, Input: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if !spy.live["c7"] || spy.live["c8"] {
		t.Errorf("LRU order: c7 live %v (want true), c8 live %v (want false)", spy.live["c7"], spy.live["c8"])
	}
}

// TestLatestOnly: with LatestOnly, a round is offered the tools of the
// latest search only; by default, every tool found in the conversation.
func TestLatestOnly(t *testing.T) {
	for _, latest := range []bool{false, true} {
		t.Run(fmt.Sprint("latest=", latest), func(t *testing.T) {
			ctx := context.Background()
			var c counter
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "hotel room")}},
				scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s2", "send e-mail")}},
				scripted.Reply{Text: "ok"},
				scripted.Reply{Text: "next turn"},
			)
			client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{SearchTools: toolsearch.New(&toolsearch.Options{LatestOnly: latest}).Begin})
			for _, in := range []string{"one", "two"} {
				if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: in}); err != nil {
					t.Fatal(err)
				}
			}
			p := model.Prompts()
			got := [][]string{toolNames(p[1].Tools), toolNames(p[2].Tools), toolNames(p[3].Tools)}
			want := [][]string{{"search_tools", "bookHotel"}, {"search_tools", "bookHotel", "sendEmail"}, {"search_tools", "bookHotel", "sendEmail"}}
			if latest {
				want = [][]string{{"search_tools", "bookHotel"}, {"search_tools", "sendEmail"}, {"search_tools", "sendEmail"}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("offered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostileInput: whatever the model sends, the search tool answers with
// a clear result or error result, never a panic, and respects its caps.
func TestHostileInput(t *testing.T) {
	ctx := context.Background()
	fixture := loadFixture(t)
	tools := make([]*toolgate.Tool, len(fixture))
	for i, f := range fixture {
		tools[i] = toolgate.NewTool(f.ToolDefinition, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	}
	cats := map[string]string{}
	for _, f := range fixture {
		cats[f.Name] = f.Category
	}
	search := toolsearch.New(&toolsearch.Options{MaxResults: 8, Category: func(d toolgate.ToolDefinition) string { return cats[d.Name] }})
	rs, err := search.Begin(ctx, &toolgate.BeginParams{ConversationID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Offer(ctx, nil, tools); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("refund payment ", 10000)
	for _, tc := range []struct {
		name, args string
		wantErr    string // in the error, when the call fails
		wantN      int    // tools found, when it does not
		wantNote   string // in the note
	}{
		{name: "empty query", args: `{"query":""}`, wantErr: "query is empty"},
		{name: "blank query", args: `{"query":"  \t "}`, wantErr: "query is empty"},
		{name: "no query", args: `{}`, wantErr: "invalid arguments"},
		{name: "not JSON", args: `{"query":`, wantErr: "invalid arguments"},
		{name: "wrong type", args: `{"query":42}`, wantErr: "invalid arguments"},
		{name: "huge max", args: `{"query":"payment","max":1000000}`, wantN: 8},
		{name: "max too large for int", args: `{"query":"payment","max":1e300}`, wantErr: "invalid arguments"},
		{name: "zero max", args: `{"query":"payment","max":0}`, wantN: toolsearch.DefaultResults},
		{name: "negative max", args: `{"query":"payment","max":-3}`, wantN: toolsearch.DefaultResults},
		{name: "max 1", args: `{"query":"payment","max":1}`, wantN: 1},
		{name: "huge query", args: fmt.Sprintf(`{"query":%q}`, huge), wantN: toolsearch.DefaultResults, wantNote: "cut"},
		{name: "unknown category", args: `{"query":"payment","category":"weather"}`, wantN: 0, wantNote: `no category "weather"`},
		{name: "known category", args: `{"query":"cancel","category":"Travel","max":20}`, wantN: 2},
		{name: "only stop words", args: `{"query":"the of and to"}`, wantN: 0, wantNote: "No tool matches"},
		{name: "invalid UTF-8", args: "{\"query\":\"pay\xff\xfement\"}", wantN: toolsearch.DefaultResults},
		{name: "control characters", args: `{"query":"\u0000\u0001 refund"}`, wantN: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rs.Tool().Call(ctx, &toolgate.ToolRequest{Call: toolgate.ToolCall{Name: toolsearch.DefaultName, Arguments: tc.args}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error with %q", out, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var res toolsearch.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if res.Tools == nil {
				t.Errorf("tools is null in %s", out)
			}
			if len(res.Tools) != tc.wantN {
				t.Errorf("found %d tools, want %d: %s", len(res.Tools), tc.wantN, out)
			}
			if !strings.Contains(res.Note, tc.wantNote) {
				t.Errorf("note %q, want it to contain %q", res.Note, tc.wantNote)
			}
			if tc.name == "known category" {
				for _, f := range res.Tools {
					if cats[f.Name] != "travel" {
						t.Errorf("%s is not a travel tool", f.Name)
					}
				}
			}
		})
	}
}

// TestSearchToolReplaced: the authorization guard recognises the request's
// search tool by identity: model middleware that swaps it for another tool
// of the same name is refused with TOOL_SEARCH_CHANGED.
func TestSearchToolReplaced(t *testing.T) {
	ctx := context.Background()
	var c counter
	fake := toolgate.NewTool(toolgate.ToolDefinition{Name: toolsearch.DefaultName}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) {
			return `{"tools":[{"name":"refundPayment"}]}`, nil
		})
	swap := func(next toolgate.ModelFunc) toolgate.ModelFunc {
		return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
			for i, tool := range p.Tools {
				if tool.Name() == toolsearch.DefaultName {
					p.Tools[i] = fake
				}
			}
			return next(ctx, p)
		}
	}
	model := scripted.New(scripted.Reply{Text: "ok"})
	client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{
		Authorize:       authz.NewGuard(authz.AllowAll(), nil).Begin,
		SearchTools:     toolsearch.New(nil).Begin,
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{swap},
	})
	_, err := client.Call(ctx, &toolgate.CallParams{Principal: &toolgate.Principal{ID: "p"}, Input: "x"})
	var de *authz.DenialError
	if !errors.As(err, &de) || de.Code != authz.CodeToolSearchChanged {
		t.Fatalf("got %v, want %s", err, authz.CodeToolSearchChanged)
	}
	if len(model.Prompts()) != 0 {
		t.Error("the model was called")
	}
}

// TestSearchToolNameClash: a search tool named like a client tool is
// refused at the start of a request.
func TestSearchToolNameClash(t *testing.T) {
	var c counter
	client := toolgate.NewClient(scripted.New(), travelTools(&c), &toolgate.ClientOptions{SearchTools: toolsearch.New(&toolsearch.Options{Name: "sendEmail"}).Begin})
	_, err := client.Call(context.Background(), &toolgate.CallParams{Input: "x"})
	if err == nil || !strings.Contains(err.Error(), "sendEmail") {
		t.Fatalf("got %v, want a name clash", err)
	}
}

// TestFoundToolPausesWithGuards: with the privacy and the authorization
// guards, the search tool (wrapped by the privacy guard) is the instance
// the authorizer recognises; the found gated tool pauses, and the
// resumption authorizes and runs it.
func TestFoundToolPausesWithGuards(t *testing.T) {
	ctx := context.Background()
	var c counter
	prot, err := privacy.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	var events []authz.Event
	var mu sync.Mutex
	guard := authz.NewGuard(authz.RoleTools(map[string][]string{"agent": {"flightStatus", "bookFlight", "bookHotel"}}),
		&authz.Options{OnDecision: func(e authz.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s1", "book a flight")}},
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "b1", Name: "bookFlight"}}},
		scripted.Reply{Text: "Booked."},
	)
	client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{Authorize: guard.Begin, Protect: prot.Begin, SearchTools: toolsearch.New(nil).Begin})
	sam := &toolgate.Principal{ID: "sam", Roles: []string{"agent"}}
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Principal: sam, Input: "book VX205"})
	if err != nil || !resp.Paused() {
		t.Fatalf("got %v, %v; want a pause", resp, err)
	}
	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "c", Principal: sam, Decisions: []toolgate.Decision{toolgate.Allow("b1")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Booked." || c.get("bookFlight") != 1 {
		t.Fatalf("got %q, bookFlight ran %d times", resp.Text(), c.get("bookFlight"))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		if e.Tool == toolsearch.DefaultName {
			t.Errorf("the search tool got a policy decision: %+v", e)
		}
	}
}

// TestConcurrentConversations: more conversations searched at once than the
// bound keep the bound.
func TestConcurrentConversations(t *testing.T) {
	ctx := context.Background()
	var c counter
	spy := newSpy()
	const bound = 4
	search := toolsearch.New(&toolsearch.Options{Index: spy, MaxConversations: bound})
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if len(p.Tools) == 1 {
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{searchCall("s", "hotel room")}}, nil
		}
		return scripted.Reply{Text: "ok"}, nil
	})
	client := toolgate.NewClient(model, travelTools(&c), &toolgate.ClientOptions{SearchTools: search.Begin})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 8 {
				if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: fmt.Sprint("g", g, "c", i), Input: "x"}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	spy.mu.Lock()
	live := len(spy.live)
	spy.mu.Unlock()
	if n := search.Len(); n > bound || live > bound {
		t.Errorf("the searcher keeps %d conversations and the index %d, want at most %d", n, live, bound)
	}
}

// TestSearchAfterEviction: a request whose conversation was evicted while
// it ran (more conversations at once than the bound) indexes it again
// before it searches.
func TestSearchAfterEviction(t *testing.T) {
	ctx := context.Background()
	var c counter
	tools := travelTools(&c)
	spy := newSpy()
	search := toolsearch.New(&toolsearch.Options{Index: spy, MaxConversations: 1})
	a, err := search.Begin(ctx, &toolgate.BeginParams{ConversationID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Offer(ctx, nil, tools); err != nil {
		t.Fatal(err)
	}
	b, err := search.Begin(ctx, &toolgate.BeginParams{ConversationID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Offer(ctx, nil, tools); err != nil {
		t.Fatal(err)
	}
	if spy.live["a"] {
		t.Fatal("conversation a was not evicted")
	}
	out, err := a.Tool().Call(ctx, &toolgate.ToolRequest{Call: searchCall("s", "hotel room")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "bookHotel") {
		t.Errorf("the search of an evicted conversation found %s, want bookHotel", out)
	}
	if search.Len() != 1 || !spy.live["a"] || spy.live["b"] {
		t.Errorf("after the search: %d kept, a live %v, b live %v; want 1, true, false", search.Len(), spy.live["a"], spy.live["b"])
	}
}
