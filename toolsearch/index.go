package toolsearch

import (
	"context"

	"github.com/toolgate/toolgate"
)

// Index finds tools by what they do. It holds one set of tools per
// conversation: [Index.Index] replaces a conversation's set,
// [Index.Search] looks in it, [Index.Clear] forgets it. A [Searcher] calls
// Index only when the tools it may search change, and Clear when it evicts
// or deletes a conversation, so an Index needs no eviction of its own.
//
// An Index must be safe for concurrent use. [BM25Index] is the embedded
// default; an implementation over an embedding model or a search service
// plugs in the same way.
type Index interface {
	// Index replaces the tools of a conversation. entries is not kept.
	Index(ctx context.Context, conversationID string, entries []Entry) error
	// Search returns at most q.Max tools of the conversation that match q,
	// best first. A conversation never indexed has no tools.
	Search(ctx context.Context, conversationID string, q *Query) ([]Hit, error)
	// Clear forgets the tools of a conversation.
	Clear(ctx context.Context, conversationID string) error
}

// Entry is a tool as an [Index] sees it.
type Entry struct {
	// Definition is the tool's name, description and input schema. The
	// schema is shared: do not modify it.
	Definition toolgate.ToolDefinition
	// Category is the tool's category ("" for none); see
	// [Options.Category].
	Category string
}

// Query is a search of an [Index].
type Query struct {
	// Text says what the model wants to do, in its own words.
	Text string
	// Max is the most hits to return; a [Searcher] always sets it to 1 or
	// more.
	Max int
	// Category, when not "", keeps only the tools of that category
	// (compared case-insensitively).
	Category string
}

// Hit is one tool found by [Index.Search].
type Hit struct {
	// Name is the tool's name.
	Name string
	// Score orders hits, higher first; its scale is the index's own.
	Score float64
}
