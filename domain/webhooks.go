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
	WebhookHeld      WebhookStatus = "held"      // waiting, with no attempt spent, while its subscription is failing
	WebhookSkipped   WebhookStatus = "skipped"   // support let its entity's later deliveries go before it, or its transformation answered null
)

// The headers of a webhook delivery besides Content-Type and the signature
// (docs/webhooks.md): the sender sets them and the console shows them.
const (
	HeaderEventID    = "X-Service-Event-Id"
	HeaderEventType  = "X-Service-Event-Type"
	HeaderDeliveryID = "X-Service-Delivery-Id"
	HeaderAttempt    = "X-Service-Attempt"
)

// SecretUnopenable is the type of the non-retryable error that ends a
// delivery whose subscription secret cannot be opened (sealed under another
// key, or damaged): no retry can change it.
const SecretUnopenable = "ESECRET"

// SecretRotationOverlap is how long a webhook secret replaced by a rotation
// keeps signing deliveries beside the new one, so that a receiver can
// switch secrets without refusing one.
const SecretRotationOverlap = 24 * time.Hour

// PreviousSecretSigns reports whether a secret a rotation replaced, which
// signs until expiresAt (nil: none was replaced), still signs at now.
func PreviousSecretSigns(expiresAt *time.Time, now time.Time) bool {
	return expiresAt != nil && now.Before(*expiresAt)
}

// WebhookStatuses lists the delivery statuses.
var WebhookStatuses = []WebhookStatus{WebhookPending, WebhookSucceeded, WebhookFailed, WebhookExhausted, WebhookHeld, WebhookSkipped}

// MaxWebhookAttempts is how many times a delivery is tried on its own;
// support may resend beyond it.
const MaxWebhookAttempts = 5

// NightlySpread is the window after the nightly run's time over which the
// retries of failed deliveries are spread, so that they do not all fall on
// the workers and the receivers in the same second.
const NightlySpread = time.Hour

// DeliveryPolicy is how a webhook delivery is tried: its first attempt at
// once, a failed one again at the next nightly run (at NightlyAt, UTC, plus
// the delivery's own place in the Spread after it), Attempts in all, then
// exhausted. It is the one statement of that schedule: the service builds it
// from its configuration (COMMERCE_NIGHTLY_AT), hands it to each delivery's
// workflow in its input, and the workflow hands it to each attempt.
type DeliveryPolicy struct {
	Attempts  int           `json:"attempts"`
	NightlyAt time.Duration `json:"nightly_at"`
	Spread    time.Duration `json:"spread"`
}

// NewDeliveryPolicy is the service's policy with its nightly run at
// nightlyAt (from midnight UTC): MaxWebhookAttempts attempts, retries spread
// over NightlySpread.
func NewDeliveryPolicy(nightlyAt time.Duration) DeliveryPolicy {
	return DeliveryPolicy{Attempts: MaxWebhookAttempts, NightlyAt: nightlyAt, Spread: NightlySpread}
}

// Last reports whether attempt is the delivery's last one of its own.
func (p DeliveryPolicy) Last(attempt int) bool { return attempt >= p.Attempts }

// RetryAt is when a failed delivery is tried again: the first time after now
// that is at the nightly run's time plus the delivery's place in the spread.
func (p DeliveryPolicy) RetryAt(now time.Time, deliveryID uuid.UUID) time.Time {
	return NextNightly(now, (p.NightlyAt+offsetIn(p.Spread, deliveryID))%(24*time.Hour))
}

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

// NightlyOffset is a delivery's own place in the nightly window, in
// [0, NightlySpread), whole seconds: a hash of its id, so the same
// delivery keeps it every night and on every worker.
func NightlyOffset(deliveryID uuid.UUID) time.Duration { return offsetIn(NightlySpread, deliveryID) }

func offsetIn(spread time.Duration, deliveryID uuid.UUID) time.Duration {
	if spread < time.Second {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(deliveryID[:]) // a hash.Hash never fails to write
	return time.Duration(h.Sum64()%uint64(spread/time.Second)) * time.Second
}

// NextNightlyFor is when a failed delivery is retried under the service's
// policy with its nightly run at at (NewDeliveryPolicy(at).RetryAt).
func NextNightlyFor(now time.Time, at time.Duration, deliveryID uuid.UUID) time.Time {
	return NewDeliveryPolicy(at).RetryAt(now, deliveryID)
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
