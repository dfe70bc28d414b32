package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/recordrows"
	"github.com/toolgate/toolgate/records"
)

// recordsMigrations bring the schema of the approval service's records
// from version i to i+1 (the largest version in server_schema_version),
// apart from the conversations' schema ([SchemaVersion]): [Store.Records]
// applies them, [Open] does not. Append to the list; never change an
// entry. Times are Unix nanoseconds; seq columns keep insertion order.
var recordsMigrations = []string{
	// 1: conversations, decisions, pending pauses, approvals and grants.
	// Databases written by builds before the records had a version of
	// their own got these tables from the conversations' migration 3;
	// [Store.Records] counts them as version 1.
	`CREATE TABLE server_conversations (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		agent TEXT NOT NULL,
		owner_id TEXT NOT NULL,
		owner TEXT NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX server_conversations_owner ON server_conversations (owner_id, seq);
	CREATE TABLE server_decisions (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		conversation_id TEXT NOT NULL,
		pause_id TEXT NOT NULL,
		outcome TEXT NOT NULL,
		record TEXT NOT NULL,
		UNIQUE (conversation_id, pause_id)
	);
	CREATE TABLE server_pending (
		conversation_id TEXT NOT NULL PRIMARY KEY,
		agent TEXT NOT NULL,
		pause_id TEXT NOT NULL,
		created_at INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE INDEX server_pending_order ON server_pending (created_at, conversation_id);
	CREATE TABLE server_approvals (
		conversation_id TEXT NOT NULL,
		pause_id TEXT NOT NULL,
		approver TEXT NOT NULL,
		approved_at INTEGER NOT NULL,
		decisions TEXT NOT NULL,
		PRIMARY KEY (conversation_id, pause_id)
	) WITHOUT ROWID;
	CREATE TABLE server_grants (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		conversation_id TEXT NOT NULL,
		tool TEXT NOT NULL,
		arguments_digest TEXT NOT NULL,
		granted_by TEXT NOT NULL,
		granted_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX server_grants_conversation ON server_grants (conversation_id, expires_at);`,
	// 2: sticky grants with a digest of the old form end.
	grantDigestMigration,
	// 3: the index keeps the tools its pauses await.
	pendingToolsMigration,
	// 4: the idempotency keys of requests (keys.go).
	requestKeysMigration,
	// 5: the sessions of signed-in browsers, and shared secrets
	// (sessions.go).
	sessionsMigration,
	// 6: the index lists by scope from its own rows.
	pendingAgentMigration,
}

// RecordsSchemaVersion is the version of the records' schema this package
// writes (the largest version in the database's server_schema_version
// table). [Store.Records] upgrades an older one and refuses a newer one.
const RecordsSchemaVersion = 6

// pendingToolsMigration gives the index of open pauses the tools each
// pause awaits (a JSON array in server_pending.tools), and a table of
// (agent, tool) rows, one per tool of an entry, that listings by scope
// read through its index instead of every entry. Triggers keep the table
// in step with every write of the index. Entries indexed before keep a
// NULL tools column and one row with a NULL tool: their tools are not
// known, and every scope of their agent lists them, until the pause is
// indexed again. Migration 6 ([pendingAgentMigration]) drops the table
// and the triggers.
const pendingToolsMigration = `ALTER TABLE server_pending ADD COLUMN tools TEXT;
	CREATE TABLE server_pending_tools (
		agent TEXT NOT NULL,
		tool TEXT,
		created_at INTEGER NOT NULL,
		conversation_id TEXT NOT NULL
	);
	CREATE INDEX server_pending_tools_scope ON server_pending_tools (agent, tool, created_at, conversation_id);
	CREATE INDEX server_pending_tools_conversation ON server_pending_tools (conversation_id);
	INSERT INTO server_pending_tools (agent, tool, created_at, conversation_id)
		SELECT agent, NULL, created_at, conversation_id FROM server_pending;
	CREATE TRIGGER server_pending_tools_insert AFTER INSERT ON server_pending BEGIN
		INSERT INTO server_pending_tools (agent, tool, created_at, conversation_id)
			SELECT new.agent, value, new.created_at, new.conversation_id FROM json_each(coalesce(nullif(new.tools, '[]'), '[null]'));
	END;
	CREATE TRIGGER server_pending_tools_update AFTER UPDATE ON server_pending BEGIN
		DELETE FROM server_pending_tools WHERE conversation_id = old.conversation_id;
		INSERT INTO server_pending_tools (agent, tool, created_at, conversation_id)
			SELECT new.agent, value, new.created_at, new.conversation_id FROM json_each(coalesce(nullif(new.tools, '[]'), '[null]'));
	END;
	CREATE TRIGGER server_pending_tools_delete AFTER DELETE ON server_pending BEGIN
		DELETE FROM server_pending_tools WHERE conversation_id = old.conversation_id;
	END;`

