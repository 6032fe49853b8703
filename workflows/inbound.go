package workflows

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// Names of the inbound workflow's messages.
const (
	// AnswerUpdate returns the post's first answer once there is one; the
	// HTTP handler starts the workflow with it (update-with-start).
	AnswerUpdate = "answer"
	// RecordCreatedSignal wakes a parked post: records it may be waiting
	// for were created.
	RecordCreatedSignal = "record-created"
)

// How long a parked post waits, and how often it looks again on its own.
const (
	ParkFor     = 7 * 24 * time.Hour
	ParkRecheck = 15 * time.Minute
)

// applyOptions: one short transaction per attempt, given up on after 15 s
// (so the attempt of a worker that died is retried elsewhere soon);
// database outages are retried with backoff for up to an hour, business
// rejections never. The ThreeWayMatch workflow runs its activities with
// these options.
var applyOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    15 * time.Second,
	ScheduleToCloseTimeout: time.Hour,
	RetryPolicy:            applyRetry,
}

var applyRetry = &temporal.RetryPolicy{
	InitialInterval:    500 * time.Millisecond,
	BackoffCoefficient: 2,
	MaximumInterval:    time.Minute,
}

// localOptions: the inbound workflow runs its steps (apply the action,
// record the outcome, the first three-way match) as local activities, with
// the same timeouts and retries: each is a short transaction on the
// worker's own database, and running them inside the workflow task answers
// the sender in one round trip to Temporal instead of three. Every step is
// idempotent (effects are keyed by the source receipt), so a step repeated
// after a worker crash changes nothing twice.
var localOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    15 * time.Second,
	ScheduleToCloseTimeout: time.Hour,
	RetryPolicy:            applyRetry,
}

// InboundAction carries out one inbound post, durably. It answers through
// AnswerUpdate as soon as its first attempt has a result: applied,
// unchanged, refused (the error's kind), or parked when the record it names
// does not exist yet. A parked post keeps trying every 15 minutes, and
// whenever RecordCreatedSignal arrives, for 7 days, then ends unmatched. A
// recorded supplier invoice goes on to its three-way match. Every move is
// recorded on the receipt.
func InboundAction(ctx workflow.Context, in domain.InboundInput) (domain.InboundOutcome, error) {
	w := &inbound{in: in}
	return w.run(ctx)
}

type inbound struct {
	in     domain.InboundInput
	answer *domain.InboundOutcome
}

func (w *inbound) run(ctx workflow.Context) (domain.InboundOutcome, error) {
	if err := workflow.SetUpdateHandler(ctx, AnswerUpdate, func(ctx workflow.Context) (domain.InboundOutcome, error) {
		if err := workflow.Await(ctx, func() bool { return w.answer != nil }); err != nil {
			return domain.InboundOutcome{}, err
		}
		return *w.answer, nil
	}); err != nil {
		return domain.InboundOutcome{}, err
	}
	ctx = workflow.WithLocalActivityOptions(ctx, localOptions)
	signals := workflow.GetSignalChannel(ctx, RecordCreatedSignal)

	out, err := w.apply(ctx)
	if err != nil {
		return w.finish(ctx, out, err)
	}
	if out.Result.Parked() {
		// The receipt says where the post stands before the sender hears.
		if err := w.record(ctx, domain.OutcomeParked, out.Result.WaitingFor, ""); err != nil {
			return out, err
		}
		parkedAnswer := out
		w.answer = &parkedAnswer
		parkFor, recheck := w.parking()
		deadline := workflow.Now(ctx).Add(parkFor)
		for out.Result.Parked() {
			left := deadline.Sub(workflow.Now(ctx))
			if left <= 0 {
				return w.finish(ctx, out, errUnmatched)
			}
			waitForSignal(ctx, signals, min(left, recheck))
			if ctx.Err() != nil {
				return w.finish(ctx, out, temporal.NewCanceledError())
			}
			if out, err = w.apply(ctx); err != nil {
				return w.finish(ctx, out, err)
			}
		}
	}
	if out.Result.InvoiceID != nil {
		if out.Match, err = w.match(ctx, *out.Result.InvoiceID, *out.Result.POID, out.Result.InvoiceRef); err != nil {
			return w.finish(ctx, out, err)
		}
		if out.Match == nil || out.Match.Status == domain.MatchAwaitingReceipt {
			out.Result.Status = 202 // the match goes on in its own workflow
		}
	}
	return w.finish(ctx, out, nil)
}

// parking returns how long a parked post waits and how often it looks
// again: ParkFor and ParkRecheck, unless the input shortens them.
func (w *inbound) parking() (parkFor, recheck time.Duration) {
	if w.in.ParkFor <= 0 {
		return ParkFor, ParkRecheck
	}
	return w.in.ParkFor, min(ParkRecheck, w.in.ParkFor/2)
}

// errUnmatched ends a post parked for too long.
var errUnmatched = errors.New("unmatched")

// boundedMatchStart marks the change that bounded the match's workflow ID
// (domain.MatchWorkflowID) and ended a post whose match could not start in
// error.
const boundedMatchStart = "bounded-match-start"

// unboundedMatchWorkflowID is the match ID runs recorded before
// boundedMatchStart used; only their replay needs it.
func unboundedMatchWorkflowID(poID uuid.UUID, invoiceRef string) string {
	return "match/" + poID.String() + "/" + invoiceRef
}

