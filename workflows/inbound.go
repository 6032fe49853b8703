package workflows

import (
	"errors"
	"fmt"
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

// outcomeInUI marks the change that sets the CommerceOutcome search
// attribute and the run's details each time the outcome is recorded.
const outcomeInUI = "outcome-in-ui"

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
// whenever RecordCreatedSignal says a record it waits for was created, for
// 7 days, then ends unmatched; a parked run whose history grows long
// continues as new (see park). A recorded supplier invoice goes on to its
// three-way match. Every move is recorded on the receipt.
func InboundAction(ctx workflow.Context, in domain.InboundInput) (domain.InboundOutcome, error) {
	w := &inbound{in: in}
	return w.run(ctx)
}

type inbound struct {
	in     domain.InboundInput
	answer *domain.InboundOutcome
	// c says which changes are on in this run (oneStepPosts).
	c changes
	// recorded is set by a step that recorded the outcome that ends the
	// post (apply): finish then records nothing more.
	recorded bool
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
	w.c = changes{ctx: ctx, all: workflow.GetVersion(ctx, oneStepPosts, workflow.DefaultVersion, 1) != workflow.DefaultVersion}
	ctx = workflow.WithLocalActivityOptions(ctx, localOptions)
	signals := workflow.GetSignalChannel(ctx, RecordCreatedSignal)
	if w.in.Parked != nil {
		return w.resume(ctx, signals)
	}

	out, err := w.apply(ctx)
	if err != nil {
		return w.finish(ctx, out, err)
	}
	if out.Result.Parked() {
		// The receipt says where the post stands, and keeps the answer,
		// before the sender hears.
		parkedAnswer := out
		if err := w.record(ctx, domain.OutcomeParked, out.Result.WaitingFor, "", &parkedAnswer, out.Result.WaitingKeys...); err != nil {
			return out, err
		}
		w.answer = &parkedAnswer
		parkFor, recheck := w.parking()
		deadline := workflow.Now(ctx).Add(parkFor)
		if w.c.on(boundedParkWait) {
			return w.parkThenDone(ctx, signals, out, deadline)
		}
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
	return w.done(ctx, out)
}

// done carries on with a post that applied: a supplier invoice goes on to
// its three-way match; then the post finishes.
func (w *inbound) done(ctx workflow.Context, out domain.InboundOutcome) (domain.InboundOutcome, error) {
	var err error
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

// boundedParkWait marks the change that bounded a parked post's history
// (park): a wake whose records the post does not wait for runs nothing,
// wakes no longer restart the recheck timer, and a run whose history grew
// long continues as new.
const boundedParkWait = "bounded-park-wait"

// wakesPerRun is how many times a waiting run (a parked post, a match
// waiting for goods) wakes, on a signal or its timer, before it continues
// as new; it continues sooner when its history reaches eventsPerRun events
// or the server suggests it. A wake adds at most 6 events to a parked
// post's history and 11 to a match's, so a run stays well under 2,000
// events, far from the server's limit of 51,200.
const (
	wakesPerRun  = 100
	eventsPerRun = 1000
)

// historyLong reports whether a waiting run that woke wakes times should
// continue as new.
func historyLong(ctx workflow.Context, wakes int) bool {
	info := workflow.GetInfo(ctx)
	return wakes >= wakesPerRun || info.GetCurrentHistoryLength() >= eventsPerRun || info.GetContinueAsNewSuggested()
}

// drainWakes takes every signal waiting on signals without blocking, and
// reports whether any concerns a post waiting for keys.
func drainWakes(signals workflow.ReceiveChannel, keys []string) bool {
	concerns := false
	for {
		var wake domain.RecordsCreated
		if !signals.ReceiveAsync(&wake) {
			return concerns
		}
		concerns = concerns || wake.Concerns(keys)
	}
}

// parkThenDone waits for the record of a parked post (park) and carries on
// once it is there.
func (w *inbound) parkThenDone(ctx workflow.Context, signals workflow.ReceiveChannel, out domain.InboundOutcome, deadline time.Time) (domain.InboundOutcome, error) {
	out, err := w.park(ctx, signals, out, deadline)
	var next *workflow.ContinueAsNewError
	switch {
	case errors.As(err, &next):
		return out, err
	case err != nil:
		return w.finish(ctx, out, err)
	}
	return w.done(ctx, out)
}

// resume is the start of a run that a parked post continued as new: it
// answers with the parked answer the first run gave, looks again at once
// (a wake may have come as the last run ended), and waits on until the
// deadline the first run set.
func (w *inbound) resume(ctx workflow.Context, signals workflow.ReceiveChannel) (domain.InboundOutcome, error) {
	state := *w.in.Parked
	w.answer = &state.Answer
	out, err := w.apply(ctx)
	if err != nil {
		return w.finish(ctx, out, err)
	}
	if !out.Result.Parked() {
		return w.done(ctx, out)
	}
	return w.parkThenDone(ctx, signals, out, state.Deadline)
}

// park waits until the post's record exists (the post applied: nil
// error), the deadline passes (errUnmatched) or the workflow is cancelled.
// It looks again when its recheck timer fires and when a
// RecordCreatedSignal names a key the post waits for (out's WaitingKeys);
// other wakes run nothing, and wakes that queued up together make one
// look. After wakesPerRun wakes (or a long history) it returns a
// continue-as-new error: the new run carries the answer and the deadline,
// and looks again first, so no wake is lost.
func (w *inbound) park(ctx workflow.Context, signals workflow.ReceiveChannel, out domain.InboundOutcome, deadline time.Time) (domain.InboundOutcome, error) {
	_, recheck := w.parking()
	keys := out.Result.WaitingKeys
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	var timer workflow.Future
	for wakes := 0; ; wakes++ {
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			return out, errUnmatched
		}
		if historyLong(ctx, wakes) {
			return out, w.continueParked(ctx, signals, deadline)
		}
		if timer == nil {
			timer = workflow.NewTimer(timerCtx, min(left, recheck))
		}
		look := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { timer, look = nil, true })
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
			var wake domain.RecordsCreated
			c.Receive(ctx, &wake)
			look = look || wake.Concerns(keys)
		})
		sel.Select(ctx)
		look = drainWakes(signals, keys) || look
		if ctx.Err() != nil {
			return out, temporal.NewCanceledError()
		}
		if !look {
			continue
		}
		var err error
		if out, err = w.apply(ctx); err != nil || !out.Result.Parked() {
			return out, err
		}
	}
}

