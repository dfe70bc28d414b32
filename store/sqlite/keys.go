package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/recordrows"
	"github.com/toolgate/toolgate/records"
)

// requestKeysMigration keeps the idempotency keys of requests
// ([records.RequestKey]), one row per scope and key.
const requestKeysMigration = `CREATE TABLE server_request_keys (
		scope TEXT NOT NULL,
		key TEXT NOT NULL,
		digest TEXT NOT NULL,
		token TEXT NOT NULL,
		effects INTEGER NOT NULL DEFAULT 0,
		done INTEGER NOT NULL DEFAULT 0,
		status INTEGER NOT NULL DEFAULT 0,
		body BLOB,
		created_at INTEGER NOT NULL,
		locked_until INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		PRIMARY KEY (scope, key)
	) WITHOUT ROWID;
	CREATE INDEX server_request_keys_expiry ON server_request_keys (expires_at);`

const (
	insertKeySQL = `INSERT INTO server_request_keys (scope, key, digest, token, created_at, locked_until, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO NOTHING`
	replaceKeySQL = `UPDATE server_request_keys SET digest = ?, token = ?, effects = 0, done = 0, status = 0, body = NULL,
		created_at = ?, locked_until = ?, expires_at = ? WHERE scope = ? AND key = ?`
	selectKeySQL = `SELECT scope, key, digest, token, effects, done, status, body, created_at, locked_until, expires_at
		FROM server_request_keys WHERE scope = ? AND key = ?`
	completeKeySQL = `UPDATE server_request_keys SET done = 1, status = ?, body = ?
		WHERE scope = ? AND key = ? AND token = ? AND done = 0`
	deleteHeldKeySQL = "DELETE FROM server_request_keys WHERE scope = ? AND key = ? AND token = ? AND done = 0 AND effects = 0"
	unlockKeySQL     = "UPDATE server_request_keys SET locked_until = ? WHERE scope = ? AND key = ? AND token = ? AND done = 0"
	markKeySQL       = "UPDATE server_request_keys SET effects = effects + 1 WHERE scope = ? AND key = ? AND token = ? AND done = 0"
	pruneKeysSQL     = "DELETE FROM server_request_keys WHERE expires_at <= ?"
)

func scanKey(row scanner) (*records.RequestKey, error) {
	var (
		k                        records.RequestKey
		created, locked, expires int64
	)
	if err := row.Scan(&k.Scope, &k.Key, &k.Digest, &k.Token, &k.Effects, &k.Done, &k.Status, &k.Body, &created, &locked, &expires); err != nil {
		return nil, err
	}
	k.CreatedAt, k.LockedUntil, k.ExpiresAt = recordrows.Time(created), recordrows.Time(locked), recordrows.Time(expires)
	return &k, nil
}

func (r *recordStore) ReserveKey(ctx context.Context, k *records.RequestKey) (*records.RequestKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := records.CheckRequestKey(k); err != nil {
		return nil, err
	}
	var prior *records.RequestKey
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		prior = nil
		res, err := tx.ExecContext(ctx, insertKeySQL, k.Scope, k.Key, k.Digest, k.Token,
			recordrows.Nanos(k.CreatedAt), recordrows.Nanos(k.LockedUntil), recordrows.Nanos(k.ExpiresAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		old, err := scanKey(tx.QueryRowContext(ctx, selectKeySQL, k.Scope, k.Key))
		if err != nil {
			return err
		}
		if !old.Replaces(k.CreatedAt) {
			prior = old
			return nil
		}
		_, err = tx.ExecContext(ctx, replaceKeySQL, k.Digest, k.Token,
			recordrows.Nanos(k.CreatedAt), recordrows.Nanos(k.LockedUntil), recordrows.Nanos(k.ExpiresAt), k.Scope, k.Key)
		return err
	})
	if err != nil {
		return nil, recErr("reserve key", err)
	}
	return prior, nil
}

func (r *recordStore) CompleteKey(ctx context.Context, scope, key, token string, status int, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if body == nil {
		body = []byte{}
	}
	var n int64
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, completeKeySQL, status, body, scope, key, token)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("request key %q held by %q: %w", key, token, records.ErrNotFound)
	}
	return recErr("complete key", err)
}

func (r *recordStore) ReleaseKey(ctx context.Context, scope, key, token string, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, deleteHeldKeySQL, scope, key, token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		_, err = tx.ExecContext(ctx, unlockKeySQL, recordrows.Nanos(t), scope, key, token)
		return err
	})
	return recErr("release key", err)
}

func (r *recordStore) PruneKeys(ctx context.Context, t time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, pruneKeysSQL, recordrows.Nanos(t))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, recErr("prune keys", err)
	}
	return int(n), nil
}

func (t *recordTx) MarkKey(scope, key, token string) error {
	res, err := t.tx.ExecContext(t.ctx, markKeySQL, scope, key, token)
	if err != nil {
		return recErr("mark key", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return recErr("mark key", cmpErr(err, fmt.Errorf("request key %q held by %q: %w", key, token, records.ErrNotFound)))
	}
	return nil
}
