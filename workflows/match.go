package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// ReceiptRecordedSignal wakes a three-way match waiting for goods.
const ReceiptRecordedSignal = "receipt-recorded"

// How long a match waits for a goods receipt, and how often it looks again
// on its own.
const (
	MatchWaitFor = 14 * 24 * time.Hour
	MatchRecheck = 6 * time.Hour
)

// ThreeWayMatch waits for goods to be received against a supplier invoice's
// purchase order, then matches the invoice against them (variances where
// they disagree beyond tolerance). It looks again whenever
// ReceiptRecordedSignal arrives, and every 6 hours; after 14 days without a
// receipt it raises a no_receipt variance.
func ThreeWayMatch(ctx workflow.Context, in domain.MatchInput) (domain.MatchResult, error) {
	ctx = workflow.WithActivityOptions(ctx, applyOptions)
	signals := workflow.GetSignalChannel(ctx, ReceiptRecordedSignal)
	deadline := workflow.Now(ctx).Add(MatchWaitFor)
	for {
		var res domain.MatchResult
		if err := workflow.ExecuteActivity(ctx, matchSupplierInvoice, in).Get(ctx, &res); err != nil {
			return res, err
		}
		if res.Status != domain.MatchAwaitingReceipt {
			return res, nil
		}
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			err := workflow.ExecuteActivity(ctx, raiseNoReceipt, in).Get(ctx, &res)
			return res, err
		}
		waitForSignal(ctx, signals, min(left, MatchRecheck))
	}
}