// continueParked ends a parked post's run with a continue-as-new error
// carrying the post, its answer and its deadline. It lets a running answer
// update finish first, then takes the signals that are waiting: the new
// run looks again before it waits, which covers any of them.
func (w *inbound) continueParked(ctx workflow.Context, signals workflow.ReceiveChannel, deadline time.Time) error {
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	drainWakes(signals, nil)
	next := w.in
	next.Parked = &domain.ParkedState{Answer: *w.answer, Deadline: deadline}
	return workflow.NewContinueAsNewError(ctx, InboundAction, next)
}

// boundedMatchStart marks the change that bounded the match's workflow ID
// (domain.MatchWorkflowID) and ended a post whose match could not start in
// error.
const boundedMatchStart = "bounded-match-start"

// unboundedMatchWorkflowID is the match ID runs recorded before
// boundedMatchStart used; only their replay needs it.
func unboundedMatchWorkflowID(poID uuid.UUID, invoiceRef string) string {
	return domain.MatchWorkflowPrefix + poID.String() + "/" + invoiceRef
}

// errMatchNotStarted ends a supplier invoice post whose three-way match
// could not be started: the receipt is recorded as an error (a replay
// starts the match), rather than the invoice waiting for a match that
// never runs.
var errMatchNotStarted = errors.New("the three-way match of the invoice could not be started; replay the receipt to start it")

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
	bounded := w.c.on(boundedMatchStart)
	opts := matchOptions(w.in, in)
	if !bounded {
		opts.WorkflowID = unboundedMatchWorkflowID(poID, invoiceRef)
	}
	cctx := workflow.WithChildOptions(ctx, opts)
	var started workflow.Execution
	err := workflow.ExecuteChildWorkflow(cctx, ThreeWayMatch, in).GetChildWorkflowExecution().Get(ctx, &started)
	var already *temporal.ChildWorkflowExecutionAlreadyStartedError
	if err != nil && !errors.As(err, &already) {
		workflow.GetLogger(ctx).Error("three-way match did not start", "error", err, "invoice_id", invoiceID.String())
		if bounded {
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
	// The first answer is kept with the outcome; a later one only moves it.
	var first *domain.InboundOutcome
	if w.answer == nil {
		first = &out
	}
	var recordErr error
	if w.recorded { // the step that ended the post recorded it
		w.recorded = false
		w.show(ctx, outcome, "", message, first)
	} else {
		recordErr = w.record(ctx, outcome, "", message, first)
	}
	if w.answer == nil {
		w.answer = &out
	}
	// Let a pending answer update finish before the workflow closes.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	if recordErr != nil {
		return out, recordErr
	}
	return out, w.closeAs(ctx, outcome, message, out)
}

