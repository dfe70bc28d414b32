// Package recordrows holds what the SQL implementations of the server's
// record store (records.Store) share about their rows: the encoding of the
// JSON columns, and checks that turn a damaged row into an error wrapping
// toolgate.ErrCorrupt instead of a panic or a silently different record.
package recordrows

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// decisionBody is the JSON column of a decision row: the record but for
// its key and its outcome, which have columns of their own.
type decisionBody struct {
	Source    records.Source      `json:"source"`
	DecidedBy string              `json:"decided_by,omitempty"`
	Approvers []string            `json:"approvers,omitempty"`
	Grants    []records.GrantRef  `json:"grants,omitempty"`
	DecidedAt time.Time           `json:"decided_at"`
	Decisions []toolgate.Decision `json:"decisions"`
	Edits     []records.Edit      `json:"edits,omitempty"`
}

// EncodeDecision returns the JSON column of d. A decision that cannot be
// encoded (a verdict that is not one) gives an error wrapping
// records.ErrInvalid.
func EncodeDecision(d *records.Decision) (string, error) {
	b, err := json.Marshal(decisionBody{d.Source, d.DecidedBy, d.Approvers, d.Grants, d.DecidedAt, d.Decisions, d.Edits})
	if err != nil {
		return "", fmt.Errorf("%w: decision of pause %q: %v", records.ErrInvalid, d.PauseID, err)
	}
	return string(b), nil
}

// DecodeDecision rebuilds a decision record from its row.
func DecodeDecision(conv, pause, outcome string, body []byte) (*records.Decision, error) {
	var b decisionBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("%w: decision of pause %q: %v", toolgate.ErrCorrupt, pause, err)
	}
	d := &records.Decision{ConversationID: conv, PauseID: pause, Source: b.Source, DecidedBy: b.DecidedBy, Approvers: b.Approvers,
		Grants: b.Grants, DecidedAt: b.DecidedAt, Decisions: b.Decisions, Edits: b.Edits, Outcome: records.Outcome(outcome)}
	if d.Decisions == nil {
		d.Decisions = []toolgate.Decision{}
	}
	if err := records.CheckDecision(d); err != nil {
		return nil, fmt.Errorf("%w: decision of pause %q: %v", toolgate.ErrCorrupt, pause, err)
	}
	return d, nil
}

// EncodeDecisions returns the JSON of an approval's decisions, with an
// error wrapping records.ErrInvalid when they cannot be encoded.
func EncodeDecisions(ds []toolgate.Decision) (string, error) {
	if ds == nil {
		ds = []toolgate.Decision{}
	}
	b, err := json.Marshal(ds)
	if err != nil {
		return "", fmt.Errorf("%w: decisions: %v", records.ErrInvalid, err)
	}
	return string(b), nil
}

// DecodeDecisions reads the JSON of an approval's decisions.
func DecodeDecisions(body []byte) ([]toolgate.Decision, error) {
	var ds []toolgate.Decision
	if err := json.Unmarshal(body, &ds); err != nil {
		return nil, fmt.Errorf("%w: decisions: %v", toolgate.ErrCorrupt, err)
	}
	if ds == nil {
		ds = []toolgate.Decision{}
	}
	return ds, nil
}

// EncodePrincipal returns the JSON column of a conversation's owner.
func EncodePrincipal(p *toolgate.Principal) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("%w: owner: %v", records.ErrInvalid, err)
	}
	return string(b), nil
}

// DecodePrincipal reads the JSON column of a conversation's owner; its id
// must be ownerID, the indexed column.
func DecodePrincipal(ownerID string, body []byte) (toolgate.Principal, error) {
	var p toolgate.Principal
	if err := json.Unmarshal(body, &p); err != nil {
		return p, fmt.Errorf("%w: owner: %v", toolgate.ErrCorrupt, err)
	}
	if p.ID != ownerID || p.ID == "" {
		return p, fmt.Errorf("%w: owner %q stored as %q", toolgate.ErrCorrupt, p.ID, ownerID)
	}
	return p, nil
}

// Time returns the instant of a column of Unix nanoseconds, in UTC; 0 is
// the zero time.
func Time(nanos int64) time.Time {
	if nanos == 0 {
		return time.Time{}
	}
	return time.Unix(0, nanos).UTC()
}

// Nanos returns the column value of an instant: Unix nanoseconds, which
// hold the years 1678 to 2262. The zero time is stored as 0.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// EncodeTools returns the tools column of an index entry: the JSON array
// of records.PendingTools(tools), or nil (NULL) when they are not known.
func EncodeTools(tools []string) any {
	tools = records.PendingTools(tools)
	if tools == nil {
		return nil
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil // strings always encode
	}
	return string(b)
}

// DecodeTools rebuilds the tools of an index entry from its column; a
// NULL column (ok false) is nil, tools not known.
func DecodeTools(col string, ok bool, conv string) ([]string, error) {
	if !ok {
		return nil, nil
	}
	var tools []string
	if err := json.Unmarshal([]byte(col), &tools); err != nil {
		return nil, fmt.Errorf("%w: tools of the pending pause of %q: %v", toolgate.ErrCorrupt, conv, err)
	}
	return records.PendingTools(tools), nil
}

// ScopeParts splits scopes into what the SQL stores query: the (agent,
// tool) pairs of the scopes that name tools (agents[i] with tools[i]),
// the agents of those scopes (whose entries of unknown tools match too),
// and the agents of the scopes that take any tool. Each list holds a
// value once.
func ScopeParts(scopes []records.Scope) (pairAgents, pairTools, toolAgents, anyAgents []string) {
	type pair struct{ agent, tool string }
	seen := map[pair]bool{}
	seenTool, seenAny := map[string]bool{}, map[string]bool{}
	for _, sc := range scopes {
		if sc.Tools == nil {
			if !seenAny[sc.Agent] {
				seenAny[sc.Agent] = true
				anyAgents = append(anyAgents, sc.Agent)
			}
			continue
		}
		if !seenTool[sc.Agent] {
			seenTool[sc.Agent] = true
			toolAgents = append(toolAgents, sc.Agent)
		}
		for _, tool := range sc.Tools {
			if p := (pair{sc.Agent, tool}); !seen[p] {
				seen[p] = true
				pairAgents, pairTools = append(pairAgents, sc.Agent), append(pairTools, tool)
			}
		}
	}
	return pairAgents, pairTools, toolAgents, anyAgents
}
