// Package relay holds the worker's sweeps: loops that find work recorded in
// Postgres and start the durable workflow that carries it out, keyed by
// workflow ID so a repeated start attaches instead of doubling the work.
package relay

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/workflows"
)

// QuoteExpiry starts the expiry timer of every draft or sent quote that has
// a valid_until and no timer yet.
type QuoteExpiry struct {
	DB        *db.DB
	Workflows *workflows.Client
	Log       *zap.Logger
	// Interval between sweeps (10 minutes when zero).
	Interval time.Duration
}

// Run sweeps at once and then every Interval until ctx ends.
func (q *QuoteExpiry) Run(ctx context.Context) {
	interval := q.Interval
	if interval == 0 {
		interval = 10 * time.Minute
	}
	repeat(ctx, interval, func() {
		if n, err := q.Sweep(ctx); err != nil && ctx.Err() == nil {
			q.Log.Warn("quote expiry sweep failed", zap.Error(err))
		} else if n > 0 {
			q.Log.Info("quote expiry timers started", zap.Int("count", n))
		}
	})
}

// repeat calls fn until ctx ends, pausing for pause after each call.
func repeat(ctx context.Context, pause time.Duration, fn func()) {
	for ctx.Err() == nil {
		fn()
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// Sweep starts the timers that are missing and reports how many it started.
func (q *QuoteExpiry) Sweep(ctx context.Context) (int, error) {
	started := 0
	for {
		batch, err := q.DB.QuotesAwaitingExpiryTimer(ctx, 100)
		if err != nil {
			return started, err
		}
		for _, qe := range batch {
			if err := q.Workflows.StartQuoteExpiry(ctx, qe); err != nil {
				return started, err
			}
			if err := q.DB.MarkExpiryTimerStarted(ctx, qe.OrgID, qe.QuoteID); err != nil {
				return started, err
			}
			started++
		}
		if len(batch) < 100 {
			return started, nil
		}
	}
}