// errMatchNotStarted ends a supplier invoice post whose three-way match
// could not be started: the receipt is recorded as an error (a replay
// starts the match), rather than the invoice waiting for a match that
// never runs.
var errMatchNotStarted = errors.New("the three-way match of the invoice could not be started; replay the receipt to start it")

// apply runs the action once.
func (w *inbound) apply(ctx workflow.Context) (domain.InboundOutcome, error) {
	var res domain.InboundResult
	err := workflow.ExecuteLocalActivity(ctx, applyInbound, w.in).Get(ctx, &res)
	return domain.InboundOutcome{Result: &res}, err
}

// waitForSignal sleeps for d or until a signal arrives on signals, and then
// drains any other signals that queued up meanwhile.
func waitForSignal(ctx workflow.Context, signals workflow.ReceiveChannel, d time.Duration) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, d), func(workflow.Future) {})
	sel.AddReceive(signals, func(c workflow.ReceiveChannel, more bool) { c.Receive(ctx, nil) })
	sel.Select(ctx)
	for signals.ReceiveAsync(nil) {
	}
}

// match runs the supplier invoice's three-way match once, so that the
// answer can carry its result. When nothing has been received yet, or that
// first attempt failed, the match goes on in a workflow of its own
// (domain.MatchWorkflowID), which outlives this one; the result is then nil
// or awaiting_receipt. If that workflow cannot be started (and is not
// running already), match returns errMatchNotStarted.
func (w *inbound) match(ctx workflow.Context, invoiceID, poID uuid.UUID, invoiceRef string) (*domain.MatchResult, error) {
	in := domain.MatchInput{OrgID: w.in.OrgID, InvoiceID: invoiceID, POID: poID, InvoiceRef: invoiceRef}
	var first domain.MatchResult
	matchErr := workflow.ExecuteLocalActivity(ctx, matchSupplierInvoice, in).Get(ctx, &first)
	if matchErr == nil && first.Status != domain.MatchAwaitingReceipt {
		return &first, nil
	}
	if matchErr != nil {
		workflow.GetLogger(ctx).Warn("three-way match failed; its own workflow carries on", "error", matchErr)
	}
	// Runs recorded before the bounded match ID started their match under
	// the ID they recorded, and only logged a failed start.
	version := workflow.GetVersion(ctx, boundedMatchStart, workflow.DefaultVersion, 1)
	opts := matchOptions(w.in, in)
	if version == workflow.DefaultVersion {
		opts.WorkflowID = unboundedMatchWorkflowID(poID, invoiceRef)
	}
	cctx := workflow.WithChildOptions(ctx, opts)
	var started workflow.Execution
	err := workflow.ExecuteChildWorkflow(cctx, ThreeWayMatch, in).GetChildWorkflowExecution().Get(ctx, &started)
	var already *temporal.ChildWorkflowExecutionAlreadyStartedError
	if err != nil && !errors.As(err, &already) {
		workflow.GetLogger(ctx).Error("three-way match did not start", "error", err, "invoice_id", invoiceID.String())
		if version != workflow.DefaultVersion {
			return nil, errMatchNotStarted
		}
	}
	if matchErr != nil {
		return nil, nil
	}
	return &first, nil
}

// finish records the post's final outcome, then answers (if it had not yet:
// so a sender that reads its receipt finds it final), and ends the workflow
// once the answer has been collected.
func (w *inbound) finish(ctx workflow.Context, out domain.InboundOutcome, err error) (domain.InboundOutcome, error) {
	outcome, message := domain.OutcomeApplied, ""
	switch {
	case temporal.IsCanceledError(err):
		outcome, message = domain.OutcomeCancelled, "cancelled while waiting for "+out.Result.WaitingFor
		out.Code, out.Message = domain.EUNPROCESSABLE, message
		// The workflow is closing: record on a context that is not cancelled.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	case errors.Is(err, errUnmatched):
		parkFor, _ := w.parking()
		outcome, message = domain.OutcomeUnmatched, "no matching record within "+parkFor.String()
		out.Code, out.Message = domain.EUNPROCESSABLE, message
	case err != nil:
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.NonRetryable() {
			out.Code, out.Message = domain.Code(appErr.Type()), appErr.Message()
			outcome, message = domain.OutcomeFailed, appErr.Message()
		} else {
			// A fault on the service side: the receipt, the answer and the
			// inbound.receipt.failed event say so in general terms; the
			// detail goes to the worker's log with the receipt id.
			workflow.GetLogger(ctx).Error("inbound post failed", "receipt_id", w.in.ReceiptID.String(), "error", err)
			out.Code, out.Message = domain.EINTERNAL, "Internal server error"
			outcome, message = domain.OutcomeError, "Internal server error"
			if errors.Is(err, errMatchNotStarted) { // fixed text, and what support should do
				message = err.Error()
			}
		}
		out.Result = nil
	default:
		outcome = out.Result.Outcome
	}
	recordErr := w.record(ctx, outcome, "", message)
	if w.answer == nil {
		w.answer = &out
	}
	// Let a pending answer update finish before the workflow closes.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	return out, recordErr
}

func (w *inbound) record(ctx workflow.Context, outcome domain.Outcome, waitingFor, message string) error {
	return workflow.ExecuteLocalActivity(ctx, recordOutcome, domain.RecordOutcomeInput{
		OrgID: w.in.OrgID, ReceiptID: w.in.ReceiptID, Outcome: outcome, WaitingFor: waitingFor, Error: message,
	}).Get(ctx, nil)
}
