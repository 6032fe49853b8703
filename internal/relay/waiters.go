package relay

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
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
	DB       *db.DB
	Temporal client.Client
	Log      *zap.Logger
	// Sweep is how often every waiter is woken without a notification
	// (5 minutes when zero).
	Sweep time.Duration
}

// Run listens until ctx ends, reconnecting after a failure.
func (w *Waiters) Run(ctx context.Context) {
	sweep := w.Sweep
	if sweep == 0 {
		sweep = 5 * time.Minute
	}
	for ctx.Err() == nil {
		err := w.DB.ListenRecords(ctx, sweep, func(org *uuid.UUID) { w.Wake(ctx, org) })
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("listening for new records failed; retrying", zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}
}

// Wake signals the waiting workflows of one organisation (of all, when org
// is nil) to look again for what they wait for.
func (w *Waiters) Wake(ctx context.Context, org *uuid.UUID) {
	parked, err := w.DB.ParkedReceipts(ctx, org)
	if err != nil {
		w.Log.Warn("listing parked receipts", zap.Error(err))
	}
	for _, r := range parked {
		w.signal(ctx, workflows.InboundWorkflowID(r.ID), workflows.RecordCreatedSignal)
	}
	awaiting, err := w.DB.AwaitingInvoices(ctx, org)
	if err != nil {
		w.Log.Warn("listing invoices awaiting receipts", zap.Error(err))
	}
	for _, m := range awaiting {
		w.signal(ctx, workflows.MatchWorkflowID(m.POID, m.InvoiceRef), workflows.ReceiptRecordedSignal)
	}
}

func (w *Waiters) signal(ctx context.Context, workflowID, name string) {
	err := w.Temporal.SignalWorkflow(ctx, workflowID, "", name, nil)
	var gone *serviceerror.NotFound
	if err != nil && !errors.As(err, &gone) {
		w.Log.Warn("signalling a waiting workflow", zap.String("workflow_id", workflowID), zap.Error(err))
	}
}
