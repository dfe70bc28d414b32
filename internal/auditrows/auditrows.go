// Package auditrows decodes the rows that the SQL audit logs (packages
// audit/sqlite and audit/postgres) store: one record's JSON form per row,
// with its sequence number and conversation repeated in columns.
package auditrows

import (
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/audit"
)

// Decode decodes the body of the row numbered seq and checks it against
// the row: a failure is a *audit.RecordError naming the row. With
// checkConv, the record's conversation must be conv, the row's
// conversation column.
func Decode(seq int64, conv string, body []byte, checkConv bool) (*audit.Record, error) {
	r := new(audit.Record)
	if err := r.UnmarshalJSON(body); err != nil {
		var re *audit.RecordError
		if errors.As(err, &re) {
			e := *re
			e.Seq = uint64(max(seq, 0))
			if e.Detail != "" {
				e.Detail = fmt.Sprintf("row %d: %s", seq, e.Detail)
			} else {
				e.Detail = fmt.Sprintf("row %d", seq)
			}
			return nil, &e
		}
		return nil, err
	}
	if seq < 1 || r.Seq != uint64(seq) {
		return nil, &audit.RecordError{Seq: r.Seq, Problem: audit.ProblemOutOfSequence, Detail: fmt.Sprintf("row %d holds record %d", seq, r.Seq)}
	}
	if checkConv && r.ConversationID != conv {
		return nil, &audit.RecordError{Seq: r.Seq, Problem: audit.ProblemInvalidField, Detail: fmt.Sprintf("row %d: the conversation_id column says %q, the record %q", seq, conv, r.ConversationID)}
	}
	return r, nil
}

// DecodeUnsealed decodes the body of the row numbered id of a log's
// records not sealed yet and checks it against the row: the record must
// be unsealed (see audit.Record.Unsealed), of conversation conv. A failure
// is a *audit.RecordError naming the row.
func DecodeUnsealed(id int64, conv string, body []byte) (*audit.Record, error) {
	r := new(audit.Record)
	if err := r.UnmarshalJSON(body); err != nil {
		var re *audit.RecordError
		if errors.As(err, &re) {
			e := *re
			e.Detail = fmt.Sprintf("unsealed row %d: %s", id, e.Detail)
			return nil, &e
		}
		return nil, err
	}
	if !r.Unsealed() {
		return nil, &audit.RecordError{Problem: audit.ProblemInvalidField, Detail: fmt.Sprintf("unsealed row %d holds record %d, a sealed one", id, r.Seq)}
	}
	if r.ConversationID != conv {
		return nil, &audit.RecordError{Problem: audit.ProblemInvalidField, Detail: fmt.Sprintf("unsealed row %d: the conversation_id column says %q, the record %q", id, conv, r.ConversationID)}
	}
	return r, nil
}
