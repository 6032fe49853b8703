package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// ResendSignal asks a delivery to make an attempt now.
const ResendSignal = "resend"

// deliverOptions: an attempt is a 10-second request and two short writes.
// The activity fails only for the service's own faults (the database),
// which are retried with backoff for up to a day, or for good (a secret that
// cannot be opened); a receiver's failure is a result, which the workflow
// retries at the nightly run.
var deliverOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    30 * time.Second,
	ScheduleToCloseTimeout: 24 * time.Hour,
	RetryPolicy:            outageRetry,
}

// localFirstAttempt marks the change that made a delivery's first attempt
// a local activity, run inside the workflow's first workflow task (which
// the relay's eager start hands straight to the worker), instead of an
// activity task dispatched through the server's matching service. A first
// attempt that fails for the service's own fault is made again as an
// activity, with deliverOptions' retries.
const localFirstAttempt = "local-first-attempt"

// resendWhileClosing marks the change that makes a resend signalled while
// the run's last attempt ran one attempt more: before it, the run closed
// and the signal was lost (support had resent a delivery whose status read
// succeeded or exhausted a moment before its workflow closed).
const resendWhileClosing = "resend-while-closing"

// deliveryStatusInUI marks the change that sets the CommerceDeliveryStatus
// search attribute and the run's details after each attempt.
const deliveryStatusInUI = "delivery-status-in-ui"

// admittedRetries marks the change that asks the delivery's subscription
// (AdmitRetry) before each automatic retry, so that a nightly retry keeps
// to the subscription's rate and cap on attempts at once, and waits, with
// no attempt spent, while the subscription is failing
// (docs/webhooks.md#delivery-controls). A resend asks too (admittedResends).
const admittedRetries = "admitted-retries"

// admittedResends marks the change that asks the subscription before a
// resend's attempt, as admittedRetries does before a retry's: a resend (and
// so a recover, which resends) keeps to the rate and the cap on attempts at
// once, though not to a failing spell.
const admittedResends = "admitted-resends"

// localRetries marks the change that makes a retry's or a resend's
// admission a local activity, run inside the workflow task that the timer
// or the signal began, which then schedules the attempt: a retry was two
// activity tasks dispatched through the server's matching service, and a
// workflow task after each. The attempt stays an activity: a local one
// that ends the run completes it in the same workflow task, and a resend
// signalled meanwhile makes the server refuse that task, so the attempt
// would be made again. A run that records localRetries records no other
// marker: every change above is on in it, without asking (each of their
// GetVersion calls was a marker and a TemporalChangeVersion upsert in
// every run). Runs recorded before it ask for each change as they did.
const localRetries = "local-retries"

// admitOptions: an admission is one short transaction; a fault of the
// service is retried as deliverOptions' are, for up to a day.
var admitOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    30 * time.Second,
	ScheduleToCloseTimeout: 24 * time.Hour,
	RetryPolicy:            outageRetry,
}

// changes answers whether a change is on in this run: every change is on in
// a run that recorded its workflow's latest marker (localRetries for a
// delivery, oneStepPosts for a post); otherwise the change's own marker
// says, as in the runs recorded before it.
type changes struct {
	ctx workflow.Context
	all bool
}

