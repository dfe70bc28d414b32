package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/recordrows"
	"github.com/toolgate/toolgate/records"
)

// grantDigestMigration ends the sticky grants limited to the same
// arguments whose digest is of the form before the one canonical digest
// (records.ArgumentsDigest): that digest cannot be converted, and such a
// grant could cover calls the new form tells apart (or miss the ones it
// was for). A person is asked again instead.
const grantDigestMigration = `UPDATE S.server_grants SET expires_at = granted_at
	WHERE arguments_digest <> '' AND arguments_digest NOT LIKE 'sha256:%'`

// recordsMigrations bring the schema of the approval service's records
// from version i to i+1 (the largest version in the schema's
// server_schema_version table), apart from the conversations' schema
// ([SchemaVersion]): [Store.Records] applies them, [Open] and [New] do
// not. S. stands for the schema. Append to the list; never change an
// entry. Times are Unix nanoseconds; seq columns keep insertion order.
var recordsMigrations = []string{
	// 1: conversations, decisions, pending pauses, approvals and grants.
	// Schemas written by builds before the records had a version of their
	// own got these tables from the conversations' migration 2;
	// [Store.Records] counts them as version 1.
	`CREATE TABLE S.server_conversations (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id text NOT NULL UNIQUE,
		agent text NOT NULL,
		owner_id text NOT NULL,
		owner text NOT NULL,
		created_at bigint NOT NULL
	);
	CREATE INDEX server_conversations_owner ON S.server_conversations (owner_id, seq);
	CREATE TABLE S.server_decisions (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		conversation_id text NOT NULL,
		pause_id text NOT NULL,
		outcome text NOT NULL,
		record text NOT NULL,
		UNIQUE (conversation_id, pause_id)
	);
	CREATE TABLE S.server_pending (
		conversation_id text PRIMARY KEY,
		agent text NOT NULL,
		pause_id text NOT NULL,
		created_at bigint NOT NULL
	);
	CREATE INDEX server_pending_order ON S.server_pending (created_at, conversation_id);
	CREATE TABLE S.server_approvals (
		conversation_id text NOT NULL,
		pause_id text NOT NULL,
		approver text NOT NULL,
		approved_at bigint NOT NULL,
		decisions text NOT NULL,
		PRIMARY KEY (conversation_id, pause_id)
	);
	CREATE TABLE S.server_grants (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id text NOT NULL UNIQUE,
		conversation_id text NOT NULL,
		tool text NOT NULL,
		arguments_digest text NOT NULL,
		granted_by text NOT NULL,
		granted_at bigint NOT NULL,
		expires_at bigint NOT NULL
	);
	CREATE INDEX server_grants_conversation ON S.server_grants (conversation_id, expires_at);`,
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
// writes (the largest version in the schema's server_schema_version
// table). [Store.Records] upgrades an older one and refuses a newer one.
const RecordsSchemaVersion = 6

// pendingToolsMigration gives the index of open pauses the tools each
// pause awaits (server_pending.tools), and a table of (agent, tool) rows,
// one per tool of an entry, that listings by scope read through its index
// instead of every entry. A trigger keeps the table in step with every
// write of the index. Entries indexed before keep NULL tools and one row
// with a NULL tool: their tools are not known, and every scope of their
// agent lists them, until the pause is indexed again. Migration 6
// ([pendingAgentMigration]) drops the table and the trigger.
const pendingToolsMigration = `ALTER TABLE S.server_pending ADD COLUMN tools text[];
	CREATE TABLE S.server_pending_tools (
		agent text NOT NULL,
		tool text,
		created_at bigint NOT NULL,
		conversation_id text NOT NULL
	);
	CREATE INDEX server_pending_tools_scope ON S.server_pending_tools (agent, tool, created_at, conversation_id);
	CREATE INDEX server_pending_tools_conversation ON S.server_pending_tools (conversation_id);
	INSERT INTO S.server_pending_tools (agent, tool, created_at, conversation_id)
		SELECT agent, NULL, created_at, conversation_id FROM S.server_pending;
	CREATE FUNCTION S.server_pending_tools_sync() RETURNS trigger LANGUAGE plpgsql AS $fn$
	BEGIN
		IF TG_OP <> 'INSERT' THEN
			DELETE FROM S.server_pending_tools WHERE conversation_id = OLD.conversation_id;
		END IF;
		IF TG_OP <> 'DELETE' THEN
			INSERT INTO S.server_pending_tools (agent, tool, created_at, conversation_id)
				SELECT NEW.agent, t, NEW.created_at, NEW.conversation_id
				FROM unnest(CASE WHEN cardinality(NEW.tools) > 0 THEN NEW.tools ELSE ARRAY[NULL::text] END) AS t;
		END IF;
		RETURN NULL;
	END
	$fn$;
	CREATE TRIGGER server_pending_tools_sync AFTER INSERT OR UPDATE OR DELETE ON S.server_pending
		FOR EACH ROW EXECUTE FUNCTION S.server_pending_tools_sync();`

// pendingAgentMigration replaces the table of (agent, tool) rows of
// [pendingToolsMigration] and the trigger that kept it, which ran a
// PL/pgSQL function and wrote a second table with two indexes on every
// write of the index, by an index of server_pending on the agent: a
// listing by scope reads the entries of its agents in order through it
// and keeps those whose tools match ([recordQueries.listPendingScoped]).
// The entries keep their tools; those of unknown tools (NULL) still match
// every scope of their agent.
const pendingAgentMigration = `DROP TRIGGER server_pending_tools_sync ON S.server_pending;
	DROP FUNCTION S.server_pending_tools_sync();
	DROP TABLE S.server_pending_tools;
	CREATE INDEX server_pending_agent ON S.server_pending (agent, created_at, conversation_id);`

// recordQueries are the statements of the record store, with the schema
// filled in.
type recordQueries struct {
	insertConversation, selectConversation, conversationSeq, listConversations    string
	insertDecision, selectDecision, deleteDecision, updateDecision, listDecisions string
	resolveDecision, loadConversation                                             string
	upsertPending, deletePending, pendingCursor, listPending, listPendingScoped   string
	insertApproval, selectApproval                                                string
	insertGrant, listGrants, revokeGrant                                          string
	keys                                                                          keyQueries
	sessions                                                                      sessionQueries
}

func newRecordQueries(schema string) recordQueries {
	r := strings.NewReplacer("S.", pgx.Identifier{schema}.Sanitize()+".")
	const conv = "SELECT id, agent, owner_id, owner, created_at FROM S.server_conversations "
	const dec = "SELECT conversation_id, pause_id, outcome, record FROM S.server_decisions "
	return recordQueries{
		keys:     newKeyQueries(r),
		sessions: newSessionQueries(r),
		insertConversation: r.Replace(`INSERT INTO S.server_conversations (id, agent, owner_id, owner, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`),
		selectConversation: r.Replace(conv + "WHERE id = $1"),
		// [queries.selectConversation] with the conversation's record
		// (kind 2) after it, in its own columns: one statement, so one
		// snapshot and one round trip.
		loadConversation: r.Replace(`SELECT 0 AS kind, id, msg_index, awaiting, claimed, created_at, created_at_nanos,
				claim_token, claimed_at, claimed_at_nanos, decisions, started,
				NULL::integer AS seq, NULL::integer AS format, NULL::text AS body,
				NULL::text AS agent, NULL::text AS owner_id, NULL::text AS owner, NULL::bigint AS rec_created_at
			FROM S.pauses WHERE conversation_id = $1
			UNION ALL
			SELECT 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, seq, format, body, NULL, NULL, NULL, NULL
			FROM S.messages WHERE conversation_id = $1
			UNION ALL
			SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, agent, owner_id, owner, created_at
			FROM S.server_conversations WHERE id = $1
			ORDER BY kind, seq`),
		conversationSeq:   r.Replace("SELECT seq FROM S.server_conversations WHERE id = $1"),
		listConversations: r.Replace(conv + "WHERE seq > $1 AND ($2 = '' OR owner_id = $2) ORDER BY seq LIMIT $3"),
		insertDecision: r.Replace(`INSERT INTO S.server_decisions (conversation_id, pause_id, outcome, record)
			VALUES ($1, $2, $3, $4) ON CONFLICT (conversation_id, pause_id) DO NOTHING`),
		selectDecision: r.Replace(dec + "WHERE conversation_id = $1 AND pause_id = $2"),
		// A resolving outcome is final (records.Store.Finish): the
		// delete skips such a record, the updates keep it.
		deleteDecision: r.Replace("DELETE FROM S.server_decisions WHERE conversation_id = $1 AND pause_id = $2 AND outcome NOT IN ('decided', 'expired', 'recovered')"),
		updateDecision: r.Replace("UPDATE S.server_decisions SET outcome = CASE WHEN outcome IN ('decided', 'expired', 'recovered') THEN outcome ELSE $3 END WHERE conversation_id = $1 AND pause_id = $2"),
		// One statement, so one atomic round trip: the pending entry goes
		// only when the decision's row exists (a data-modifying CTE runs
		// whether or not the main statement uses it, hence the guard).
		resolveDecision: r.Replace(`WITH d AS (
			UPDATE S.server_decisions SET outcome = CASE WHEN outcome IN ('decided', 'expired', 'recovered') THEN outcome ELSE $3 END
				WHERE conversation_id = $1 AND pause_id = $2 RETURNING 1
		), p AS (
			DELETE FROM S.server_pending WHERE conversation_id = $1 AND pause_id = $2 AND EXISTS (SELECT 1 FROM S.server_decisions WHERE conversation_id = $1 AND pause_id = $2)
		)
		SELECT count(*) FROM d`),
		listDecisions: r.Replace(dec + "WHERE conversation_id = $1 ORDER BY seq"),
		upsertPending: r.Replace(`INSERT INTO S.server_pending (conversation_id, agent, pause_id, created_at, tools) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (conversation_id) DO UPDATE SET agent = excluded.agent, pause_id = excluded.pause_id, created_at = excluded.created_at, tools = excluded.tools`),
		deletePending: r.Replace("DELETE FROM S.server_pending WHERE conversation_id = $1 AND pause_id = $2"),
		pendingCursor: r.Replace("SELECT created_at, conversation_id FROM S.server_pending WHERE conversation_id = $1"),
		listPending: r.Replace(`SELECT conversation_id, agent, pause_id, created_at, tools FROM S.server_pending
			WHERE (created_at, conversation_id) > ($1, $2) ORDER BY created_at, conversation_id LIMIT $3`),
		// The entries of some scopes: $4 and $5 are the agents and tools
		// of the (agent, tool) pairs, $6 the agents whose entries of
		// unknown tools match (every agent of a pair is one), $7 the
		// agents of any tool. The entries of those agents are read
		// through the index server_pending_agent, so entries of other
		// agents cost nothing; an entry of unknown tools has NULL tools
		// (an empty array is read the same).
		listPendingScoped: r.Replace(`SELECT p.conversation_id, p.agent, p.pause_id, p.created_at, p.tools
			FROM S.server_pending p
			WHERE p.agent = ANY($6::text[] || $7::text[]) AND (p.created_at, p.conversation_id) > ($1, $2) AND (
				p.agent = ANY($7::text[])
				OR coalesce(cardinality(p.tools), 0) = 0 AND p.agent = ANY($6::text[])
				OR EXISTS (SELECT 1 FROM unnest($4::text[], $5::text[]) AS s(agent, tool) WHERE s.agent = p.agent AND s.tool = ANY(p.tools)))
			ORDER BY p.created_at, p.conversation_id LIMIT $3`),
		insertApproval: r.Replace(`INSERT INTO S.server_approvals (conversation_id, pause_id, approver, approved_at, decisions)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (conversation_id, pause_id) DO NOTHING`),
		selectApproval: r.Replace("SELECT conversation_id, pause_id, approver, approved_at, decisions FROM S.server_approvals WHERE conversation_id = $1 AND pause_id = $2"),
		insertGrant: r.Replace(`INSERT INTO S.server_grants (id, conversation_id, tool, arguments_digest, granted_by, granted_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`),
		revokeGrant: r.Replace(`WITH old AS (SELECT id, conversation_id, tool, arguments_digest, granted_by, granted_at, expires_at
				FROM S.server_grants WHERE id = $1 AND conversation_id = $2 AND expires_at > $3 FOR UPDATE)
			UPDATE S.server_grants g SET expires_at = $3 FROM old WHERE g.id = old.id
			RETURNING old.id, old.conversation_id, old.tool, old.arguments_digest, old.granted_by, old.granted_at, old.expires_at`),
		listGrants: r.Replace(`SELECT id, conversation_id, tool, arguments_digest, granted_by, granted_at, expires_at
			FROM S.server_grants WHERE conversation_id = $1 AND expires_at > $2 ORDER BY seq`),
	}
}

// Records returns the approval service's record store (a
// [records.Store]) kept in the same schema as the conversations, for
// server.Config.Records. The first call creates the records' tables, or
// upgrades them to [RecordsSchemaVersion], in one transaction holding an
// advisory lock on the schema's name, so that instances starting together
// migrate one after the other; [Open] and [New] leave them alone, so a
// schema used only for conversations has none. A schema whose records are
// newer than this package knows gives an error wrapping
// [toolgate.ErrCorrupt].
//
// The record store shares s's connection pool: it is usable until s is
// closed. Every Store on the same database and schema, in any process,
// shares the records; [records.Store.Begin] and [records.Store.Approve]
// are one INSERT … ON CONFLICT DO NOTHING each, so of concurrent callers
// exactly one wins. Later calls return the same store.
//
// It is a [records.Transactional]: a [records.Hook] given to
// [records.WithHook] for it runs inside the transactions of s's Append,
// ClaimPause and MarkStarted, and its audit log is [Store.AuditLog].
func (s *Store) Records(ctx context.Context) (records.Store, error) {
	if r := s.rec.Load(); r != nil {
		return r, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rec.Load(); r != nil {
		return r, nil
	}
	if err := migrateRecords(ctx, s.pool, s.schema); err != nil {
		return nil, fmt.Errorf("postgres: records: schema %q: %w", s.schema, err)
	}
	r := &recordStore{s}
	s.rec.Store(r)
	return r, nil
}

// hookFor returns the hook ctx carries for s's record store, with the
// store, or nil when there is none (as before the first Records).
func (s *Store) hookFor(ctx context.Context) (records.Hook, *recordStore) {
	r := s.rec.Load()
	if r == nil {
		return nil, nil
	}
	return records.HookFor(ctx, r), r
}

// migrateRecords creates or upgrades the records' tables in schema.
func migrateRecords(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	r := strings.NewReplacer("S.", pgx.Identifier{schema}.Sanitize()+".")
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "toolgate records "+schema); err != nil {
			return dbErr(err)
		}
		var haveVersions, haveTables bool
		err := tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'server_schema_version'),
			EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'server_conversations')`,
			schema).Scan(&haveVersions, &haveTables)
		if err != nil {
			return dbErr(err)
		}
		if !haveVersions {
			if _, err := tx.Exec(ctx, r.Replace(`CREATE TABLE S.server_schema_version (
				version integer PRIMARY KEY,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`)); err != nil {
				return dbErr(err)
			}
			if haveTables {
				// Created by the conversations' migration 2 of an
				// earlier build: version 1.
				if _, err := tx.Exec(ctx, r.Replace("INSERT INTO S.server_schema_version (version) VALUES (1)")); err != nil {
					return dbErr(err)
				}
			}
		}
		var v int
		if err := tx.QueryRow(ctx, r.Replace("SELECT coalesce(max(version), 0) FROM S.server_schema_version")).Scan(&v); err != nil {
			return dbErr(err)
		}
		if v < 0 || v > len(recordsMigrations) {
			return fmt.Errorf("%w: records schema version %d is not one this build knows (it knows 0 to %d)", toolgate.ErrCorrupt, v, len(recordsMigrations))
		}
		for i := v; i < len(recordsMigrations); i++ {
			if _, err := tx.Exec(ctx, r.Replace(recordsMigrations[i])); err != nil {
				return fmt.Errorf("migrating the records schema to version %d: %w", i+1, dbErr(err))
			}
			if _, err := tx.Exec(ctx, r.Replace("INSERT INTO S.server_schema_version (version) VALUES ($1)"), i+1); err != nil {
				return dbErr(err)
			}
		}
		return nil
	})
}

// recordStore is the [records.Store] of a [Store].
type recordStore struct{ s *Store }

// AuditLog implements [records.Transactional].
func (r *recordStore) AuditLog() audit.Log { return r.s.audit }

// ConversationStore implements [records.Transactional].
func (r *recordStore) ConversationStore() toolgate.ConversationStore { return r.s }

// querier runs statements: the pool, or a connection in a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// recordTx is the [records.Tx] of a transaction of a [Store] on conn.
//
// Statements whose results the hook does not need (the writes of the
// append the hook runs in, the index entry, the inserts of audit records,
// NOTIFY) wait in pending and go to the server with the next statement
// whose result is needed ([recordTx.Exec], [recordTx.QueryRow]) or with
// the transaction's COMMIT ([recordTx.commit]), in one round trip, in the
// order they were queued. A pending statement that fails fails the
// statement or the COMMIT it went with, and the transaction is rolled
// back.
type recordTx struct {
	ctx     context.Context
	r       *recordStore
	conn    *pgxpool.Conn
	pending pgx.Batch
	audited bool // pending holds an insert of audit records: wake the sealer after the commit
}

// commit sends the pending statements and COMMIT, which must report a
// commit: a failed statement skips the rest, COMMIT included, and the
// caller rolls back. After a commit that wrote audit records it wakes
// the audit log's sealer.
func (t *recordTx) commit() error {
	b, audited := t.pending, t.audited
	t.pending, t.audited = pgx.Batch{}, false
	b.Queue("COMMIT")
	if err := t.r.s.sendWrites(t.ctx, t.conn, &b, true); err != nil {
		return err
	}
	if audited {
		t.r.s.audit.Wake()
	}
	return nil
}

// Exec runs query in the transaction, after the pending statements and in
// one round trip with them, and returns its command tag; the error of a
// pending statement that failed, if one did.
func (t *recordTx) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	if t.pending.Len() == 0 {
		return t.conn.Exec(ctx, query, args...)
	}
	br, before := t.sendPending(ctx, query, args)
	defer br.Close()
	for range before {
		if _, err := br.Exec(); err != nil {
			return pgconn.CommandTag{}, err
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return tag, err
	}
	return tag, br.Close()
}

// QueryRow runs query in the transaction as [recordTx.Exec] does and
// returns its row, which must be scanned.
func (t *recordTx) QueryRow(ctx context.Context, query string, args ...any) pgx.Row {
	if t.pending.Len() == 0 {
		return t.conn.QueryRow(ctx, query, args...)
	}
	br, before := t.sendPending(ctx, query, args)
	return &pendingRow{br: br, before: before}
}

// sendPending sends the pending statements and then query, in one batch,
// and returns its results and how many statements went before query.
func (t *recordTx) sendPending(ctx context.Context, query string, args []any) (pgx.BatchResults, int) {
	b := t.pending
	t.pending = pgx.Batch{}
	n := b.Len()
	b.Queue(query, args...)
	return t.conn.SendBatch(ctx, &b), n
}

// pendingRow is the row of a query sent after pending statements.
type pendingRow struct {
	br     pgx.BatchResults
	before int // the pending statements sent first
}

func (r *pendingRow) Scan(dest ...any) error {
	defer r.br.Close()
	for range r.before {
		if _, err := r.br.Exec(); err != nil {
			return err
		}
	}
	if err := r.br.QueryRow().Scan(dest...); err != nil {
		return err
	}
	return r.br.Close()
}

func (t *recordTx) Begin(d *records.Decision) (*records.Decision, error) {
	if err := records.CheckDecision(d); err != nil {
		return nil, err
	}
	body, err := recordrows.EncodeDecision(d)
	if err != nil {
		return nil, err
	}
	return t.r.begin(t.ctx, t, d, body)
}

func (t *recordTx) Finish(conversationID, pauseID string, outcome records.Outcome) error {
	if err := records.CheckOutcome(outcome, true); err != nil {
		return err
	}
	return t.r.finish(t.ctx, t, conversationID, pauseID, outcome)
}

func (t *recordTx) AddPending(p *records.Pending) error {
	if err := records.CheckPending(p); err != nil {
		return err
	}
	// No result needed: sent with the next statement or the COMMIT.
	t.pending.Queue(t.r.s.rq.upsertPending, p.ConversationID, p.Agent, p.PauseID, recordrows.Nanos(p.CreatedAt), records.PendingTools(p.Tools))
	return nil
}

func (t *recordTx) RemovePending(conversationID, pauseID string) error {
	t.pending.Queue(t.r.s.rq.deletePending, conversationID, pauseID)
	return nil
}

func (t *recordTx) Audit(recs ...*audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	// The records go in unsealed, with the COMMIT: no lock, no round
	// trip; the audit log's sealer chains them after the commit.
	if err := t.r.s.audit.QueueTx(&t.pending, recs...); err != nil {
		return recErr("audit", err)
	}
	t.audited = true
	return nil
}

// recErr wraps err, a failure of operation what, in the package's error
// form.
func recErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: records: %s: %w", what, dbErr(err))
}

// maxTakeAttempts bounds the retries of an insert-if-absent whose
// conflicting row is deleted before it can be read.
const maxTakeAttempts = 10

func (r *recordStore) CreateConversation(ctx context.Context, c *records.Conversation) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
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
	tag, err := r.s.pool.Exec(ctx, r.s.rq.insertConversation, c.ID, c.Agent, c.Owner.ID, owner, recordrows.Nanos(c.CreatedAt))
	if err != nil {
		return recErr("create conversation", err)
	}
	if tag.RowsAffected() == 0 {
		return recErr("create conversation", fmt.Errorf("conversation %q: %w", c.ID, records.ErrExists))
	}
	return nil
}

func scanConversation(row pgx.Row) (*records.Conversation, error) {
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
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := scanConversation(r.s.pool.QueryRow(ctx, r.s.rq.selectConversation, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: records: conversation %q: %w", id, records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("conversation", err)
	}
	return c, nil
}

// recordRow holds the columns of a conversation's record as
// [recordQueries.loadConversation] returns them; found says whether there
// was one.
type recordRow struct {
	agent, ownerID string
	owner          []byte
	created        int64
	found          bool
}

// dest returns the scan destinations of the record's columns, in order.
func (r *recordRow) dest() []any { return []any{&r.agent, &r.ownerID, &r.owner, &r.created} }

// LoadConversation implements [records.ConversationLoader]: the
// conversation's record and the conversation, in one statement.
func (r *recordStore) LoadConversation(ctx context.Context, id string) (*records.Conversation, *toolgate.Conversation, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var row recordRow
	conv, err := r.s.loadRows(ctx, r.s.rq.loadConversation, id, &row)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: load %q: %w", id, dbErr(err))
	}
	if !row.found {
		return nil, nil, fmt.Errorf("postgres: records: conversation %q: %w", id, records.ErrNotFound)
	}
	p, err := recordrows.DecodePrincipal(row.ownerID, row.owner)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: records: conversation %q: %w", id, err)
	}
	return &records.Conversation{ID: id, Agent: row.agent, Owner: p, CreatedAt: recordrows.Time(row.created)}, conv, nil
}

// readTx runs fn in a read-only snapshot.
func (r *recordStore) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, r.s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

func (r *recordStore) ListConversations(ctx context.Context, p *records.ListParams) (*records.ConversationPage, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var owner, after string
	if p != nil {
		owner, after = p.Owner, p.After
	}
	limit := records.Limit(p)
	out := &records.ConversationPage{Conversations: []records.Conversation{}}
	err := r.readTx(ctx, func(tx pgx.Tx) error {
		var from int64
		if after != "" {
			err := tx.QueryRow(ctx, r.s.rq.conversationSeq, after).Scan(&from)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: cursor %q names no conversation", records.ErrInvalid, after)
			}
			if err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, r.s.rq.listConversations, from, owner, limit+1)
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

func scanDecision(row pgx.Row) (*records.Decision, error) {
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
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
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
	return r.begin(ctx, r.s.pool, d, body)
}

// begin is Begin through q, with d's encoded record.
func (r *recordStore) begin(ctx context.Context, q querier, d *records.Decision, body string) (*records.Decision, error) {
	for range maxTakeAttempts {
		tag, err := q.Exec(ctx, r.s.rq.insertDecision, d.ConversationID, d.PauseID, string(d.Outcome), body)
		if err != nil {
			return nil, recErr("begin", err)
		}
		if tag.RowsAffected() == 1 {
			return nil, nil
		}
		prior, err := scanDecision(q.QueryRow(ctx, r.s.rq.selectDecision, d.ConversationID, d.PauseID))
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released in between: try again
		}
		if err != nil {
			return nil, recErr("begin", err)
		}
		return prior, nil
	}
	return nil, fmt.Errorf("postgres: records: begin: pause %q of %q was taken and released %d times in a row", d.PauseID, d.ConversationID, maxTakeAttempts)
}

func (r *recordStore) Finish(ctx context.Context, conversationID, pauseID string, outcome records.Outcome) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckOutcome(outcome, true); err != nil {
		return err
	}
	return r.finish(ctx, r.s.pool, conversationID, pauseID, outcome)
}

// finish is Finish through q.
func (r *recordStore) finish(ctx context.Context, q querier, conversationID, pauseID string, outcome records.Outcome) error {
	var (
		n   int64
		err error
	)
	switch {
	case outcome == records.OutcomeNone:
		tag, e := q.Exec(ctx, r.s.rq.deleteDecision, conversationID, pauseID)
		n, err = tag.RowsAffected(), e
	case outcome.Resolves():
		err = q.QueryRow(ctx, r.s.rq.resolveDecision, conversationID, pauseID, string(outcome)).Scan(&n)
	default:
		tag, e := q.Exec(ctx, r.s.rq.updateDecision, conversationID, pauseID, string(outcome))
		n, err = tag.RowsAffected(), e
	}
	if err != nil {
		return recErr("finish", err)
	}
	if n == 0 && outcome == records.OutcomeNone {
		// Not deleted: absent, or resolved for good.
		if _, err := scanDecision(q.QueryRow(ctx, r.s.rq.selectDecision, conversationID, pauseID)); err == nil {
			return nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return recErr("finish", err)
		}
	}
	if n == 0 {
		return recErr("finish", fmt.Errorf("decision of pause %q of %q: %w", pauseID, conversationID, records.ErrNotFound))
	}
	return nil
}

func (r *recordStore) Decision(ctx context.Context, conversationID, pauseID string) (*records.Decision, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := scanDecision(r.s.pool.QueryRow(ctx, r.s.rq.selectDecision, conversationID, pauseID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: records: decision of pause %q of %q: %w", pauseID, conversationID, records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("decision", err)
	}
	return d, nil
}

func (r *recordStore) Decisions(ctx context.Context, conversationID string) ([]records.Decision, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := r.s.pool.Query(ctx, r.s.rq.listDecisions, conversationID)
	if err != nil {
		return nil, recErr("decisions", err)
	}
	defer rows.Close()
	out := []records.Decision{}
	for rows.Next() {
		d, err := scanDecision(rows)
		if err != nil {
			return nil, recErr("decisions", err)
		}
		out = append(out, *d)
	}
	if err := rows.Err(); err != nil {
		return nil, recErr("decisions", err)
	}
	return out, nil
}

func (r *recordStore) AddPending(ctx context.Context, p *records.Pending) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckPending(p); err != nil {
		return err
	}
	_, err := r.s.pool.Exec(ctx, r.s.rq.upsertPending, p.ConversationID, p.Agent, p.PauseID, recordrows.Nanos(p.CreatedAt), records.PendingTools(p.Tools))
	return recErr("add pending", err)
}

// nonNil returns vs, or an empty slice for nil: an empty array, not NULL.
func nonNil(vs []string) []string {
	if vs == nil {
		return []string{}
	}
	return vs
}

func (r *recordStore) RemovePending(ctx context.Context, conversationID, pauseID string) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := r.s.pool.Exec(ctx, r.s.rq.deletePending, conversationID, pauseID)
	return recErr("remove pending", err)
}

func (r *recordStore) ListPending(ctx context.Context, p *records.ListParams) (*records.PendingPage, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := records.Limit(p)
	out := &records.PendingPage{Pending: []records.Pending{}}
	err := r.readTx(ctx, func(tx pgx.Tx) error {
		var (
			fromTime int64 = -1 << 63
			fromConv string
		)
		if p != nil && p.After != "" {
			err := tx.QueryRow(ctx, r.s.rq.pendingCursor, p.After).Scan(&fromTime, &fromConv)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: cursor %q names no pending pause", records.ErrInvalid, p.After)
			}
			if err != nil {
				return err
			}
		}
		var (
			rows pgx.Rows
			err  error
		)
		if p == nil || len(p.Scopes) == 0 {
			rows, err = tx.Query(ctx, r.s.rq.listPending, fromTime, fromConv, limit+1)
		} else {
			pairAgents, pairTools, toolAgents, anyAgents := recordrows.ScopeParts(p.Scopes)
			rows, err = tx.Query(ctx, r.s.rq.listPendingScoped, fromTime, fromConv, limit+1,
				nonNil(pairAgents), nonNil(pairTools), nonNil(toolAgents), nonNil(anyAgents))
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e       records.Pending
				created int64
			)
			if err := rows.Scan(&e.ConversationID, &e.Agent, &e.PauseID, &created, &e.Tools); err != nil {
				return err
			}
			e.CreatedAt, e.Tools = recordrows.Time(created), records.PendingTools(e.Tools)
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

func scanApproval(row pgx.Row) (*records.Approval, error) {
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

func (r *recordStore) Approve(ctx context.Context, a *records.Approval) (*records.Approval, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
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
	// Approvals are never deleted: a conflict's row is there to read.
	tag, err := r.s.pool.Exec(ctx, r.s.rq.insertApproval, a.ConversationID, a.PauseID, a.By, recordrows.Nanos(a.At), ds)
	if err != nil {
		return nil, recErr("approve", err)
	}
	if tag.RowsAffected() == 1 {
		return nil, nil
	}
	prior, err := scanApproval(r.s.pool.QueryRow(ctx, r.s.rq.selectApproval, a.ConversationID, a.PauseID))
	if err != nil {
		return nil, recErr("approve", err)
	}
	return prior, nil
}

func (r *recordStore) Approval(ctx context.Context, conversationID, pauseID string) (*records.Approval, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a, err := scanApproval(r.s.pool.QueryRow(ctx, r.s.rq.selectApproval, conversationID, pauseID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: records: approval of pause %q of %q: %w", pauseID, conversationID, records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("approval", err)
	}
	return a, nil
}

func (r *recordStore) AddGrant(ctx context.Context, g *records.Grant) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckGrant(g); err != nil {
		return err
	}
	tag, err := r.s.pool.Exec(ctx, r.s.rq.insertGrant, g.ID, g.ConversationID, g.Tool, g.ArgumentsDigest, g.GrantedBy,
		recordrows.Nanos(g.GrantedAt), recordrows.Nanos(g.ExpiresAt))
	if err != nil {
		return recErr("add grant", err)
	}
	if tag.RowsAffected() == 0 {
		return recErr("add grant", fmt.Errorf("grant %q: %w", g.ID, records.ErrExists))
	}
	return nil
}

func (r *recordStore) Grants(ctx context.Context, conversationID string, t time.Time) ([]records.Grant, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := r.s.pool.Query(ctx, r.s.rq.listGrants, conversationID, recordrows.Nanos(t))
	if err != nil {
		return nil, recErr("grants", err)
	}
	defer rows.Close()
	out := []records.Grant{}
	for rows.Next() {
		var (
			g                  records.Grant
			granted, expiresAt int64
		)
		if err := rows.Scan(&g.ID, &g.ConversationID, &g.Tool, &g.ArgumentsDigest, &g.GrantedBy, &granted, &expiresAt); err != nil {
			return nil, recErr("grants", err)
		}
		g.GrantedAt, g.ExpiresAt = recordrows.Time(granted), recordrows.Time(expiresAt)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, recErr("grants", err)
	}
	return out, nil
}

func (r *recordStore) RevokeGrant(ctx context.Context, conversationID, id string, t time.Time) (*records.Grant, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		g                  records.Grant
		granted, expiresAt int64
	)
	// The old row's values: a CTE reads the row before the update.
	err := r.s.pool.QueryRow(ctx, r.s.rq.revokeGrant, id, conversationID, recordrows.Nanos(t)).
		Scan(&g.ID, &g.ConversationID, &g.Tool, &g.ArgumentsDigest, &g.GrantedBy, &granted, &expiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, recErr("revoke grant", fmt.Errorf("grant %q of %q: %w", id, conversationID, records.ErrNotFound))
	}
	if err != nil {
		return nil, recErr("revoke grant", err)
	}
	g.GrantedAt, g.ExpiresAt = recordrows.Time(granted), recordrows.Time(expiresAt)
	return &g, nil
}
