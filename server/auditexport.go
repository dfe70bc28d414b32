package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
)

// The export of the audit log for auditors: GET /v1/audit/export streams
// the records of the whole log (or of one conversation, ?conversation=ID),
// in sequence order from ?after=SEQ on, as JSON lines: one record per
// line in the JSON form of package audit, each verifiable on its own
// ([audit.Record.ComputeHash]) and, for the whole log, as a chain. Only
// holders of an audit role ([Config.AuditRoles]) may export; others get
// 403. The records are written as they are read, so an export of any
// size holds little in memory. A stored record that does not decode, or a
// read that fails midway, ends the stream with one last line
// {"error":"…","message":"…"} instead of a record: the status is sent
// before the first record.

// codeAuditBroken is the error of the last line of an export that ended on
// a record that does not decode. Its value never changes.
const codeAuditBroken = "audit_broken"

// exportFlushEvery is how many records the export writes between flushes.
const exportFlushEvery = 256

// exportAudit serves GET /v1/audit/export.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	if !hasRole(p, s.cfg.AuditRoles) {
		writeError(w, http.StatusForbidden, codeForbidden, "only the holders of an audit role may export the audit log")
		return
	}
	if s.audit == nil {
		writeError(w, http.StatusNotFound, codeNoAudit, "this service keeps no audit log")
		return
	}
	q := &audit.Query{ConversationID: r.URL.Query().Get("conversation")}
	if len(q.ConversationID) > maxFilterLen {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "conversation must be at most 256 bytes")
		return
	}
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, "after must be the sequence number of a record, a whole number from 0")
			return
		}
		q.After = n
	}
	ctx := r.Context()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", `attachment; filename="toolgate-audit.jsonl"`)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	n := 0
	for rec, err := range s.audit.log.Records(ctx, q) {
		if err != nil {
			code, msg := codeInternal, "reading the audit log failed; the export is incomplete"
			var re *audit.RecordError
			if errors.As(err, &re) {
				code, msg = codeAuditBroken, re.Error()
			} else {
				s.logger.ErrorContext(ctx, "server: exporting the audit log failed", "err", err.Error())
			}
			_ = enc.Encode(errorJSON{Error: code, Message: msg})
			break
		}
		if err := enc.Encode(rec); err != nil {
			return // the client went away
		}
		if n++; n%exportFlushEvery == 0 {
			if bw.Flush() != nil {
				return
			}
			_ = rc.Flush()
		}
	}
	if bw.Flush() == nil {
		_ = rc.Flush()
	}
}
