package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/recordrows"
	"github.com/toolgate/toolgate/records"
)

// sessionsMigration keeps the sessions of signed-in browsers
// ([records.Session]) and the secrets the instances share.
const sessionsMigration = `CREATE TABLE S.server_sessions (
		id text PRIMARY KEY,
		principal_id text NOT NULL,
		principal jsonb NOT NULL,
		key_hash bytea,
		expires_at bigint NOT NULL
	);
	CREATE INDEX server_sessions_principal ON S.server_sessions (principal_id, expires_at);
	CREATE INDEX server_sessions_expiry ON S.server_sessions (expires_at);
	CREATE TABLE S.server_secrets (
		name text PRIMARY KEY,
		value bytea NOT NULL
	);`

// sessionQueries are the statements of the sessions, with the schema
// filled in.
type sessionQueries struct {
	trim, insert, selectLive, delete, prune, insertSecret, selectSecret string
}

func newSessionQueries(r interface{ Replace(string) string }) sessionQueries {
	return sessionQueries{
		// The principal's live sessions beyond max-1 go, those that
		// expire first first; the advisory lock orders concurrent
		// sign-ins of one principal.
		trim: r.Replace(`DELETE FROM S.server_sessions WHERE id IN (
			SELECT id FROM S.server_sessions WHERE principal_id = $1 AND expires_at > $2
			ORDER BY expires_at DESC OFFSET $3)`),
		insert: r.Replace(`INSERT INTO S.server_sessions (id, principal_id, principal, key_hash, expires_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`),
		selectLive:   r.Replace("SELECT id, principal_id, principal, key_hash, expires_at FROM S.server_sessions WHERE id = $1 AND expires_at > $2"),
		delete:       r.Replace("DELETE FROM S.server_sessions WHERE id = $1"),
		prune:        r.Replace("DELETE FROM S.server_sessions WHERE expires_at <= $1"),
		insertSecret: r.Replace("INSERT INTO S.server_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"),
		selectSecret: r.Replace("SELECT value FROM S.server_secrets WHERE name = $1"),
	}
}

func (r *recordStore) AddSession(ctx context.Context, s *records.Session, max int, t time.Time) error {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
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
	q := &r.s.rq.sessions
	err = pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
		if max > 0 {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "toolgate session "+s.Principal.ID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, q.trim, s.Principal.ID, recordrows.Nanos(t), max-1); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, q.insert, s.ID, s.Principal.ID, p, s.KeyHash, recordrows.Nanos(s.ExpiresAt))
		if err == nil && tag.RowsAffected() == 0 {
			err = fmt.Errorf("session: %w", records.ErrExists)
		}
		return err
	})
	return recErr("add session", err)
}

func (r *recordStore) Session(ctx context.Context, id string, t time.Time) (*records.Session, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		s       records.Session
		pid     string
		p       []byte
		expires int64
	)
	err := r.s.pool.QueryRow(ctx, r.s.rq.sessions.selectLive, id, recordrows.Nanos(t)).Scan(&s.ID, &pid, &p, &s.KeyHash, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: records: session: %w", records.ErrNotFound)
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
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := r.s.pool.Exec(ctx, r.s.rq.sessions.delete, id)
	return recErr("end session", err)
}

func (r *recordStore) PruneSessions(ctx context.Context, t time.Time) (int, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tag, err := r.s.pool.Exec(ctx, r.s.rq.sessions.prune, recordrows.Nanos(t))
	if err != nil {
		return 0, recErr("prune sessions", err)
	}
	return int(tag.RowsAffected()), nil
}

func (r *recordStore) SharedSecret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	ctx, cancel := r.s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name == "" || len(fresh) == 0 {
		return nil, fmt.Errorf("%w: shared secret with an empty name or value", records.ErrInvalid)
	}
	// Secrets are never deleted: a conflict's row is there to read.
	if _, err := r.s.pool.Exec(ctx, r.s.rq.sessions.insertSecret, name, fresh); err != nil {
		return nil, recErr("shared secret", err)
	}
	var v []byte
	if err := r.s.pool.QueryRow(ctx, r.s.rq.sessions.selectSecret, name).Scan(&v); err != nil {
		return nil, recErr("shared secret", err)
	}
	return v, nil
}