// pendingAgentMigration replaces the table of (agent, tool) rows of
// [pendingToolsMigration] and the triggers that kept it, which made every
// write of the index three to five writes of the database, by an index of
// server_pending on the agent: a listing by scope reads the entries of its
// agents in order through it and keeps those whose tools column matches
// (see [listPendingScopedSQL]). The entries keep their tools column; those
// of unknown tools (NULL) still match every scope of their agent.
const pendingAgentMigration = `DROP TRIGGER server_pending_tools_insert;
	DROP TRIGGER server_pending_tools_update;
	DROP TRIGGER server_pending_tools_delete;
	DROP TABLE server_pending_tools;
	CREATE INDEX server_pending_agent ON server_pending (agent, created_at, conversation_id);`

// grantDigestMigration ends the sticky grants limited to the same
// arguments whose digest is of the form before the one canonical digest
// (records.ArgumentsDigest): that digest cannot be converted, and such a
// grant could cover calls the new form tells apart (or miss the ones it
// was for). A person is asked again instead.
const grantDigestMigration = `UPDATE server_grants SET expires_at = granted_at
	WHERE arguments_digest <> '' AND arguments_digest NOT LIKE 'sha256:%'`

// recordStmts are the prepared statements of the records: on read,
// the reads outside a transaction; on write, the writes.
type recordStmts struct {
	conversation, decision                                    *sql.Stmt // read
	createConversation, beginDecision, priorDecision          *sql.Stmt // write
	deleteDecision, finishDecision, addPending, removePending *sql.Stmt // write
	addGrant                                                  *sql.Stmt // write
}

// The statements of the records.
const (
	selectConversationRecordSQL = "SELECT id, agent, owner_id, owner, created_at FROM server_conversations WHERE id = ?"
	insertConversationSQL       = `INSERT INTO server_conversations (id, agent, owner_id, owner, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	selectDecisionSQL   = "SELECT conversation_id, pause_id, outcome, record FROM server_decisions"
	selectDecisionOfSQL = selectDecisionSQL + " WHERE conversation_id = ? AND pause_id = ?"
	insertDecisionSQL   = `INSERT INTO server_decisions (conversation_id, pause_id, outcome, record)
		VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id, pause_id) DO NOTHING`
	// A resolving outcome is final (records.Store.Finish): the delete
	// skips such a record, the update keeps it.
	deleteDecisionSQL = "DELETE FROM server_decisions WHERE conversation_id = ? AND pause_id = ? AND outcome NOT IN ('decided', 'expired', 'recovered')"
	finishDecisionSQL = "UPDATE server_decisions SET outcome = CASE WHEN outcome IN ('decided', 'expired', 'recovered') THEN outcome ELSE ? END WHERE conversation_id = ? AND pause_id = ?"
	addPendingSQL     = `INSERT INTO server_pending (conversation_id, agent, pause_id, created_at, tools) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (conversation_id) DO UPDATE SET agent = excluded.agent, pause_id = excluded.pause_id, created_at = excluded.created_at, tools = excluded.tools`
	removePendingSQL = "DELETE FROM server_pending WHERE conversation_id = ? AND pause_id = ?"
	addGrantSQL      = `INSERT INTO server_grants (id, conversation_id, tool, arguments_digest, granted_by, granted_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
)