// failedRuns marks the change that closes the run of a post that did not
// apply as the Temporal UI shows a failure: failed, error and unmatched
// end Failed, with a non-retryable application error naming the outcome
// (closeAs); a post cancelled on purpose ends Canceled. Runs recorded
// before it completed whatever their outcome.
const failedRuns = "failed-runs"

// Application error types of the runs that end Failed, one per outcome.
const (
	ErrTypeInboundFailed    = "InboundFailed"
	ErrTypeInboundError     = "InboundError"
	ErrTypeInboundUnmatched = "InboundUnmatched"
)

// record stores where the post stands; answer, given with the first
// answer only, is what the receipt keeps as its sender's answer.
func (w *inbound) record(ctx workflow.Context, outcome domain.Outcome, waitingFor, message string, answer *domain.InboundOutcome, keys ...string) error {
	err := workflow.ExecuteLocalActivity(ctx, recordOutcome, domain.RecordOutcomeInput{
		OrgID: w.in.OrgID, ReceiptID: w.in.ReceiptID, Outcome: outcome, WaitingFor: waitingFor, Error: message, WaitingKeys: keys,
		Answer: answer, Action: w.in.Action,
	}).Get(ctx, nil)
	if err == nil {
		w.show(ctx, outcome, waitingFor, message, answer)
	}
	return err
}

// show puts where the post stands on its run, for the Temporal UI: the
// CommerceOutcome search attribute, and the run's details, a line such as
// "erp_order_status SO-2026-0204: failed 422 order SO-2026-0204 not found".
// Runs recorded before outcomeInUI set neither.
func (w *inbound) show(ctx workflow.Context, outcome domain.Outcome, waitingFor, message string, answer *domain.InboundOutcome) {
	if !w.c.on(outcomeInUI) {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, OutcomeAttr.ValueSet(string(outcome))); err != nil {
		workflow.GetLogger(ctx).Warn("could not set the outcome search attribute", "error", err)
	}
	workflow.SetCurrentDetails(ctx, w.line(outcome, waitingFor, message, answer))
}

// line says where the post stands in one line: its summary, the outcome,
// the answer's status, and the error or what it waits for.
func (w *inbound) line(outcome domain.Outcome, waitingFor, message string, answer *domain.InboundOutcome) string {
	line := w.in.Summary() + ": " + string(outcome)
	if answer != nil && answer.Status() != 0 {
		line += fmt.Sprintf(" %d", answer.Status())
	}
	switch {
	case message != "":
		line += " " + message
	case waitingFor != "":
		line += ", waiting for " + waitingFor
	}
	return line
}
