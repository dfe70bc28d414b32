// Package recordstest is the conformance kit of [records.Store]
// implementations: [Run] checks one, [Benchmark] measures one.
//
//	func TestRecords(t *testing.T) {
//		recordstest.Run(t, func(t *testing.T) records.Store { return records.NewMemory() })
//	}
package recordstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// Run runs the conformance tests of a [records.Store]. newStore returns an
// empty store for each subtest; it may register cleanups with t.
func Run(t *testing.T, newStore func(t *testing.T) records.Store) {
	t.Run("Conversations", func(t *testing.T) { testConversations(t, newStore(t)) })
	t.Run("ListConversations", func(t *testing.T) { testListConversations(t, newStore(t)) })
	t.Run("Decisions", func(t *testing.T) { testDecisions(t, newStore(t)) })
	t.Run("ConcurrentBegin", func(t *testing.T) { testConcurrentBegin(t, newStore(t)) })
	t.Run("Pending", func(t *testing.T) { testPending(t, newStore(t)) })
	t.Run("PendingScopes", func(t *testing.T) { testPendingScopes(t, newStore(t)) })
	t.Run("FinishResolves", func(t *testing.T) { testFinishResolves(t, newStore(t)) })
	t.Run("Approvals", func(t *testing.T) { testApprovals(t, newStore(t)) })
	t.Run("Grants", func(t *testing.T) { testGrants(t, newStore(t)) })
	t.Run("Canceled", func(t *testing.T) { testCanceled(t, newStore(t)) })
	t.Run("RequestKeys", func(t *testing.T) { testRequestKeys(t, newStore(t)) })
	t.Run("ConcurrentReserve", func(t *testing.T) { testConcurrentReserve(t, newStore(t)) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, newStore(t)) })
	t.Run("FinalOutcome", func(t *testing.T) { testFinalOutcome(t, newStore(t)) })
}