// recordStmtSpecs lists the statements of r for [Store.prepareAll].
func (s *Store) recordStmtSpecs(r *recordStmts) []stmtSpec {
	return []stmtSpec{
		{s.read, &r.conversation, selectConversationRecordSQL},
		{s.read, &r.decision, selectDecisionOfSQL},
		{s.write, &r.createConversation, insertConversationSQL},
		{s.write, &r.beginDecision, insertDecisionSQL},
		{s.write, &r.priorDecision, selectDecisionOfSQL},
		{s.write, &r.deleteDecision, deleteDecisionSQL},
		{s.write, &r.finishDecision, finishDecisionSQL},
		{s.write, &r.addPending, addPendingSQL},
		{s.write, &r.removePending, removePendingSQL},
		{s.write, &r.addGrant, addGrantSQL},
	}
}

// Records returns the approval service's record store (a
// [records.Store]) kept in the same database file as the conversations,
// for server.Config.Records. The first call creates the records' tables,
// or upgrades them to [RecordsSchemaVersion], in one write transaction;
// [Open] leaves them alone, so a database used only for conversations
// has none. A database whose records are newer than this package knows
// gives an error wrapping [toolgate.ErrCorrupt]. Later calls return the
// same store.
//
// It is a [records.Transactional]: a [records.Hook] given to
// [records.WithHook] for it runs inside the transactions of s's Append,
// ClaimPause and MarkStarted, and its audit log is [Store.AuditLog].
//
// The record store shares s's connections: it is usable until s is
// closed. Several Stores on one file, in one process or several, share
// the records; [records.Store.Begin] and [records.Store.Approve] run in a
// write transaction, so of concurrent callers exactly one wins.
func (s *Store) Records(ctx context.Context) (records.Store, error) {
	if r := s.rec.Load(); r != nil {
		return r, nil
	}
	if err := s.migrateRecords(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: records: %w", err)
	}
	r := &recordStore{s: s}
	if err := s.prepareAll(ctx, s.recordStmtSpecs(&r.stmts)); err != nil {
		return nil, fmt.Errorf("sqlite: records: %w", err)
	}
	// Of concurrent first calls one store is kept; the others'
	// statements are closed with s.
	s.rec.CompareAndSwap(nil, r)
	return s.rec.Load(), nil
}

