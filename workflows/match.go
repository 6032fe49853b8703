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

// boundedMatchWait marks the change that bounded a waiting match's history
// (waitForGoods): a wake for another purchase order runs nothing, wakes no
// longer restart the recheck timer, and a run whose history grew long
// continues as new.
const boundedMatchWait = "bounded-match-wait"

// ThreeWayMatch waits for goods to be received against a supplier invoice's
// purchase order, then matches the invoice against them (variances where
// they disagree beyond tolerance). It looks again whenever
// ReceiptRecordedSignal names its purchase order, and every 6 hours; after
// 14 days without a receipt it raises a no_receipt variance. A run whose
// history grows long continues as new with the same deadline
// (in.Deadline), and looks again first.
func ThreeWayMatch(ctx workflow.Context, in domain.MatchInput) (domain.MatchResult, error) {
	ctx = workflow.WithActivityOptions(ctx, applyOptions)
	signals := workflow.GetSignalChannel(ctx, ReceiptRecordedSignal)
	deadline := workflow.Now(ctx).Add(MatchWaitFor)
	if in.Deadline != nil {
		deadline = *in.Deadline
	}
	act := in
	act.Deadline = nil // the activities need the invoice, not the wait
	for {
		var res domain.MatchResult
		if err := workflow.ExecuteActivity(ctx, matchSupplierInvoice, act).Get(ctx, &res); err != nil {
			return res, err
		}
		if res.Status != domain.MatchAwaitingReceipt {
			return res, nil
		}
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			err := workflow.ExecuteActivity(ctx, raiseNoReceipt, act).Get(ctx, &res)
			return res, err
		}
		if workflow.GetVersion(ctx, boundedMatchWait, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
			return waitForGoods(ctx, signals, act, deadline)
		}
		waitForSignal(ctx, signals, min(left, MatchRecheck))
	}
}

// waitForGoods waits for the invoice's goods until deadline, looking again
// when its recheck timer fires and when a ReceiptRecordedSignal names its
// purchase order (wakes that queued up together make one look), then
// matches or raises no_receipt. After wakesPerRun wakes (or a long
// history) it takes the waiting signals and continues as new with the
// deadline; the new run looks again first, so no wake is lost.
func waitForGoods(ctx workflow.Context, signals workflow.ReceiveChannel, in domain.MatchInput, deadline time.Time) (domain.MatchResult, error) {
	concerns := func(wake domain.GoodsReceived) bool { return wake.POID == nil || *wake.POID == in.POID }
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	var timer workflow.Future
	for wakes := 0; ; wakes++ {
		var res domain.MatchResult
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			err := workflow.ExecuteActivity(ctx, raiseNoReceipt, in).Get(ctx, &res)
			return res, err
		}
		if historyLong(ctx, wakes) {
			for signals.ReceiveAsync(nil) {
			}
			next := in
			next.Deadline = &deadline
			return res, workflow.NewContinueAsNewError(ctx, ThreeWayMatch, next)
		}
		if timer == nil {
			timer = workflow.NewTimer(timerCtx, min(left, MatchRecheck))
		}
		look := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { timer, look = nil, true })
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
			var wake domain.GoodsReceived
			c.Receive(ctx, &wake)
			look = look || concerns(wake)
		})
		sel.Select(ctx)
		for {
			var wake domain.GoodsReceived
			if !signals.ReceiveAsync(&wake) {
				break
			}
			look = look || concerns(wake)
		}
		if !look {
			continue
		}
		if err := workflow.ExecuteActivity(ctx, matchSupplierInvoice, in).Get(ctx, &res); err != nil {
			return res, err
		}
		if res.Status != domain.MatchAwaitingReceipt {
			return res, nil
		}
	}
}
