package domain

import (
	"hash/fnv"
	"time"

	"github.com/google/uuid"
)

// WebhookStatus is where a webhook delivery stands.
type WebhookStatus string

// Webhook delivery statuses.
const (
	WebhookPending   WebhookStatus = "pending"   // not attempted yet
	WebhookSucceeded WebhookStatus = "succeeded" // a 2xx answer within 10 s
	WebhookFailed    WebhookStatus = "failed"    // waiting for the nightly retry
	WebhookExhausted WebhookStatus = "exhausted" // 5 attempts failed, the subscription was disabled, or its secret cannot be opened
)

// SecretUnopenable is the type of the non-retryable error that ends a
// delivery whose subscription secret cannot be opened (sealed under another
// key, or damaged): no retry can change it.
const SecretUnopenable = "ESECRET"

// WebhookStatuses lists the delivery statuses.
var WebhookStatuses = []WebhookStatus{WebhookPending, WebhookSucceeded, WebhookFailed, WebhookExhausted}

// MaxWebhookAttempts is how many times a delivery is tried on its own;
// support may resend beyond it.
const MaxWebhookAttempts = 5

// WebhookStatusAfter is where a delivery stands after an attempt:
// succeeded on a 2xx, exhausted when the attempt was its last, else failed
// (waiting for the nightly retry).
func WebhookStatusAfter(succeeded, last bool) WebhookStatus {
	switch {
	case succeeded:
		return WebhookSucceeded
	case last:
		return WebhookExhausted
	}
	return WebhookFailed
}

// NightlySpread is the window after the nightly run's time over which the
// retries of failed deliveries are spread, so that they do not all fall on
// the workers and the receivers in the same second.
const NightlySpread = time.Hour

// NightlyOffset is a delivery's own place in the nightly window, in
// [0, NightlySpread), whole seconds: a hash of its id, so the same
// delivery keeps it every night and on every worker.
func NightlyOffset(deliveryID uuid.UUID) time.Duration {
	h := fnv.New64a()
	h.Write(deliveryID[:])
	return time.Duration(h.Sum64()%uint64(NightlySpread/time.Second)) * time.Second
}

// NextNightlyFor is when a failed delivery is retried: the first time after
// now that is at the nightly run's time plus the delivery's NightlyOffset.
func NextNightlyFor(now time.Time, at time.Duration, deliveryID uuid.UUID) time.Time {
	return NextNightly(now, (at+NightlyOffset(deliveryID))%(24*time.Hour))
}

// NextNightly is the first time after now that is at (a time of day,
// from midnight) in UTC.
func NextNightly(now time.Time, at time.Duration) time.Time {
	now = now.UTC()
	t := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).Add(at)
	for !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}