// migrateRecords creates or upgrades the records' tables.
func (s *Store) migrateRecords(ctx context.Context) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var haveVersions, haveTables bool
		err := tx.QueryRowContext(ctx, `SELECT
			EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'server_schema_version'),
			EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'server_conversations')`).Scan(&haveVersions, &haveTables)
		if err != nil {
			return dbErr(err)
		}
		if !haveVersions {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE server_schema_version (
				version INTEGER NOT NULL PRIMARY KEY,
				applied_at INTEGER NOT NULL
			)`); err != nil {
				return dbErr(err)
			}
			if haveTables {
				// Created by the conversations' migration 3 of an
				// earlier build: version 1.
				if _, err := tx.ExecContext(ctx, "INSERT INTO server_schema_version (version, applied_at) VALUES (1, ?)", time.Now().UnixNano()); err != nil {
					return dbErr(err)
				}
			}
		}
		var v int
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM server_schema_version").Scan(&v); err != nil {
			return dbErr(err)
		}
		if v < 0 || v > len(recordsMigrations) {
			return fmt.Errorf("%w: records schema version %d is not one this build knows (it knows 0 to %d)", toolgate.ErrCorrupt, v, len(recordsMigrations))
		}
		for i := v; i < len(recordsMigrations); i++ {
			if _, err := tx.ExecContext(ctx, recordsMigrations[i]); err != nil {
				return fmt.Errorf("migrating the records schema to version %d: %w", i+1, dbErr(err))
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO server_schema_version (version, applied_at) VALUES (?, ?)", i+1, time.Now().UnixNano()); err != nil {
				return dbErr(err)
			}
		}
		return nil
	})
}

// recordStore is the [records.Store] of a [Store].
type recordStore struct {
	s     *Store
	stmts recordStmts // prepared by Records
}

// AuditLog implements [records.Transactional].
func (r *recordStore) AuditLog() audit.Log { return r.s.audit }

// ConversationStore implements [records.Transactional].
func (r *recordStore) ConversationStore() toolgate.ConversationStore { return r.s }

// recordTx is the [records.Tx] of a write transaction of a [Store].
type recordTx struct {
	ctx context.Context
	r   *recordStore
	tx  *sql.Tx
}

func (t *recordTx) Begin(d *records.Decision) (*records.Decision, error) {
	if err := records.CheckDecision(d); err != nil {
		return nil, err
	}
	body, err := recordrows.EncodeDecision(d)
	if err != nil {
		return nil, err
	}
	prior, err := t.r.beginTx(t.ctx, t.tx, d, body)
	return prior, recErr("begin", err)
}

func (t *recordTx) Finish(conversationID, pauseID string, outcome records.Outcome) error {
	if err := records.CheckOutcome(outcome, true); err != nil {
		return err
	}
	return recErr("finish", t.r.finishTx(t.ctx, t.tx, conversationID, pauseID, outcome))
}

func (t *recordTx) AddPending(p *records.Pending) error {
	if err := records.CheckPending(p); err != nil {
		return err
	}
	_, err := t.r.s.txStmt(t.ctx, t.tx, t.r.stmts.addPending).ExecContext(t.ctx, p.ConversationID, p.Agent, p.PauseID, recordrows.Nanos(p.CreatedAt), recordrows.EncodeTools(p.Tools))
	return recErr("add pending", err)
}

func (t *recordTx) RemovePending(conversationID, pauseID string) error {
	_, err := t.r.s.txStmt(t.ctx, t.tx, t.r.stmts.removePending).ExecContext(t.ctx, conversationID, pauseID)
	return recErr("remove pending", err)
}

func (t *recordTx) Audit(recs ...*audit.Record) error {
	return t.r.s.audit.AppendTx(t.ctx, t.tx, recs...)
}

// runHook runs the hook ctx carries for s's records, if any, inside tx.
func (s *Store) runHook(ctx context.Context, tx *sql.Tx, w *records.Write) error {
	r := s.rec.Load()
	if r == nil {
		return nil // no record store yet, so no hook for one
	}
	h := records.HookFor(ctx, r)
	if h == nil {
		return nil
	}
	return h(ctx, &recordTx{ctx: ctx, r: r, tx: tx}, w)
}

// recErr wraps err, a failure of operation what, in the package's error
// form.
func recErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlite: records: %s: %w", what, dbErr(err))
}

// readTx runs fn in a read-only transaction.
func (r *recordStore) readTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

func (r *recordStore) CreateConversation(ctx context.Context, c *records.Conversation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckConversation(c); err != nil {
		return err
	}
	owner, err := recordrows.EncodePrincipal(&c.Owner)
	if err != nil {
		return err
	}
	res, err := r.s.exec(ctx, r.stmts.createConversation, c.ID, c.Agent, c.Owner.ID, owner, recordrows.Nanos(c.CreatedAt))
	if err != nil {
		return recErr("create conversation", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return recErr("create conversation", cmpErr(err, fmt.Errorf("conversation %q: %w", c.ID, records.ErrExists)))
	}
	return nil
}

// cmpErr returns err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

func scanConversation(row scanner) (*records.Conversation, error) {
	var (
		c       records.Conversation
		ownerID string
		owner   []byte
		created int64
	)
	if err := row.Scan(&c.ID, &c.Agent, &ownerID, &owner, &created); err != nil {
		return nil, err
	}
	p, err := recordrows.DecodePrincipal(ownerID, owner)
	if err != nil {
		return nil, fmt.Errorf("conversation %q: %w", c.ID, err)
	}
	c.Owner, c.CreatedAt = p, recordrows.Time(created)
	return &c, nil
}

func (r *recordStore) Conversation(ctx context.Context, id string) (*records.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := scanConversation(r.stmts.conversation.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: records: conversation %q: %w", id, records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("conversation", err)
	}
	return c, nil
}

func (r *recordStore) ListConversations(ctx context.Context, p *records.ListParams) (*records.ConversationPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var owner, after string
	if p != nil {
		owner, after = p.Owner, p.After
	}
	limit := records.Limit(p)
	out := &records.ConversationPage{Conversations: []records.Conversation{}}
	err := r.readTx(ctx, func(tx *sql.Tx) error {
		var from int64
		if after != "" {
			err := tx.QueryRowContext(ctx, "SELECT seq FROM server_conversations WHERE id = ?", after).Scan(&from)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: cursor %q names no conversation", records.ErrInvalid, after)
			}
			if err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, agent, owner_id, owner, created_at FROM server_conversations
			WHERE seq > ? AND (? = '' OR owner_id = ?) ORDER BY seq LIMIT ?`, from, owner, owner, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanConversation(rows)
			if err != nil {
				return err
			}
			if len(out.Conversations) == limit {
				out.Next = out.Conversations[limit-1].ID
				break
			}
			out.Conversations = append(out.Conversations, *c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, recErr("list conversations", err)
	}
	return out, nil
}

