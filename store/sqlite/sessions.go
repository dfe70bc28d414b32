package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/recordrows"
	"github.com/toolgate/toolgate/records"
)

// sessionsMigration keeps the sessions of signed-in browsers
// ([records.Session]) and the secrets the instances share.
const sessionsMigration = `CREATE TABLE server_sessions (
		id TEXT NOT NULL PRIMARY KEY,
		principal_id TEXT NOT NULL,
		principal TEXT NOT NULL,
		key_hash BLOB,
		expires_at INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE INDEX server_sessions_principal ON server_sessions (principal_id, expires_at);
	CREATE INDEX server_sessions_expiry ON server_sessions (expires_at);
	CREATE TABLE server_secrets (
		name TEXT NOT NULL PRIMARY KEY,
		value BLOB NOT NULL
	) WITHOUT ROWID;`

func (r *recordStore) AddSession(ctx context.Context, s *records.Session, max int, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := records.CheckSession(s, t); err != nil {
		return err
	}
	p, err := recordrows.EncodePrincipal(&s.Principal)
	if err != nil {
		return err
	}
	err = r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if max > 0 {
			// The principal's live sessions beyond max-1 go, those that
			// expire first first.
			if _, err := tx.ExecContext(ctx, `DELETE FROM server_sessions WHERE id IN (
				SELECT id FROM server_sessions WHERE principal_id = ? AND expires_at > ?
				ORDER BY expires_at DESC LIMIT -1 OFFSET ?)`, s.Principal.ID, recordrows.Nanos(t), max-1); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO server_sessions (id, principal_id, principal, key_hash, expires_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, s.ID, s.Principal.ID, p, s.KeyHash, recordrows.Nanos(s.ExpiresAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, fmt.Errorf("session: %w", records.ErrExists))
		}
		return nil
	})
	return recErr("add session", err)
}

func (r *recordStore) Session(ctx context.Context, id string, t time.Time) (*records.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		s       records.Session
		pid     string
		p       []byte
		expires int64
	)
	err := r.s.read.QueryRowContext(ctx, "SELECT id, principal_id, principal, key_hash, expires_at FROM server_sessions WHERE id = ? AND expires_at > ?",
		id, recordrows.Nanos(t)).Scan(&s.ID, &pid, &p, &s.KeyHash, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: records: session: %w", records.ErrNotFound)
	}
	if err != nil {
		return nil, recErr("session", err)
	}
	if s.Principal, err = recordrows.DecodePrincipal(pid, p); err != nil {
		return nil, recErr("session", err)
	}
	s.ExpiresAt = recordrows.Time(expires)
	return &s, nil
}

func (r *recordStore) EndSession(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM server_sessions WHERE id = ?", id)
		return err
	})
	return recErr("end session", err)
}

func (r *recordStore) PruneSessions(ctx context.Context, t time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM server_sessions WHERE expires_at <= ?", recordrows.Nanos(t))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, recErr("prune sessions", err)
	}
	return int(n), nil
}

func (r *recordStore) SharedSecret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name == "" || len(fresh) == 0 {
		return nil, fmt.Errorf("%w: shared secret with an empty name or value", records.ErrInvalid)
	}
	var v []byte
	err := r.s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", name, fresh); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT value FROM server_secrets WHERE name = ?", name).Scan(&v)
	})
	if err != nil {
		return nil, recErr("shared secret", err)
	}
	return v, nil
}
