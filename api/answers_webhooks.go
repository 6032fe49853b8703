package api

import (
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// The answers of the webhook routes and the events feed. db returns the
// records; these are their shape on the wire, with the descriptions the
// OpenAPI document gives them (docs/design.md#the-management-api).

// Subscription is a webhook subscription (never with its secret).
type Subscription struct {
	ID         uuid.UUID        `json:"id"`
	OrgID      uuid.UUID        `json:"org_id"`
	URL        string           `json:"url"`
	EventTypes []string         `json:"events"`
	Active     bool             `json:"active"`
	CreatedAt  domain.Timestamp `json:"created_at"`
	SubscriptionSettings
	State   string          `json:"state" enum:"healthy,failing" doc:"failing after 5 failed attempts in a row: its deliveries are held, spending no attempts, while a probe tries the oldest now and then; healthy again at the probe's first success."`
	Backlog DeliveryBacklog `json:"backlog"`
	SubscriptionHealth
}

// SubscriptionSettings say how a subscription's deliveries go to its
// receiver (docs/webhooks.md#delivery-controls).
type SubscriptionSettings struct {
	RateLimitPerSecond *int   `json:"rate_limit_per_second" minimum:"1" maximum:"1000" doc:"At most this many deliveries start in any one second, across all workers (first attempts, held deliveries released, probes, nightly retries, resends and recovers alike); null for no limit."`
	MaxInFlight        int    `json:"max_in_flight" minimum:"1" maximum:"100" doc:"At most this many attempts run at once."`
	Ordering           string `json:"ordering" enum:"none,per_entity" doc:"per_entity: the deliveries about one entity (an order, a delivery ...) are attempted one at a time, in event order; a failed one holds back only its own entity's later ones. none: no order."`
}

// DeliveryBacklog is a subscription's deliveries not delivered yet, by
// status.
type DeliveryBacklog struct {
	Pending int `json:"pending" doc:"Not attempted yet (waiting for their turn, their rate or their entity)."`
	Failed  int `json:"failed" doc:"Failed, waiting for their next retry."`
	Held    int `json:"held" doc:"Held while the subscription is failing, with no attempt spent."`
}

// SubscriptionHealth is how a subscription's receiver is doing
// (docs/webhooks.md#operational-events).
type SubscriptionHealth struct {
	ConsecutiveFailures int               `json:"consecutive_failures" doc:"Failed attempts in a row, across the subscription's deliveries."`
	FailingSince        *domain.Timestamp `json:"failing_since" doc:"Since when the subscription is failing (5 failed attempts in a row); null when it is not."`
	LastFailureStatus   *int              `json:"last_failure_status" doc:"The HTTP status of the last failed attempt; null when no answer came or none failed."`
	LastFailureError    *string           `json:"last_failure_error" doc:"What went wrong with the last failed attempt."`
}

// NewSubscription is the answer of a subscription record; the CLI prints
// it too, so that its JSON is the API's.
func NewSubscription(s db.Subscription) Subscription {
	return Subscription{ID: s.ID, OrgID: s.OrgID, URL: s.URL, EventTypes: s.EventTypes, Active: s.Active, CreatedAt: s.CreatedAt,
		SubscriptionSettings: SubscriptionSettings{RateLimitPerSecond: s.RateLimitPerSecond, MaxInFlight: s.MaxInFlight, Ordering: s.Ordering},
		State:                s.State,
		Backlog:              DeliveryBacklog{Pending: s.Backlog.Pending, Failed: s.Backlog.Failed, Held: s.Backlog.Held},
		SubscriptionHealth: SubscriptionHealth{ConsecutiveFailures: s.ConsecutiveFailures, FailingSince: s.FailingSince,
			LastFailureStatus: s.LastFailureStatus, LastFailureError: s.LastFailureError}}
}

// WebhookDelivery is a webhook delivery as support sees it.
type WebhookDelivery struct {
	ID             uuid.UUID            `json:"id"`
	OrgID          uuid.UUID            `json:"org_id"`
	EventID        uuid.UUID            `json:"event_id"`
	EventType      string               `json:"event_type"`
	SubscriptionID uuid.UUID            `json:"subscription_id"`
	URL            string               `json:"url"`
	Status         domain.WebhookStatus `json:"status"`
	Attempts       int                  `json:"attempts"`
	LastStatusCode *int                 `json:"last_status_code"`
	LastError      *string              `json:"last_error"`
	NextAttemptAt  *domain.Timestamp    `json:"next_attempt_at"`
	CreatedAt      domain.Timestamp     `json:"created_at"`
	UpdatedAt      domain.Timestamp     `json:"updated_at"`
	// TransformationVersion and BodySent say what the subscription's
	// transformation made for the last attempt; BodySent is read with one
	// delivery, and left out of lists.
	TransformationVersion *int    `json:"transformation_version" doc:"The version of the subscription's transformation the last attempt ran; null when it ran none (the event was sent as it is)."`
	BodySent              *string `json:"body_sent,omitempty" doc:"The body the last attempt sent, made by the transformation (at most 1 MB); absent when the event was sent as it is, nothing was sent, or in a list."`
	// AttemptLog is read with one delivery, and left out of lists.
	AttemptLog []WebhookAttempt    `json:"attempt_log,omitempty"`
	Resolution *DeliveryResolution `json:"resolution" doc:"What delivered this delivery after it had failed or was exhausted: a resend, a recover of its subscription or a bulk resend; null when none did (it has not failed, is not delivered yet, or its own retry delivered it)."`
}

// DeliveryResolution is what delivered a delivery that had failed.
type DeliveryResolution struct {
	By      string           `json:"by" enum:"resend,recover,bulk_resend" doc:"resend: support resent it; recover: a recover of its subscription; bulk_resend: a bulk resend."`
	BatchID *uuid.UUID       `json:"batch_id,omitempty" doc:"The bulk resend that delivered it (GET /api/v1/webhooks/resends/{id}); only for by bulk_resend."`
	At      domain.Timestamp `json:"at" doc:"When it was delivered."`
}

func newDeliveryResolution(r *db.Resolution) *DeliveryResolution {
	if r == nil {
		return nil
	}
	return &DeliveryResolution{By: r.By, BatchID: r.BatchID, At: r.At}
}

// WebhookAttempt is one logged attempt of a delivery.
type WebhookAttempt struct {
	Attempt    int              `json:"attempt"`
	Manual     bool             `json:"manual"`
	StartedAt  domain.Timestamp `json:"started_at"`
	DurationMS int              `json:"duration_ms"`
	StatusCode *int             `json:"status_code"`
	Error      *string          `json:"error"`
	Response   *string          `json:"response_excerpt"`
	// TransformationVersion is the transformation's version that ran.
	TransformationVersion *int `json:"transformation_version" doc:"The version of the subscription's transformation that ran; null for none. An attempt whose transformation failed has no status_code and an error beginning \"transformation failed: \"."`
}

// NewWebhookDelivery is the answer of a delivery record, with its attempt
// log when the record has one; the CLI prints it too.
func NewWebhookDelivery(x db.WebhookDelivery) WebhookDelivery {
	return WebhookDelivery{ID: x.ID, OrgID: x.OrgID, EventID: x.EventID, EventType: x.EventType, SubscriptionID: x.SubscriptionID,
		URL: x.URL, Status: x.Status, Attempts: x.Attempts, LastStatusCode: x.LastStatusCode, LastError: x.LastError,
		NextAttemptAt: x.NextAttemptAt, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt,
		TransformationVersion: x.TransformationVersion, BodySent: bodySent(x.BodySent), Resolution: newDeliveryResolution(x.Resolution),
		AttemptLog: Answers(x.AttemptLog, func(a db.WebhookAttempt) WebhookAttempt {
			return WebhookAttempt{Attempt: a.Attempt, Manual: a.Manual, StartedAt: a.StartedAt, DurationMS: a.DurationMS,
				StatusCode: a.StatusCode, Error: a.Error, Response: a.Response, TransformationVersion: a.TransformationVersion}
		})}
}

// bodySent is a delivery's body sent as text: a transformation's body is
// the JSON or the string its script answered, so it is UTF-8.
func bodySent(b []byte) *string {
	if b == nil {
		return nil
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return &s
}

// Event is an event of the outbox as the feed shows it: the envelope
// deliveries carry, and what it is about.
type Event struct {
	ID        uuid.UUID         `json:"id"`
	Type      string            `json:"type"`
	CreatedAt domain.Timestamp  `json:"created_at"`
	Data      domain.JSONObject `json:"data"`
	Entity    *domain.Entity    `json:"entity" doc:"What the event is about: the record whose events a subscription with per_entity ordering receives in order. Not in the delivered envelope."`
}

func newEvent(e db.Event) Event {
	return Event{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: e.Data, Entity: e.Entity}
}

// Answers converts a list of records to their answers (the REST routes'
// and the CLI's --json alike). A nil list stays nil and an empty one empty,
// so that each is written as it was read.
func Answers[R, A any](rows []R, answer func(R) A) []A {
	if rows == nil {
		return nil
	}
	out := make([]A, len(rows))
	for i, r := range rows {
		out[i] = answer(r)
	}
	return out
}
