// Package retention deletes what the service keeps no longer: events past
// the event feed's window, and receipts and delivery attempts past
// COMMERCE_RETENTION_DAYS. Its Pruner runs in the worker.
package retention

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
)

// EventRetention is how long the outbox keeps events (the event feed's
// window).
const EventRetention = 30 * 24 * time.Hour

// Pruner deletes, in bounded batches, what is past its retention: events
// after EventRetention (with their deliveries, once those are over), and
// inbound receipts and delivery attempts after Retention. It runs in the
// worker: once at start, then every Every (an hour when zero).
type Pruner struct {
	DB        *db.DB
	Log       *zap.Logger
	Retention time.Duration
	Every     time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run prunes until ctx ends.
func (p *Pruner) Run(ctx context.Context) {
	every := p.Every
	if every <= 0 {
		every = time.Hour
	}
	for {
		p.Once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// Once runs one sweep and logs what it deleted.
func (p *Pruner) Once(ctx context.Context) db.Pruned {
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	n, err := p.DB.Prune(ctx, db.Retention{Events: EventRetention, Receipts: p.Retention, Attempts: p.Retention}, now)
	switch {
	case err != nil && ctx.Err() == nil:
		p.Log.Warn("pruning past retention", zap.Error(err))
	case n.Events+n.Receipts+n.Attempts > 0:
		p.Log.Info("pruned past retention", zap.Int64("events", n.Events), zap.Int64("receipts", n.Receipts), zap.Int64("attempts", n.Attempts))
	}
	return n
}