func scanDecision(row scanner) (*records.Decision, error) {
	var (
		conv, pause, outcome string
		body                 []byte
	)
	if err := row.Scan(&conv, &pause, &outcome, &body); err != nil {
		return nil, err
	}
	return recordrows.DecodeDecision(conv, pause, outcome, body)
}

func (r *recordStore) Begin(ctx context.Context, d *records.Decision) (*records.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := records.CheckDecision(d); err != nil {
		return nil, err
	}
	body, err := recordrows.EncodeDecision(d)
	if err != nil {
		return nil, err
	}
	var prior *records.Decision
	err = r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		prior, err = r.beginTx(ctx, tx, d, body)
		return err
	})
	if err != nil {
		return nil, recErr("begin", err)
	}
	return prior, nil
}

// beginTx is Begin inside tx, with d's encoded record.
func (r *recordStore) beginTx(ctx context.Context, tx *sql.Tx, d *records.Decision, body string) (*records.Decision, error) {
	res, err := r.s.txStmt(ctx, tx, r.stmts.beginDecision).ExecContext(ctx, d.ConversationID, d.PauseID, string(d.Outcome), body)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return nil, err
	}
	return scanDecision(r.s.txStmt(ctx, tx, r.stmts.priorDecision).QueryRowContext(ctx, d.ConversationID, d.PauseID))
}

func (r *recordStore) Finish(ctx context.Context, conversationID, pauseID string, outcome records.Outcome) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckOutcome(outcome, true); err != nil {
		return err
	}
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return r.finishTx(ctx, tx, conversationID, pauseID, outcome)
	})
	return recErr("finish", err)
}

// finishTx is Finish inside tx.
func (r *recordStore) finishTx(ctx context.Context, tx *sql.Tx, conversationID, pauseID string, outcome records.Outcome) error {
	var (
		res sql.Result
		err error
	)
	if outcome == records.OutcomeNone {
		res, err = r.s.txStmt(ctx, tx, r.stmts.deleteDecision).ExecContext(ctx, conversationID, pauseID)
	} else {
		res, err = r.s.txStmt(ctx, tx, r.stmts.finishDecision).ExecContext(ctx, string(outcome), conversationID, pauseID)
	}
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 && outcome == records.OutcomeNone {
		// Not deleted: absent, or resolved for good.
		switch err = r.s.txStmt(ctx, tx, r.stmts.priorDecision).QueryRowContext(ctx, conversationID, pauseID).Scan(new(string), new(string), new(string), new([]byte)); {
		case err == nil:
			return nil
		case errors.Is(err, sql.ErrNoRows):
			err = nil
		}
	}
	if err != nil || n == 0 {
		return cmpErr(err, fmt.Errorf("decision of pause %q of %q: %w", pauseID, conversationID, records.ErrNotFound))
	}
	if outcome.Resolves() {
		_, err = r.s.txStmt(ctx, tx, r.stmts.removePending).ExecContext(ctx, conversationID, pauseID)
	}
	return err
}

