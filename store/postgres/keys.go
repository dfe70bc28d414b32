package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/recordrows"
	"github.com/toolgate/toolgate/records"
)

// requestKeysMigration keeps the idempotency keys of requests
// ([records.RequestKey]), one row per scope and key.
const requestKeysMigration = `CREATE TABLE S.server_request_keys (
		scope text NOT NULL,
		key text NOT NULL,
		digest text NOT NULL,
		token text NOT NULL,
		effects integer NOT NULL DEFAULT 0,
		done boolean NOT NULL DEFAULT false,
		status integer NOT NULL DEFAULT 0,
		body bytea,
		created_at bigint NOT NULL,
		locked_until bigint NOT NULL,
		expires_at bigint NOT NULL,
		PRIMARY KEY (scope, key)
	);
	CREATE INDEX server_request_keys_expiry ON S.server_request_keys (expires_at);`

// keyQueries are the statements of the idempotency keys, with the schema
// filled in.
type keyQueries struct {
	insert, replace, selectForUpdate, complete, deleteHeld, unlock, mark, prune string
}

func newKeyQueries(r *strings.Replacer) keyQueries {
	return keyQueries{
		insert: r.Replace(`INSERT INTO S.server_request_keys (scope, key, digest, token, created_at, locked_until, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (scope, key) DO NOTHING`),
		replace: r.Replace(`UPDATE S.server_request_keys SET digest = $3, token = $4, effects = 0, done = false, status = 0, body = NULL,
			created_at = $5, locked_until = $6, expires_at = $7 WHERE scope = $1 AND key = $2`),
		selectForUpdate: r.Replace(`SELECT scope, key, digest, token, effects, done, status, body, created_at, locked_until, expires_at
			FROM S.server_request_keys WHERE scope = $1 AND key = $2 FOR UPDATE`),
		complete: r.Replace(`UPDATE S.server_request_keys SET done = true, status = $4, body = $5
			WHERE scope = $1 AND key = $2 AND token = $3 AND NOT done`),
		deleteHeld: r.Replace("DELETE FROM S.server_request_keys WHERE scope = $1 AND key = $2 AND token = $3 AND NOT done AND effects = 0"),
		unlock:     r.Replace("UPDATE S.server_request_keys SET locked_until = $4 WHERE scope = $1 AND key = $2 AND token = $3 AND NOT done"),
		mark:       r.Replace("UPDATE S.server_request_keys SET effects = effects + 1 WHERE scope = $1 AND key = $2 AND token = $3 AND NOT done"),
		prune:      r.Replace("DELETE FROM S.server_request_keys WHERE expires_at <= $1"),
	}
}

func scanKey(row pgx.Row) (*records.RequestKey, error) {
	var (
		k                        records.RequestKey
		created, locked, expires int64
		effects, status          int32
	)
	if err := row.Scan(&k.Scope, &k.Key, &k.Digest, &k.Token, &effects, &k.Done, &status, &k.Body, &created, &locked, &expires); err != nil {
		return nil, err
	}
	k.Effects, k.Status = int(effects), int(status)
	k.CreatedAt, k.LockedUntil, k.ExpiresAt = recordrows.Time(created), recordrows.Time(locked), recordrows.Time(expires)
	return &k, nil
}

func (r *recordStore) ReserveKey(ctx context.Context, k *records.RequestKey) (*records.RequestKey, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := records.CheckRequestKey(k); err != nil {
		return nil, err
	}
	q := &r.s.rq.keys
	args := []any{k.Scope, k.Key, k.Digest, k.Token, recordrows.Nanos(k.CreatedAt), recordrows.Nanos(k.LockedUntil), recordrows.Nanos(k.ExpiresAt)}
	for range maxTakeAttempts {
		var prior *records.RequestKey
		err := pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, q.insert, args...)
			if err != nil || tag.RowsAffected() == 1 {
				return err
			}
			old, err := scanKey(tx.QueryRow(ctx, q.selectForUpdate, k.Scope, k.Key))
			if err != nil {
				return err
			}
			if !old.Replaces(k.CreatedAt) {
				prior = old
				return nil
			}
			_, err = tx.Exec(ctx, q.replace, args...)
			return err
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // deleted between the insert and the read: insert again
		}
		if err != nil {
			return nil, recErr("reserve key", err)
		}
		return prior, nil
	}
	return nil, recErr("reserve key", fmt.Errorf("request key %q: deleted as often as it was read", k.Key))
}

func (r *recordStore) CompleteKey(ctx context.Context, scope, key, token string, status int, body []byte) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	if body == nil {
		body = []byte{}
	}
	tag, err := r.s.pool.Exec(ctx, r.s.rq.keys.complete, scope, key, token, status, body)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("request key %q held by %q: %w", key, token, records.ErrNotFound)
	}
	return recErr("complete key", err)
}

func (r *recordStore) ReleaseKey(ctx context.Context, scope, key, token string, t time.Time) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	tag, err := r.s.pool.Exec(ctx, r.s.rq.keys.deleteHeld, scope, key, token)
	if err == nil && tag.RowsAffected() == 0 {
		_, err = r.s.pool.Exec(ctx, r.s.rq.keys.unlock, scope, key, token, recordrows.Nanos(t))
	}
	return recErr("release key", err)
}

func (r *recordStore) PruneKeys(ctx context.Context, t time.Time) (int, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tag, err := r.s.pool.Exec(ctx, r.s.rq.keys.prune, recordrows.Nanos(t))
	if err != nil {
		return 0, recErr("prune keys", err)
	}
	return int(tag.RowsAffected()), nil
}

func (t *recordTx) MarkKey(scope, key, token string) error {
	tag, err := t.Exec(t.ctx, t.r.s.rq.keys.mark, scope, key, token)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("request key %q held by %q: %w", key, token, records.ErrNotFound)
	}
	return recErr("mark key", err)
}

// Notify implements [records.Notifier]: pg_notify in the transaction,
// delivered when it commits. It fails with an error wrapping [ErrPayload]
// for a payload NOTIFY cannot carry.
func (t *recordTx) Notify(channel string, payload []byte) error {
	switch {
	case len(payload) > maxPayload:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrPayload, len(payload), maxPayload)
	case !utf8.Valid(payload):
		return fmt.Errorf("%w: invalid UTF-8", ErrPayload)
	case strings.ContainsRune(string(payload), 0):
		return fmt.Errorf("%w: a NUL byte", ErrPayload)
	}
	// Sent with the COMMIT.
	t.pending.Queue("SELECT pg_notify($1, $2)", channel, string(payload))
	return nil
}
