package workflows

import (
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
)

// ResendSignal asks a delivery to make an attempt now.
const ResendSignal = "resend"

// WebhookWorkflowID is the ID of the workflow of a delivery.
func WebhookWorkflowID(deliveryID uuid.UUID) string { return "webhook/" + deliveryID.String() }

// WebhookInput names a delivery and says how far it has come.
type WebhookInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
	// Attempts already made (0 for a new delivery).
	Attempts int `json:"attempts"`
	// Manual: the first attempt of this run is a resend support asked for
	// (of a delivery that had succeeded or was exhausted). A delivery with
	// attempts left goes on to the nightly retries if it fails; one with
	// none left ends after it.
	Manual bool `json:"manual,omitempty"`
}

// WebhookOutcome is where a delivery's workflow left it.
type WebhookOutcome struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// deliverOptions: an attempt is a 10-second request and two short writes.
// The activity fails only for the service's own faults (the database),
// which are retried with backoff for as long as they last; a receiver's
// failure is a result, which the workflow retries at the nightly run.
var deliverOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    5 * time.Minute,
	},
}

// WebhookDelivery sends one event to one subscription: attempt 1 at once;
// after a failure, the next attempt at the next nightly run
// (COMMERCE_NIGHTLY_AT, UTC, which the attempt's activity reads from the
// worker's configuration and returns), at most 5 attempts in all, then the
// delivery is exhausted. ResendSignal makes an attempt at once (it counts).
// Every attempt is recorded on the delivery.
func WebhookDelivery(ctx workflow.Context, in WebhookInput) (WebhookOutcome, error) {
	ctx = workflow.WithActivityOptions(ctx, deliverOptions)
	resend := workflow.GetSignalChannel(ctx, ResendSignal)
	// A resend that started this run is the run itself.
	for resend.ReceiveAsync(nil) {
	}
	attempts, manual := in.Attempts, in.Manual
	for {
		attempts++
		res, err := deliver(ctx, in, attempts, manual, attempts >= db.MaxWebhookAttempts)
		if err != nil {
			return WebhookOutcome{Attempts: attempts - 1}, err
		}
		if res.RetryAt == nil {
			return WebhookOutcome{Status: statusAfter(res), Attempts: attempts}, nil
		}
		// Until the nightly run the attempt named, or a resend.
		manual = waitUntil(ctx, *res.RetryAt, resend)
		if ctx.Err() != nil {
			return WebhookOutcome{Status: db.WebhookFailed, Attempts: attempts}, temporal.NewCanceledError()
		}
	}
}

func deliver(ctx workflow.Context, in WebhookInput, attempt int, manual, last bool) (activities.DeliverResult, error) {
	var a *activities.Activities
	var res activities.DeliverResult
	err := workflow.ExecuteActivity(ctx, a.DeliverWebhook, activities.DeliverInput{
		OrgID: in.OrgID, DeliveryID: in.DeliveryID, Attempt: attempt, Manual: manual, Last: last,
	}).Get(ctx, &res)
	return res, err
}

func statusAfter(res activities.DeliverResult) string {
	switch {
	case res.Succeeded:
		return db.WebhookSucceeded
	case res.RetryAt != nil:
		return db.WebhookFailed
	}
	return db.WebhookExhausted
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
