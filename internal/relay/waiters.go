package relay

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/workflows"
)

// Waiters wakes the workflows waiting for records: inbound posts parked
// until the order, delivery or purchase order they name exists, and
// three-way matches waiting for a goods receipt. It listens for the
// notification a load of records sends (payload: the organisation) and also
// sweeps every organisation now and then, in case one was missed.
type Waiters struct {
	DB        *db.DB
	Workflows *workflows.Client
	Log       *zap.Logger
	// Sweep is how often every waiter is woken without a notification
	// (5 minutes when zero).
	Sweep time.Duration
}

// Run listens until ctx ends, reconnecting 5 s after a failure (the only
// other time ListenRecords returns).
func (w *Waiters) Run(ctx context.Context) {
	sweep := w.Sweep
	if sweep == 0 {
		sweep = 5 * time.Minute
	}
	repeat(ctx, 5*time.Second, func() {
		err := w.DB.ListenRecords(ctx, sweep, func(org *uuid.UUID) { w.Wake(ctx, org) })
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("listening for new records failed; retrying", zap.Error(err))
		}
	})
}

// Wake signals the waiting workflows of one organisation (of all, when org
// is nil) to look again for what they wait for.
func (w *Waiters) Wake(ctx context.Context, org *uuid.UUID) {
	parked, err := w.DB.ParkedReceipts(ctx, org)
	if err != nil {
		w.Log.Warn("listing parked receipts", zap.Error(err))
	}
	for _, r := range parked {
		if err := w.Workflows.WakeInbound(ctx, r.ID); err != nil {
			w.Log.Warn("waking a parked post", zap.String("receipt_id", r.ID.String()), zap.Error(err))
		}
	}
	awaiting, err := w.DB.AwaitingInvoices(ctx, org)
	if err != nil {
		w.Log.Warn("listing invoices awaiting receipts", zap.Error(err))
	}
	for _, m := range awaiting {
		if err := w.Workflows.WakeMatch(ctx, m.POID, m.InvoiceRef); err != nil {
			w.Log.Warn("waking a waiting match", zap.String("po_id", m.POID.String()), zap.String("invoice_ref", m.InvoiceRef), zap.Error(err))
		}
	}
}
