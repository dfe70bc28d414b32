package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SetAfterTake sets the hook that runs in a seal batch of l after it took
// the unsealed records and before it inserts them sealed. Set it before l
// seals, on a Log without a sealer of its own.
func SetAfterTake(l *Log, f func(pid uint32)) { l.afterTake = f }

// NewObserved is New with a hook that runs after each round of the Log's
// sealer, with its error.
func NewObserved(ctx context.Context, pool *pgxpool.Pool, opts *Options, afterRound func(error)) (*Log, error) {
	return newLog(ctx, pool, opts, afterRound)
}