func (c changes) on(changeID string) bool {
	return c.all || workflow.GetVersion(c.ctx, changeID, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// firstAttemptOptions: one try, with deliverOptions' 30 s bound; the
// retries of a fault are the activity's.
var firstAttemptOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
}

// WebhookDelivery sends one event to one subscription as its input's
// domain.DeliveryPolicy says: attempt 1 at once; after a failure, the next
// attempt at the next nightly run (which the attempt works out from the
// policy, handed to it, and returns), at most the policy's attempts in all,
// then the delivery is exhausted. ResendSignal makes an attempt at once (it
// counts). Every attempt is recorded on the delivery.
func WebhookDelivery(ctx workflow.Context, in domain.WebhookInput) (domain.WebhookOutcome, error) {
	ctx = workflow.WithActivityOptions(ctx, deliverOptions)
	resend := workflow.GetSignalChannel(ctx, ResendSignal)
	// A resend that started this run is the run itself.
	for resend.ReceiveAsync(nil) {
	}
	attempts, manual := in.Attempts, in.Manual
	c := changes{ctx: ctx, all: workflow.GetVersion(ctx, localRetries, workflow.DefaultVersion, 1) != workflow.DefaultVersion}
	// Runs recorded before localFirstAttempt made every attempt an activity.
	local := c.on(localFirstAttempt)
	for {
		// A resend keeps to the subscription's rate and cap too (but not to
		// a failing spell: support asked for it).
		if manual && c.on(admittedResends) {
			waitForAdmission(ctx, in, resend, true, c.all)
		}
		attempts++
		var res domain.DeliverResult
		var err error
		if local {
			res, err = deliverFirst(ctx, in, attempts, manual, attempts >= in.AttemptsAllowed())
			local = false
		} else {
			res, err = deliver(ctx, in, attempts, manual, attempts >= in.AttemptsAllowed())
		}
		if err != nil {
			return domain.WebhookOutcome{Attempts: attempts - 1}, err
		}
		showDelivery(c, res, attempts)
		if res.RetryAt == nil {
			// A resend support asked for while the attempt ran (the delivery
			// read as over, or the signal came as the run was closing) is one
			// attempt more, not a signal lost with the run.
			if c.on(resendWhileClosing) && resend.ReceiveAsync(nil) {
				for resend.ReceiveAsync(nil) {
				}
				manual = true
				continue
			}
			return domain.WebhookOutcome{Status: statusAfter(res), Attempts: attempts}, nil
		}
		// Until the nightly run the attempt named, or a resend.
		manual = waitUntil(ctx, *res.RetryAt, resend)
		if !manual && c.on(admittedRetries) {
			manual = waitForAdmission(ctx, in, resend, false, c.all)
		}
		if ctx.Err() != nil {
			return domain.WebhookOutcome{Status: domain.WebhookFailed, Attempts: attempts}, temporal.NewCanceledError()
		}
	}
}

// showDelivery puts where the delivery stands after an attempt on its run,
// for the Temporal UI: CommerceDeliveryStatus delivered, failed (another
// attempt follows) or exhausted, and details such as "failed 500 after 2
// attempts, next 2026-11-27T02:00:00Z". Runs recorded before
// deliveryStatusInUI set neither; nor does an attempt that sent nothing
// (a subscription switched off).
func showDelivery(c changes, res domain.DeliverResult, attempts int) {
	if res.Skipped || !c.on(deliveryStatusInUI) {
		return
	}
	ctx := c.ctx
	status := "failed"
	switch {
	case res.Succeeded:
		status = "delivered"
	case res.RetryAt == nil:
		status = "exhausted"
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, DeliveryStatusAttr.ValueSet(status)); err != nil {
		workflow.GetLogger(ctx).Warn("could not set the delivery status search attribute", "error", err)
	}
	line := status
	if res.StatusCode != 0 {
		line += fmt.Sprintf(" %d", res.StatusCode)
	} else if res.Error != "" {
		line += " (" + res.Error + ")"
	}
	line += fmt.Sprintf(" after %d attempt(s)", attempts)
	if res.RetryAt != nil {
		line += ", next " + res.RetryAt.UTC().Format(time.RFC3339)
	}
	workflow.SetCurrentDetails(ctx, line)
}

func deliver(ctx workflow.Context, in domain.WebhookInput, attempt int, manual, last bool) (domain.DeliverResult, error) {
	var res domain.DeliverResult
	err := workflow.ExecuteActivity(ctx, deliverWebhook, domain.DeliverInput{
		OrgID: in.OrgID, DeliveryID: in.DeliveryID, Attempt: attempt, Manual: manual, Last: last, Policy: in.Policy,
	}).Get(ctx, &res)
	return res, err
}

// deliverFirst makes an attempt as a local activity; when that fails for
// the service's own fault, it makes the same attempt again as an activity
// (deliver), whose retries last up to a day. The receiver may then see the
// attempt twice, with the same delivery id and attempt number, as after a
// worker crash. A failure for good (a secret that cannot be opened) ends
// the delivery as deliver's would.
func deliverFirst(ctx workflow.Context, in domain.WebhookInput, attempt int, manual, last bool) (domain.DeliverResult, error) {
	var res domain.DeliverResult
	lctx := workflow.WithLocalActivityOptions(ctx, firstAttemptOptions)
	err := workflow.ExecuteLocalActivity(lctx, deliverWebhook, domain.DeliverInput{
		OrgID: in.OrgID, DeliveryID: in.DeliveryID, Attempt: attempt, Manual: manual, Last: last, Policy: in.Policy,
	}).Get(ctx, &res)
	var appErr *temporal.ApplicationError
	if err == nil || (errors.As(err, &appErr) && appErr.NonRetryable()) || ctx.Err() != nil {
		return res, err
	}
	workflow.GetLogger(ctx).Warn("first webhook attempt failed; making it again as an activity", "error", err)
	return deliver(ctx, in, attempt, manual, last)
}

// waitForAdmission asks the subscription whether an attempt may go (a
// retry, or with manual a resend), waiting as it answers (until its start
// slot, or before asking again) until it does. A retry's wait ends at a
// resend, which it reports; during a resend's, further resends are the
// same one. A fault of the service that outlasts the activity's retries
// lets the attempt go. With local the admission is a local activity
// (localRetries).
func waitForAdmission(ctx workflow.Context, in domain.WebhookInput, resend workflow.ReceiveChannel, manual, local bool) bool {
	wake := resend
	if manual {
		// Nothing is sent on it: only the timer ends a resend's wait.
		wake = workflow.NewChannel(ctx)
		defer func() {
			for resend.ReceiveAsync(nil) {
			}
		}()
	}
	for tries := 0; ; tries++ {
		var a domain.Admission
		ask := domain.AdmitInput{OrgID: in.OrgID, DeliveryID: in.DeliveryID, Tries: tries, Manual: manual}
		var err error
		if local {
			err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, admitOptions), admitRetry, ask).Get(ctx, &a)
		} else {
			err = workflow.ExecuteActivity(ctx, admitRetry, ask).Get(ctx, &a)
		}
		if err != nil || ctx.Err() != nil {
			return false
		}
		at := workflow.Now(ctx).Add(a.Wait)
		if a.Go {
			at = a.At
		}
		if at.After(workflow.Now(ctx)) && waitUntil(ctx, at, wake) {
			return true
		}
		if a.Go {
			return false
		}
	}
}

func statusAfter(res domain.DeliverResult) domain.WebhookStatus {
	return domain.WebhookStatusAfter(res.Succeeded, res.RetryAt == nil)
}

// waitUntil sleeps until t, or until a resend arrives; it reports whether a
// resend woke it.
func waitUntil(ctx workflow.Context, t time.Time, resend workflow.ReceiveChannel) bool {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	woken := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, t.Sub(workflow.Now(ctx))), func(workflow.Future) {})
	sel.AddReceive(resend, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		woken = true
	})
	sel.Select(ctx)
	for resend.ReceiveAsync(nil) {
	}
	return woken
}