func (r *recordStore) Decision(ctx context.Context, conversationID, pauseID string) (*records.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := scanDecision(r.stmts.decision.QueryRowContext(ctx, conversationID, pauseID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: records: decision of pause %q of %q: %w", pauseID, conversationID, records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("decision", err)
	}
	return d, nil
}

func (r *recordStore) Decisions(ctx context.Context, conversationID string) ([]records.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []records.Decision{}
	err := r.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, selectDecisionSQL+" WHERE conversation_id = ? ORDER BY seq", conversationID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDecision(rows)
			if err != nil {
				return err
			}
			out = append(out, *d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, recErr("decisions", err)
	}
	return out, nil
}

func (r *recordStore) AddPending(ctx context.Context, p *records.Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckPending(p); err != nil {
		return err
	}
	_, err := r.s.exec(ctx, r.stmts.addPending, p.ConversationID, p.Agent, p.PauseID, recordrows.Nanos(p.CreatedAt), recordrows.EncodeTools(p.Tools))
	return recErr("add pending", err)
}

func (r *recordStore) RemovePending(ctx context.Context, conversationID, pauseID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := r.s.exec(ctx, r.stmts.removePending, conversationID, pauseID)
	return recErr("remove pending", err)
}

func (r *recordStore) ListPending(ctx context.Context, p *records.ListParams) (*records.PendingPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := records.Limit(p)
	out := &records.PendingPage{Pending: []records.Pending{}}
	err := r.readTx(ctx, func(tx *sql.Tx) error {
		var (
			fromTime int64 = -1 << 63
			fromConv string
		)
		if p != nil && p.After != "" {
			err := tx.QueryRowContext(ctx, "SELECT created_at, conversation_id FROM server_pending WHERE conversation_id = ?", p.After).Scan(&fromTime, &fromConv)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: cursor %q names no pending pause", records.ErrInvalid, p.After)
			}
			if err != nil {
				return err
			}
		}
		var rows *sql.Rows
		var err error
		if p == nil || len(p.Scopes) == 0 {
			rows, err = tx.QueryContext(ctx, listPendingSQL, fromTime, fromConv, limit+1)
		} else {
			pairAgents, pairTools, toolAgents, anyAgents := recordrows.ScopeParts(p.Scopes)
			rows, err = tx.QueryContext(ctx, listPendingScopedSQL, fromTime, fromConv, limit+1,
				jsonList(pairAgents), jsonList(pairTools), jsonList(toolAgents), jsonList(anyAgents))
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e       records.Pending
				created int64
				tools   sql.NullString
			)
			if err := rows.Scan(&e.ConversationID, &e.Agent, &e.PauseID, &created, &tools); err != nil {
				return err
			}
			if e.Tools, err = recordrows.DecodeTools(tools.String, tools.Valid, e.ConversationID); err != nil {
				return err
			}
			e.CreatedAt = recordrows.Time(created)
			if len(out.Pending) == limit {
				out.Next = out.Pending[limit-1].ConversationID
				break
			}
			out.Pending = append(out.Pending, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, recErr("list pending", err)
	}
	return out, nil
}

// The listings of the index: of every entry, and of the entries of some
// scopes (?4 and ?5: the agents and tools of the (agent, tool) pairs, ?6:
// the agents whose entries of unknown tools match, ?7: the agents of any
// tool; JSON arrays). A scoped listing reads the entries of the scopes'
// agents (those of ?6 and ?7: every agent of a pair is in ?6) through the
// index server_pending_agent and keeps those its scopes match, so entries
// of other agents cost nothing. An entry whose tools are not known has a
// NULL tools column ('[]' is read the same).
const (
	listPendingSQL = `SELECT conversation_id, agent, pause_id, created_at, tools FROM server_pending
		WHERE (created_at, conversation_id) > (?1, ?2) ORDER BY created_at, conversation_id LIMIT ?3`
	listPendingScopedSQL = `SELECT p.conversation_id, p.agent, p.pause_id, p.created_at, p.tools
		FROM (SELECT value AS agent FROM json_each(?6) UNION SELECT value FROM json_each(?7)) s
		CROSS JOIN server_pending p ON p.agent = s.agent
		WHERE (p.created_at, p.conversation_id) > (?1, ?2) AND (
			p.agent IN (SELECT value FROM json_each(?7))
			OR coalesce(p.tools, '[]') = '[]' AND p.agent IN (SELECT value FROM json_each(?6))
			OR EXISTS (SELECT 1 FROM json_each(?4) a CROSS JOIN json_each(p.tools) t
				WHERE a.value = p.agent AND t.value = json_extract(?5, '$[' || a.key || ']')))
		ORDER BY p.created_at, p.conversation_id LIMIT ?3`
)

// jsonList returns the JSON array of vs.
func jsonList(vs []string) string {
	if vs == nil {
		return "[]"
	}
	b, _ := json.Marshal(vs) // strings always encode
	return string(b)
}

func scanApproval(row scanner) (*records.Approval, error) {
	var (
		a         records.Approval
		at        int64
		decisions []byte
	)
	if err := row.Scan(&a.ConversationID, &a.PauseID, &a.By, &at, &decisions); err != nil {
		return nil, err
	}
	ds, err := recordrows.DecodeDecisions(decisions)
	if err != nil {
		return nil, fmt.Errorf("approval of pause %q: %w", a.PauseID, err)
	}
	a.At, a.Decisions = recordrows.Time(at), ds
	return &a, nil
}

const selectApprovalSQL = "SELECT conversation_id, pause_id, approver, approved_at, decisions FROM server_approvals WHERE conversation_id = ? AND pause_id = ?"

func (r *recordStore) Approve(ctx context.Context, a *records.Approval) (*records.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := records.CheckApproval(a); err != nil {
		return nil, err
	}
	ds, err := recordrows.EncodeDecisions(a.Decisions)
	if err != nil {
		return nil, err
	}
	var prior *records.Approval
	err = r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO server_approvals (conversation_id, pause_id, approver, approved_at, decisions)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, pause_id) DO NOTHING`, a.ConversationID, a.PauseID, a.By, recordrows.Nanos(a.At), ds)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		prior, err = scanApproval(tx.QueryRowContext(ctx, selectApprovalSQL, a.ConversationID, a.PauseID))
		return err
	})
	if err != nil {
		return nil, recErr("approve", err)
	}
	return prior, nil
}

func (r *recordStore) Approval(ctx context.Context, conversationID, pauseID string) (*records.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a, err := scanApproval(r.s.read.QueryRowContext(ctx, selectApprovalSQL, conversationID, pauseID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: records: approval of pause %q of %q: %w", pauseID, conversationID, records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("approval", err)
	}
	return a, nil
}

func (r *recordStore) AddGrant(ctx context.Context, g *records.Grant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckGrant(g); err != nil {
		return err
	}
	res, err := r.s.exec(ctx, r.stmts.addGrant,
		g.ID, g.ConversationID, g.Tool, g.ArgumentsDigest, g.GrantedBy, recordrows.Nanos(g.GrantedAt), recordrows.Nanos(g.ExpiresAt))
	if err != nil {
		return recErr("add grant", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return recErr("add grant", cmpErr(err, fmt.Errorf("grant %q: %w", g.ID, records.ErrExists)))
	}
	return nil
}

func (r *recordStore) Grants(ctx context.Context, conversationID string, t time.Time) ([]records.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []records.Grant{}
	err := r.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, conversation_id, tool, arguments_digest, granted_by, granted_at, expires_at
			FROM server_grants WHERE conversation_id = ? AND expires_at > ? ORDER BY seq`, conversationID, recordrows.Nanos(t))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				g                  records.Grant
				granted, expiresAt int64
			)
			if err := rows.Scan(&g.ID, &g.ConversationID, &g.Tool, &g.ArgumentsDigest, &g.GrantedBy, &granted, &expiresAt); err != nil {
				return err
			}
			g.GrantedAt, g.ExpiresAt = recordrows.Time(granted), recordrows.Time(expiresAt)
			out = append(out, g)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, recErr("grants", err)
	}
	return out, nil
}

func (r *recordStore) RevokeGrant(ctx context.Context, conversationID, id string, t time.Time) (*records.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var old *records.Grant
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		old = nil
		var (
			g                  records.Grant
			granted, expiresAt int64
		)
		err := tx.QueryRowContext(ctx, `SELECT id, conversation_id, tool, arguments_digest, granted_by, granted_at, expires_at
			FROM server_grants WHERE id = ? AND conversation_id = ? AND expires_at > ?`, id, conversationID, recordrows.Nanos(t)).
			Scan(&g.ID, &g.ConversationID, &g.Tool, &g.ArgumentsDigest, &g.GrantedBy, &granted, &expiresAt)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE server_grants SET expires_at = ? WHERE id = ?", recordrows.Nanos(t), id); err != nil {
			return err
		}
		g.GrantedAt, g.ExpiresAt = recordrows.Time(granted), recordrows.Time(expiresAt)
		old = &g
		return nil
	})
	if err != nil {
		return nil, recErr("revoke grant", err)
	}
	if old == nil {
		return nil, recErr("revoke grant", fmt.Errorf("grant %q of %q: %w", id, conversationID, records.ErrNotFound))
	}
	return old, nil
}
