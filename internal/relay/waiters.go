package relay

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/workflows"
)

// Waiters wakes the workflows waiting for records: inbound posts parked
// until the order, delivery or purchase order they name exists, and
// three-way matches waiting for a goods receipt. A load of records queues,
// in its own transaction, one wake for each workflow waiting for what it
// created (matched by reference: a parked post's wait keys, a match's
// purchase order) and notifies; Waiters sends the queued wakes as signals
// that carry those references, in batches, on each notification and after
// every Sweep without one (a wake queued while no relay listened). It
// reads only the queue: the periodic look of a waiting workflow is its own
// timer, not a sweep of every waiter.
type Waiters struct {
	DB        *db.DB
	Workflows *workflows.Client
	Log       *zap.Logger
	// Sweep is how often the queue is read without a notification (a
	// minute when zero).
	Sweep time.Duration
	// Batch is how many wakes one round takes (wakeBatch when zero).
	Batch int
}

// wakeBatch is how many wakes one round takes by default.
const wakeBatch = 200

// Run listens until ctx ends, reconnecting 5 s after a failure (the only
// other time ListenRecords returns).
func (w *Waiters) Run(ctx context.Context) {
	sweep := w.Sweep
	if sweep == 0 {
		sweep = time.Minute
	}
	w.Drain(ctx)
	repeat(ctx, 5*time.Second, func() {
		err := w.DB.ListenRecords(ctx, sweep, func() { w.Drain(ctx) })
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("listening for new records failed; retrying", zap.Error(err))
		}
	})
}

// Drain sends the queued wakes, a batch at a time, and reports how many it
// sent. It stops at the first batch with a wake it could not send, leaving
// that wake for the next round.
func (w *Waiters) Drain(ctx context.Context) int {
	batch := w.Batch
	if batch <= 0 {
		batch = wakeBatch
	}
	total := 0
	for ctx.Err() == nil {
		// Claimed in a transaction of its own, which has committed: the
		// signals are sent outside it.
		wakes, err := w.DB.ClaimRecordWakes(ctx, batch)
		if err != nil {
			if ctx.Err() == nil {
				w.Log.Warn("reading the wakes to send", zap.Error(err))
			}
			return total
		}
		sent, unsent := make([]int64, 0, len(wakes)), []int64{}
		done := map[string]bool{} // one signal per workflow and batch
		for _, wk := range wakes {
			if err := w.send(ctx, wk, done); err != nil {
				unsent = append(unsent, wk.ID)
				w.Log.Warn("waking a waiting workflow", zap.String("kind", wk.Kind), zap.Int64("wake", wk.ID), zap.Error(err))
				continue
			}
			sent = append(sent, wk.ID)
		}
		bg := context.WithoutCancel(ctx)
		if err := errors.Join(w.DB.DeleteRecordWakes(bg, sent), w.DB.ReleaseRecordWakes(bg, unsent)); err != nil {
			w.Log.Warn("recording the wakes sent", zap.Error(err))
			return total
		}
		total += len(sent)
		if len(unsent) > 0 || len(wakes) < batch {
			return total
		}
	}
	return total
}

// send signals the workflow of one wake, unless this batch signalled it
// already: several loads in a row make one signal (a parked post's wakes
// carry only keys it waits for, so the first one concerns it as much as
// the rest).
func (w *Waiters) send(ctx context.Context, wk db.RecordWake, done map[string]bool) error {
	switch {
	case wk.Kind == db.WakeInbound && wk.ReceiptID != nil:
		id := domain.InboundWorkflowID(*wk.ReceiptID)
		if done[id] {
			return nil
		}
		if err := w.Workflows.WakeInbound(ctx, *wk.ReceiptID, wk.Keys); err != nil {
			return err
		}
		done[id] = true
	case wk.Kind == db.WakeMatch && wk.POID != nil && wk.InvoiceRef != nil:
		id := domain.MatchWorkflowID(*wk.POID, *wk.InvoiceRef)
		if done[id] {
			return nil
		}
		if err := w.Workflows.WakeMatch(ctx, *wk.POID, *wk.InvoiceRef); err != nil {
			return err
		}
		done[id] = true
	}
	return nil
}
