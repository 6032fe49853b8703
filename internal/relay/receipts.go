package relay

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/workflows"
)

// Receipts starts the workflows of inbound receipts left pending without
// one: the API stores a post's receipt, then starts its workflow, and a
// process killed between the two (or whose start Temporal lost in a crash)
// leaves a receipt that nothing would run, and a sender whose retries are
// answered 409 "no answer yet". A receipt still pending after Grace is
// started again by its workflow ID: a run that exists is joined, one that
// has closed is left alone, so nothing runs twice.
type Receipts struct {
	DB        *db.DB
	Workflows *workflows.Client
	Log       *zap.Logger
	// Sweep is the pause between sweeps (10 s when zero), Grace how old a
	// pending receipt must be to be started again (15 s when zero).
	Sweep, Grace time.Duration
}

// Run sweeps at once and then every Sweep until ctx ends.
func (r *Receipts) Run(ctx context.Context) {
	sweep := r.Sweep
	if sweep == 0 {
		sweep = 10 * time.Second
	}
	repeat(ctx, sweep, func() {
		if n, err := r.Drain(ctx); err != nil && ctx.Err() == nil {
			r.Log.Warn("starting the workflows of pending receipts failed; retrying at the next sweep", zap.Error(err))
		} else if n > 0 {
			r.Log.Info("pending receipts without a workflow run started", zap.Int("count", n))
		}
	})
}

// Drain starts (or joins) the workflow of every receipt pending past the
// grace, and reports how many it asked for.
func (r *Receipts) Drain(ctx context.Context) (int, error) {
	grace := r.Grace
	if grace == 0 {
		grace = 15 * time.Second
	}
	started, after := 0, uuid.Nil
	for {
		batch, err := r.DB.UnstartedReceipts(ctx, grace, after, 100)
		if err != nil {
			return started, err
		}
		for _, in := range batch {
			if err := r.Workflows.StartInbound(ctx, in); err != nil {
				return started, err
			}
			started++
			after = in.ReceiptID
		}
		if len(batch) < 100 {
			return started, nil
		}
	}
}