// at is a fixed instant with nanoseconds, which stores must keep.
var at = time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.UTC)

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testConversations(t *testing.T, s records.Store) {
	ctx := t.Context()
	c := &records.Conversation{ID: "conv_1", Agent: "flights", CreatedAt: at,
		Owner: toolgate.Principal{ID: "ada", Roles: []string{"traveller", "staff"}, Attributes: map[string]string{"team": "ops"}}}
	must(t, "CreateConversation", s.CreateConversation(ctx, c))
	c.Owner.Roles[0] = "changed after the call"
	got, err := s.Conversation(ctx, "conv_1")
	must(t, "Conversation", err)
	want := &records.Conversation{ID: "conv_1", Agent: "flights", CreatedAt: at,
		Owner: toolgate.Principal{ID: "ada", Roles: []string{"traveller", "staff"}, Attributes: map[string]string{"team": "ops"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Conversation (-want +got):\n%s", diff)
	}
	got.Owner.Roles[0] = "changed by the caller"
	again, _ := s.Conversation(ctx, "conv_1")
	if again.Owner.Roles[0] != "traveller" {
		t.Errorf("a returned conversation shares memory with the store: roles %v", again.Owner.Roles)
	}

	wantErr(t, "CreateConversation of a taken id", s.CreateConversation(ctx, want), records.ErrExists)
	_, err = s.Conversation(ctx, "conv_none")
	wantErr(t, "Conversation of an unknown id", err, records.ErrNotFound)
	for _, bad := range []*records.Conversation{
		nil,
		{Agent: "flights", Owner: toolgate.Principal{ID: "ada"}},
		{ID: "conv_2", Owner: toolgate.Principal{ID: "ada"}},
		{ID: "conv_3", Agent: "flights"},
	} {
		wantErr(t, fmt.Sprintf("CreateConversation(%+v)", bad), s.CreateConversation(ctx, bad), records.ErrInvalid)
	}
	// Hostile but storable values come back as they were.
	odd := &records.Conversation{ID: "conv_'\"; DROP TABLE x; --é", Agent: "a\nb", CreatedAt: time.Unix(0, 1).UTC(),
		Owner: toolgate.Principal{ID: "O'Brien \U0001F600"}}
	must(t, "CreateConversation of odd strings", s.CreateConversation(ctx, odd))
	got, err = s.Conversation(ctx, odd.ID)
	must(t, "Conversation of odd strings", err)
	if diff := cmp.Diff(odd, got); diff != "" {
		t.Errorf("odd strings (-want +got):\n%s", diff)
	}
}

func testListConversations(t *testing.T, s records.Store) {
	ctx := t.Context()
	empty, err := s.ListConversations(ctx, nil)
	must(t, "ListConversations of an empty store", err)
	if empty.Conversations == nil || len(empty.Conversations) != 0 || empty.Next != "" {
		t.Errorf("empty store: %+v, want an empty, non-nil page", empty)
	}
	var ids []string
	for i := range 7 {
		owner := "ada"
		if i%3 == 2 {
			owner = "bob"
		}
		// Creation times out of order: the listing is in creation order,
		// not time order.
		c := &records.Conversation{ID: fmt.Sprintf("conv_%c", 'z'-i), Agent: "flights", Owner: toolgate.Principal{ID: owner}, CreatedAt: at.Add(-time.Duration(i) * time.Second)}
		must(t, "CreateConversation", s.CreateConversation(ctx, c))
		ids = append(ids, c.ID)
	}
	list := func(owner string, limit int) []string {
		t.Helper()
		var out []string
		p := &records.ListParams{Owner: owner, Limit: limit}
		for range 20 {
			page, err := s.ListConversations(ctx, p)
			must(t, "ListConversations", err)
			if limit > 0 && len(page.Conversations) > limit {
				t.Fatalf("page of %d conversations, want at most %d", len(page.Conversations), limit)
			}
			for _, c := range page.Conversations {
				if owner != "" && c.Owner.ID != owner {
					t.Errorf("owner filter %q listed %+v", owner, c)
				}
				out = append(out, c.ID)
			}
			if page.Next == "" {
				return out
			}
			p.After = page.Next
		}
		t.Fatal("more than 20 pages")
		return nil
	}
	if diff := cmp.Diff(ids, list("", 0)); diff != "" {
		t.Errorf("all, one page (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ids, list("", 2)); diff != "" {
		t.Errorf("all, pages of 2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ids, list("", 7)); diff != "" {
		t.Errorf("all, a page of exactly 7 (-want +got):\n%s", diff)
	}
	wantAda := []string{ids[0], ids[1], ids[3], ids[4], ids[6]}
	if diff := cmp.Diff(wantAda, list("ada", 2)); diff != "" {
		t.Errorf("ada's, pages of 2 (-want +got):\n%s", diff)
	}
	if got := list("nobody", 3); len(got) != 0 {
		t.Errorf("nobody's: %v, want none", got)
	}
	_, err = s.ListConversations(ctx, &records.ListParams{After: "conv_none"})
	wantErr(t, "ListConversations after an unknown cursor", err, records.ErrInvalid)
}

// decision returns a record for pause of conv decided by by.
func decision(conv, pause, by string) *records.Decision {
	return &records.Decision{ConversationID: conv, PauseID: pause, Source: records.SourcePerson, DecidedBy: by, DecidedAt: at,
		Decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Deny("call_book", "Not \"now\".")}, Outcome: records.OutcomeDeciding}
}

func testDecisions(t *testing.T, s records.Store) {
	ctx := t.Context()
	first := decision("conv_1", "pause_1", "bob")
	first.Approvers = []string{"cy", "bob"}
	prior, err := s.Begin(ctx, first)
	if err != nil || prior != nil {
		t.Fatalf("first Begin: %+v, %v; want nil, nil", prior, err)
	}
	prior, err = s.Begin(ctx, decision("conv_1", "pause_1", "eve"))
	must(t, "second Begin", err)
	if diff := cmp.Diff(first, prior); diff != "" {
		t.Errorf("second Begin returns (-want +got):\n%s", diff)
	}
	must(t, "Finish", s.Finish(ctx, "conv_1", "pause_1", records.OutcomeDecided))
	got, err := s.Decision(ctx, "conv_1", "pause_1")
	must(t, "Decision", err)
	first.Outcome = records.OutcomeDecided
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("Decision (-want +got):\n%s", diff)
	}

	// Released, a pause can be begun again.
	must(t, "Begin pause_2", beginNil(s, ctx, decision("conv_1", "pause_2", "bob")))
	must(t, "Finish none", s.Finish(ctx, "conv_1", "pause_2", records.OutcomeNone))
	_, err = s.Decision(ctx, "conv_1", "pause_2")
	wantErr(t, "Decision of a released pause", err, records.ErrNotFound)
	sticky := &records.Decision{ConversationID: "conv_1", PauseID: "pause_2", Source: records.SourceSticky, DecidedAt: at.Add(time.Second),
		Grants: []records.GrantRef{{ID: "grant_1", GrantedBy: "bob"}}, Decisions: []toolgate.Decision{toolgate.Allow("call_book")}, Outcome: records.OutcomeDeciding}
	must(t, "Begin after release", beginNil(s, ctx, sticky))
	expired := &records.Decision{ConversationID: "conv_1", PauseID: "pause_0", Source: records.SourceExpiry, DecidedAt: at.Add(-time.Hour),
		Decisions: []toolgate.Decision{}, Outcome: records.OutcomeExpired}
	must(t, "Begin an expiry", beginNil(s, ctx, expired))
	must(t, "Begin elsewhere", beginNil(s, ctx, decision("conv_2", "pause_1", "bob")))

	all, err := s.Decisions(ctx, "conv_1")
	must(t, "Decisions", err)
	if diff := cmp.Diff([]records.Decision{*first, *sticky, *expired}, all); diff != "" {
		t.Errorf("Decisions in begin order (-want +got):\n%s", diff)
	}
	none, err := s.Decisions(ctx, "conv_none")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("Decisions of an unknown conversation: %v, %v; want an empty slice", none, err)
	}

	wantErr(t, "Finish of an unknown pause", s.Finish(ctx, "conv_1", "pause_none", records.OutcomeDecided), records.ErrNotFound)
	wantErr(t, "Finish with a bad outcome", s.Finish(ctx, "conv_1", "pause_1", "won"), records.ErrInvalid)
	_, err = s.Decision(ctx, "conv_none", "pause_1")
	wantErr(t, "Decision of an unknown pause", err, records.ErrNotFound)
	for name, d := range map[string]*records.Decision{
		"nil":         nil,
		"no pause":    {ConversationID: "conv_1", Source: records.SourcePerson, Outcome: records.OutcomeDeciding},
		"no conv":     {PauseID: "p", Source: records.SourcePerson, Outcome: records.OutcomeDeciding},
		"bad source":  {ConversationID: "conv_1", PauseID: "p", Source: "robot", Outcome: records.OutcomeDeciding},
		"bad outcome": {ConversationID: "conv_1", PauseID: "p", Source: records.SourcePerson, Outcome: "maybe"},
		"no outcome":  {ConversationID: "conv_1", PauseID: "p", Source: records.SourcePerson},
	} {
		_, err := s.Begin(ctx, d)
		wantErr(t, "Begin "+name, err, records.ErrInvalid)
	}
}

// beginNil begins d and fails unless it was stored.
func beginNil(s records.Store, ctx context.Context, d *records.Decision) error {
	prior, err := s.Begin(ctx, d)
	if err == nil && prior != nil {
		return fmt.Errorf("pause %q already begun by %+v", d.PauseID, prior)
	}
	return err
}

// testConcurrentBegin races 64 Begins, with different deciders, on each of
// several pauses: exactly one wins, and every loser gets its record.
func testConcurrentBegin(t *testing.T, s records.Store) {
	const n = 64
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		pause := "pause_" + strconv.Itoa(round)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			winners = make([]bool, n)
			seen    = make([]string, n)
			errs    = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				prior, err := s.Begin(context.Background(), decision("conv_race", pause, "p"+strconv.Itoa(i)))
				switch {
				case err != nil:
					errs[i] = err
				case prior == nil:
					winners[i] = true
				default:
					seen[i] = prior.DecidedBy
				}
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: Begin %d: %v", round, i, errs[i])
			}
			if winners[i] {
				if winner >= 0 {
					t.Fatalf("round %d: Begins %d and %d both won", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no Begin won", round)
		}
		for i := range n {
			if i != winner && seen[i] != "p"+strconv.Itoa(winner) {
				t.Errorf("round %d: loser %d saw decider %q, want p%d", round, i, seen[i], winner)
			}
		}
	}
}

func testPending(t *testing.T, s records.Store) {
	ctx := t.Context()
	page, err := s.ListPending(ctx, nil)
	must(t, "ListPending of an empty index", err)
	if page.Pending == nil || len(page.Pending) != 0 || page.Next != "" {
		t.Errorf("empty index: %+v, want an empty, non-nil page", page)
	}
	entries := []records.Pending{
		{ConversationID: "conv_c", Agent: "flights", PauseID: "pause_1", CreatedAt: at.Add(2 * time.Second)},
		{ConversationID: "conv_a", Agent: "flights", PauseID: "pause_1", CreatedAt: at},
		{ConversationID: "conv_b", Agent: "trains", PauseID: "pause_1", CreatedAt: at}, // same time: by id
		{ConversationID: "conv_d", Agent: "flights", PauseID: "pause_1", CreatedAt: at.Add(time.Nanosecond)},
	}
	for i := range entries {
		must(t, "AddPending", s.AddPending(ctx, &entries[i]))
	}
	// conv_c's pause is resolved and a new one opened: the entry is replaced.
	replaced := records.Pending{ConversationID: "conv_c", Agent: "flights", PauseID: "pause_2", CreatedAt: at.Add(3 * time.Second)}
	must(t, "AddPending replacing", s.AddPending(ctx, &replaced))
	// A stale removal (of the old pause) leaves the new entry.
	must(t, "RemovePending of a stale pause", s.RemovePending(ctx, "conv_c", "pause_1"))
	must(t, "RemovePending of nothing", s.RemovePending(ctx, "conv_none", "pause_1"))
	want := []records.Pending{entries[1], entries[2], entries[3], replaced}
	list := func(limit int) []records.Pending {
		t.Helper()
		var out []records.Pending
		p := &records.ListParams{Limit: limit}
		for range 20 {
			page, err := s.ListPending(ctx, p)
			must(t, "ListPending", err)
			out = append(out, page.Pending...)
			if page.Next == "" {
				return out
			}
			p.After = page.Next
		}
		t.Fatal("more than 20 pages")
		return nil
	}
	for _, limit := range []int{0, 1, 3, 4} {
		if diff := cmp.Diff(want, list(limit)); diff != "" {
			t.Errorf("ListPending in pages of %d (-want +got):\n%s", limit, diff)
		}
	}
	must(t, "RemovePending", s.RemovePending(ctx, "conv_a", "pause_1"))
	if diff := cmp.Diff(want[1:], list(0)); diff != "" {
		t.Errorf("after RemovePending (-want +got):\n%s", diff)
	}
	_, err = s.ListPending(ctx, &records.ListParams{After: "conv_a"})
	wantErr(t, "ListPending after a removed entry", err, records.ErrInvalid)
	for _, bad := range []*records.Pending{nil, {Agent: "a", PauseID: "p"}, {ConversationID: "c", Agent: "a"}, {ConversationID: "c", PauseID: "p"}} {
		wantErr(t, fmt.Sprintf("AddPending(%+v)", bad), s.AddPending(ctx, bad), records.ErrInvalid)
	}
}

// testPendingScopes checks that the index keeps the awaiting tools of its
// entries and that a listing with scopes returns exactly the entries they
// match, in order and in pages, whatever else the index holds.
func testPendingScopes(t *testing.T, s records.Store) {
	ctx := t.Context()
	add := func(conv, agent string, sec int, tools ...string) records.Pending {
		t.Helper()
		e := records.Pending{ConversationID: conv, Agent: agent, PauseID: "pause_1", CreatedAt: at.Add(time.Duration(sec) * time.Second), Tools: tools}
		must(t, "AddPending", s.AddPending(ctx, &e))
		e.Tools = records.PendingTools(tools)
		return e
	}
	book := add("conv_book", "flights", 1, "bookFlight", "bookFlight") // twice: kept once
	both := add("conv_both", "flights", 2, "refund", "bookFlight")     // kept sorted
	refund := add("conv_refund", "flights", 3, "refund")
	unknown := add("conv_unknown", "flights", 4) // tools not known: every scope of the agent
	train := add("conv_train", "trains", 5, "bookFlight")
	// The entry of a conversation whose pause changed carries the new tools.
	add("conv_moved", "flights", 6, "bookFlight")
	moved := add("conv_moved", "flights", 7, "cancel")
	// A removed entry leaves no trace in a scoped listing.
	add("conv_gone", "flights", 8, "bookFlight")
	must(t, "RemovePending", s.RemovePending(ctx, "conv_gone", "pause_1"))
	// So does one a Finish resolves.
	add("conv_done", "flights", 9, "bookFlight")
	must(t, "Begin", beginNil(s, ctx, decision("conv_done", "pause_1", "bob")))
	must(t, "Finish", s.Finish(ctx, "conv_done", "pause_1", records.OutcomeDecided))

	list := func(scopes []records.Scope, limit int) []records.Pending {
		t.Helper()
		out := []records.Pending{}
		p := &records.ListParams{Scopes: scopes, Limit: limit}
		for range 20 {
			page, err := s.ListPending(ctx, p)
			must(t, "ListPending", err)
			out = append(out, page.Pending...)
			if page.Next == "" {
				return out
			}
			p.After = page.Next
		}
		t.Fatal("more than 20 pages")
		return nil
	}
	all := []records.Pending{book, both, refund, unknown, train, moved}
	for _, tc := range []struct {
		name   string
		scopes []records.Scope
		want   []records.Pending
	}{
		{"no scopes", nil, all},
		{"one tool", []records.Scope{{Agent: "flights", Tools: []string{"bookFlight"}}}, []records.Pending{book, both, unknown}},
		{"two tools", []records.Scope{{Agent: "flights", Tools: []string{"cancel", "refund"}}}, []records.Pending{both, refund, unknown, moved}},
		{"any tool", []records.Scope{{Agent: "flights"}}, []records.Pending{book, both, refund, unknown, moved}},
		{"two agents", []records.Scope{{Agent: "trains", Tools: []string{"bookFlight"}}, {Agent: "flights", Tools: []string{"refund"}}},
			[]records.Pending{both, refund, unknown, train}},
		{"a tool of another agent", []records.Scope{{Agent: "trains", Tools: []string{"refund"}}}, []records.Pending{}},
		{"no entry", []records.Scope{{Agent: "flights", Tools: []string{"nothing"}}}, []records.Pending{unknown}},
		{"an agent without entries", []records.Scope{{Agent: "ships"}}, []records.Pending{}},
		{"empty tool list", []records.Scope{{Agent: "flights", Tools: []string{}}}, []records.Pending{unknown}},
		{"hostile names", []records.Scope{{Agent: "flights' OR 1=1 --", Tools: []string{"%", "*", "", "_", "\\"}}}, []records.Pending{}},
	} {
		for _, limit := range []int{0, 1, 2} {
			if diff := cmp.Diff(tc.want, list(tc.scopes, limit)); diff != "" {
				t.Errorf("%s, pages of %d (-want +got):\n%s", tc.name, limit, diff)
			}
		}
	}
	// A cursor must name an entry of the index, matched or not.
	page, err := s.ListPending(ctx, &records.ListParams{Scopes: []records.Scope{{Agent: "trains"}}, After: "conv_book"})
	must(t, "ListPending after an entry the scopes do not match", err)
	if diff := cmp.Diff([]records.Pending{train}, page.Pending); diff != "" {
		t.Errorf("after an unmatched cursor (-want +got):\n%s", diff)
	}
	_, err = s.ListPending(ctx, &records.ListParams{Scopes: []records.Scope{{Agent: "flights"}}, After: "conv_gone"})
	wantErr(t, "ListPending after a removed entry, with scopes", err, records.ErrInvalid)
}

// testFinishResolves checks that Finish takes a resolved pause out of the
// index, and only then.
func testFinishResolves(t *testing.T, s records.Store) {
	ctx := t.Context()
	pending := func() []string {
		t.Helper()
		page, err := s.ListPending(ctx, nil)
		must(t, "ListPending", err)
		var out []string
		for _, p := range page.Pending {
			out = append(out, p.ConversationID+"/"+p.PauseID)
		}
		return out
	}
	for _, o := range []records.Outcome{records.OutcomeDecided, records.OutcomeExpired, records.OutcomeRecovered, records.OutcomeFailed, records.OutcomeNone} {
		conv := "conv_" + string(o)
		if o == records.OutcomeNone {
			conv = "conv_released"
		}
		must(t, "AddPending", s.AddPending(ctx, &records.Pending{ConversationID: conv, Agent: "flights", PauseID: "pause_1", CreatedAt: at}))
		must(t, "Begin", beginNil(s, ctx, decision(conv, "pause_1", "bob")))
		must(t, "Finish "+string(o), s.Finish(ctx, conv, "pause_1", o))
	}
	// Decided, expired and recovered leave the index; a failed resumption
	// and a released pause stay.
	want := []string{"conv_failed/pause_1", "conv_released/pause_1"}
	if diff := cmp.Diff(want, pending()); diff != "" {
		t.Errorf("index after Finish (-want +got):\n%s", diff)
	}

	// The entry of a newer pause of the same conversation stays.
	must(t, "AddPending newer", s.AddPending(ctx, &records.Pending{ConversationID: "conv_new", Agent: "flights", PauseID: "pause_2", CreatedAt: at}))
	must(t, "Begin older", beginNil(s, ctx, decision("conv_new", "pause_1", "bob")))
	must(t, "Finish older", s.Finish(ctx, "conv_new", "pause_1", records.OutcomeDecided))
	// A Finish that fails (no record) leaves the entry.
	must(t, "AddPending unbegun", s.AddPending(ctx, &records.Pending{ConversationID: "conv_unbegun", Agent: "flights", PauseID: "pause_1", CreatedAt: at}))
	wantErr(t, "Finish without a record", s.Finish(ctx, "conv_unbegun", "pause_1", records.OutcomeDecided), records.ErrNotFound)
	want = []string{"conv_failed/pause_1", "conv_new/pause_2", "conv_released/pause_1", "conv_unbegun/pause_1"}
	if diff := cmp.Diff(want, pending()); diff != "" {
		t.Errorf("index after Finish of an older pause and a failed Finish (-want +got):\n%s", diff)
	}
}

func testApprovals(t *testing.T, s records.Store) {
	ctx := t.Context()
	_, err := s.Approval(ctx, "conv_1", "pause_1")
	wantErr(t, "Approval of an unapproved pause", err, records.ErrNotFound)
	first := &records.Approval{ConversationID: "conv_1", PauseID: "pause_1", By: "bob", At: at,
		Decisions: []toolgate.Decision{toolgate.Allow("call_book"), toolgate.Deny("call_x", "no")}}
	prior, err := s.Approve(ctx, first)
	if err != nil || prior != nil {
		t.Fatalf("first Approve: %+v, %v; want nil, nil", prior, err)
	}
	prior, err = s.Approve(ctx, &records.Approval{ConversationID: "conv_1", PauseID: "pause_1", By: "cy", At: at.Add(time.Second)})
	must(t, "second Approve", err)
	if diff := cmp.Diff(first, prior); diff != "" {
		t.Errorf("second Approve returns (-want +got):\n%s", diff)
	}
	got, err := s.Approval(ctx, "conv_1", "pause_1")
	must(t, "Approval", err)
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("Approval (-want +got):\n%s", diff)
	}
	for _, bad := range []*records.Approval{nil, {PauseID: "p", By: "b"}, {ConversationID: "c", By: "b"}, {ConversationID: "c", PauseID: "p"}} {
		_, err := s.Approve(ctx, bad)
		wantErr(t, fmt.Sprintf("Approve(%+v)", bad), err, records.ErrInvalid)
	}

	// Concurrent first approvals: one is stored, every other caller gets it.
	const n = 64
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		won   = make([]bool, n)
		seen  = make([]string, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			prior, err := s.Approve(context.Background(), &records.Approval{ConversationID: "conv_race", PauseID: "p", By: "p" + strconv.Itoa(i), At: at})
			switch {
			case err != nil:
				t.Errorf("Approve %d: %v", i, err)
			case prior == nil:
				won[i] = true
			default:
				seen[i] = prior.By
			}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, w := range won {
		if w {
			if winner >= 0 {
				t.Fatalf("approvals %d and %d were both stored first", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no approval was stored")
	}
	for i := range n {
		if i != winner && seen[i] != "p"+strconv.Itoa(winner) {
			t.Errorf("approval %d saw %q first, want p%d", i, seen[i], winner)
		}
	}
}

func testGrants(t *testing.T, s records.Store) {
	ctx := t.Context()
	g1 := records.Grant{ID: "grant_1", ConversationID: "conv_1", Tool: "bookFlight", GrantedBy: "bob", GrantedAt: at, ExpiresAt: at.Add(10 * time.Minute)}
	g2 := records.Grant{ID: "grant_2", ConversationID: "conv_1", Tool: "bookFlight", ArgumentsDigest: records.ArgumentsDigest(`{"flight":"VX205"}`),
		GrantedBy: "cy", GrantedAt: at, ExpiresAt: at.Add(30 * time.Minute)}
	g3 := records.Grant{ID: "grant_3", ConversationID: "conv_2", Tool: "bookFlight", GrantedBy: "bob", GrantedAt: at, ExpiresAt: at.Add(time.Hour)}
	for _, g := range []records.Grant{g1, g2, g3} {
		must(t, "AddGrant", s.AddGrant(ctx, &g))
	}
	wantErr(t, "AddGrant of a taken id", s.AddGrant(ctx, &g1), records.ErrExists)
	for _, bad := range []*records.Grant{nil, {ConversationID: "c", Tool: "t", GrantedBy: "b"}, {ID: "g", Tool: "t", GrantedBy: "b"}, {ID: "g", ConversationID: "c", GrantedBy: "b"}, {ID: "g", ConversationID: "c", Tool: "t"}} {
		wantErr(t, fmt.Sprintf("AddGrant(%+v)", bad), s.AddGrant(ctx, bad), records.ErrInvalid)
	}
	for _, tc := range []struct {
		at   time.Time
		want []records.Grant
	}{
		{at, []records.Grant{g1, g2}},
		{at.Add(10*time.Minute - time.Nanosecond), []records.Grant{g1, g2}},
		{at.Add(10 * time.Minute), []records.Grant{g2}}, // expired at ExpiresAt
		{at.Add(30 * time.Minute), []records.Grant{}},
	} {
		got, err := s.Grants(ctx, "conv_1", tc.at)
		must(t, "Grants", err)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Grants at %v (-want +got):\n%s", tc.at, diff)
		}
	}

	// Revocation ends a live grant at the time given, and only in its
	// conversation.
	_, err := s.RevokeGrant(ctx, "conv_2", "grant_2", at)
	wantErr(t, "RevokeGrant in another conversation", err, records.ErrNotFound)
	_, err = s.RevokeGrant(ctx, "conv_1", "grant_1", at.Add(10*time.Minute))
	wantErr(t, "RevokeGrant of an expired grant", err, records.ErrNotFound)
	_, err = s.RevokeGrant(ctx, "conv_1", "grant_9", at)
	wantErr(t, "RevokeGrant of an unknown grant", err, records.ErrNotFound)
	old, err := s.RevokeGrant(ctx, "conv_1", "grant_2", at.Add(time.Minute))
	must(t, "RevokeGrant", err)
	if diff := cmp.Diff(&g2, old); diff != "" {
		t.Errorf("RevokeGrant returned (-want +got):\n%s", diff)
	}
	got, err := s.Grants(ctx, "conv_1", at.Add(time.Minute))
	must(t, "Grants", err)
	if diff := cmp.Diff([]records.Grant{g1}, got); diff != "" {
		t.Errorf("Grants after the revocation (-want +got):\n%s", diff)
	}
	got, err = s.Grants(ctx, "conv_1", at)
	must(t, "Grants", err)
	g2.ExpiresAt = at.Add(time.Minute)
	if diff := cmp.Diff([]records.Grant{g1, g2}, got); diff != "" {
		t.Errorf("Grants before the revocation (-want +got):\n%s", diff)
	}
	_, err = s.RevokeGrant(ctx, "conv_1", "grant_2", at.Add(time.Minute))
	wantErr(t, "RevokeGrant again", err, records.ErrNotFound)
}

func testCanceled(t *testing.T, s records.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := &records.Conversation{ID: "conv_1", Agent: "flights", Owner: toolgate.Principal{ID: "ada"}, CreatedAt: at}
	if err := s.CreateConversation(ctx, c); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateConversation with a canceled context: %v", err)
	}
	if _, err := s.Begin(ctx, decision("conv_1", "pause_1", "bob")); !errors.Is(err, context.Canceled) {
		t.Errorf("Begin with a canceled context: %v", err)
	}
	if _, err := s.Conversation(t.Context(), "conv_1"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("a canceled CreateConversation stored the conversation: %v", err)
	}
	if _, err := s.Decision(t.Context(), "conv_1", "pause_1"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("a canceled Begin stored the decision: %v", err)
	}
}

// Benchmark measures a store: BeginFinish takes a fresh pause and
// finishes it, the work of every decision. newStore returns an empty
// store.
func Benchmark(b *testing.B, newStore func(b *testing.B) records.Store) {
	b.Run("BeginFinish", func(b *testing.B) {
		s := newStore(b)
		ctx := b.Context()
		d := &records.Decision{ConversationID: "conv_bench", Source: records.SourcePerson, DecidedBy: "bob", DecidedAt: at,
			Decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")}, Outcome: records.OutcomeDeciding}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			d.PauseID = "pause_" + strconv.Itoa(i)
			i++
			if prior, err := s.Begin(ctx, d); err != nil || prior != nil {
				b.Fatalf("Begin: %v, %v", prior, err)
			}
			if err := s.Finish(ctx, d.ConversationID, d.PauseID, records.OutcomeDecided); err != nil {
				b.Fatal(err)
			}
		}
	})
}
