package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Envelope is the body of a delivery: the event.
type Envelope struct {
	ID        uuid.UUID        `json:"id"`
	Type      string           `json:"type"`
	CreatedAt domain.Timestamp `json:"created_at"`
	Data      json.RawMessage  `json:"data"`
}

// WebhookTarget is what an attempt needs: where, with which secret, what.
type WebhookTarget struct {
	OrgID          uuid.UUID
	DeliveryID     uuid.UUID
	SubscriptionID uuid.UUID
	URL            string
	Active         bool
	Status         domain.WebhookStatus
	Event          Envelope
	// Transformation is the subscription's current transformation; nil
	// for none (never set, or removed).
	Transformation *MappingRef
	secretSealed   []byte
	// The secret a rotation replaced, and until when it still signs.
	previousSealed    []byte
	previousExpiresAt *time.Time
}

// SealedSecrets are the subscription's signing secrets as they are kept,
// sealed to the subscription: the current one, and the one a rotation
// replaced (nil when none) with until when it still signs. Which of them
// sign an attempt is domain.PreviousSecretSigns's rule.
func (t WebhookTarget) SealedSecrets() (current secrets.Sealed, previous *secrets.Sealed, previousExpiresAt *time.Time) {
	at := sealedAt(subscriptionSecrets, t.SubscriptionID)
	if t.previousSealed != nil {
		previous = &secrets.Sealed{Value: t.previousSealed, At: at}
	}
	return secrets.Sealed{Value: t.secretSealed, At: at}, previous, t.previousExpiresAt
}

// WebhookTarget loads a delivery's subscription and event.
func (d *DB) WebhookTarget(ctx context.Context, orgID, deliveryID uuid.UUID) (WebhookTarget, error) {
	var t WebhookTarget
	var createdAt time.Time
	var version *int
	var sum *string
	err := d.pool.QueryRow(ctx, `
		SELECT w.id, s.id, s.url, s.active, w.status, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_expires_at,
		       e.id, e.type, e.created_at, e.data::text, m.version, m.sha256
		FROM webhook_deliveries w
		JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id
		JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id`+currentMappingRef(MappingOfSubscription, "s.org_id", "s.id")+`
		WHERE w.org_id = $1 AND w.id = $2`, orgID, deliveryID).Scan(
		&t.DeliveryID, &t.SubscriptionID, &t.URL, &t.Active, &t.Status, &t.secretSealed, &t.previousSealed, &t.previousExpiresAt,
		&t.Event.ID, &t.Event.Type, &createdAt, &t.Event.Data, &version, &sum)
	t.OrgID = orgID
	t.Event.CreatedAt = domain.NewTimestamp(createdAt)
	t.Transformation = mappingRef(version, sum)
	return t, notFound(err, "delivery")
}

// WebhookAttemptRecord is one attempt and where it leaves the delivery.
type WebhookAttemptRecord struct {
	OrgID      uuid.UUID
	DeliveryID uuid.UUID
	Attempt    int
	Manual     bool
	StartedAt  time.Time
	Duration   time.Duration
	StatusCode *int
	Error      *string
	// Excerpt is the start of the answer's body (at most 1 KB).
	Excerpt *string
	// Status is the delivery's status after the attempt, and NextAttemptAt
	// when it will be tried again (failed only).
	Status        domain.WebhookStatus
	NextAttemptAt *time.Time
	// TransformationVersion is the version of the subscription's
	// transformation that ran (nil: none); BodySent the body it made, as
	// sent (nil: the event was sent as it is, or nothing was sent).
	TransformationVersion *int
	BodySent              []byte
	// NoRequest says no request was made: the transformation failed. The
	// attempt counts for the delivery, not for its subscription's health,
	// which is its receiver's.
	NoRequest bool
}

// RecordWebhookAttempt logs an attempt and moves the delivery, and reports
// whether its subscription is failing after it. An attempt recorded again
// (its activity was retried after a crash) replaces the first record.
func (d *DB) RecordWebhookAttempt(ctx context.Context, a WebhookAttemptRecord) (failing bool, err error) {
	if !slices.Contains(domain.WebhookStatuses, a.Status) {
		return false, fmt.Errorf("unknown delivery status %q", a.Status)
	}
	if a.Status == domain.WebhookSucceeded && !a.NoRequest {
		recorded, err := d.recordHealthySuccess(ctx, a)
		if err != nil || recorded {
			return false, err
		}
	}
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		// first: this attempt is recorded for the first time (not again by
		// a retried activity), so it counts towards the subscription's run.
		var first bool
		if err := tx.QueryRow(ctx, `
			INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, manual, started_at, duration_ms, status_code, error, response_excerpt,
				transformation_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`+attemptAgain+`
			RETURNING xmax = 0`,
			NewID(), a.OrgID, a.DeliveryID, a.Attempt, a.Manual, a.StartedAt, a.Duration.Milliseconds(),
			a.StatusCode, a.Error, a.Excerpt, a.TransformationVersion).Scan(&first); err != nil {
			return err
		}
		var d domain.DeliveryExhaustedData
		err := tx.QueryRow(ctx, `
			UPDATE webhook_deliveries w
			SET attempts = greatest(attempts, $3), status = $4, last_status_code = $5, last_error = $6,
			    next_attempt_at = $7, transformation_version = $8, body_sent = $9, updated_at = now(),
			    resolved_by = CASE WHEN $4 = 'succeeded' AND w.resolved_at IS NULL THEN w.resent_by ELSE w.resolved_by END,
			    resolved_at = CASE WHEN $4 = 'succeeded' AND w.resolved_at IS NULL AND w.resent_by IS NOT NULL THEN now() ELSE w.resolved_at END
			FROM events e WHERE w.org_id = $1 AND w.id = $2 AND e.org_id = w.org_id AND e.id = w.event_id
			RETURNING w.id, w.event_id, e.type, w.subscription_id, w.attempts`,
			a.OrgID, a.DeliveryID, a.Attempt, a.Status, a.StatusCode, a.Error, a.NextAttemptAt, a.TransformationVersion, a.BodySent).Scan(
			&d.DeliveryID, &d.EventID, &d.EventType, &d.SubscriptionID, &d.Attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.Errorf(domain.ENOTFOUND, "delivery not found")
		}
		if err != nil {
			return err
		}
		probe, err := releaseInFlight(ctx, tx, a.OrgID, a.DeliveryID)
		if err != nil {
			return err
		}
		if !first {
			return subscriptionFailing(ctx, tx, a.OrgID, d.SubscriptionID, &failing)
		}
		if a.Status == domain.WebhookExhausted {
			if err := emit(ctx, tx, a.OrgID, domain.DeliveryExhausted.New(d)); err != nil {
				return err
			}
		}
		if a.NoRequest {
			// Nothing reached the receiver: its health is as it was.
			return subscriptionFailing(ctx, tx, a.OrgID, d.SubscriptionID, &failing)
		}
		failing, err = subscriptionAttempt(ctx, tx, a, d.SubscriptionID, probe)
		return err
	})
	return failing, err
}

// attemptAgain makes an attempt recorded again (its activity retried after
// a crash) replace the first record.
const attemptAgain = `
			ON CONFLICT (org_id, delivery_id, attempt) DO UPDATE SET
				manual = EXCLUDED.manual, started_at = EXCLUDED.started_at, duration_ms = EXCLUDED.duration_ms,
				status_code = EXCLUDED.status_code, error = EXCLUDED.error, response_excerpt = EXCLUDED.response_excerpt,
				transformation_version = EXCLUDED.transformation_version`

// recordHealthySuccess records a succeeded attempt in one statement, when
// the delivery's subscription is healthy (no failure in its current run):
// the common case, which changes nothing of the subscription's health and
// emits no event. It is what RecordWebhookAttempt's transaction does for
// it (the attempt, the delivery, its place given back and the relays
// woken), one round trip where the transaction took seven. It reports
// false, having written nothing, when the subscription is not healthy (or
// the delivery or its subscription is gone): the transaction decides.
func (d *DB) recordHealthySuccess(ctx context.Context, a WebhookAttemptRecord) (recorded bool, err error) {
	// The wake is sent by a subquery of the result (a SELECT in a WITH
	// runs only when read), whose count is read and not used.
	var released int
	err = d.pool.QueryRow(ctx, `
		WITH s AS (
			SELECT s.id FROM webhook_deliveries w JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id
			WHERE w.org_id = $1 AND w.id = $2 AND s.consecutive_failures = 0 AND s.failing_since IS NULL),
		attempt AS (
			INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, manual, started_at, duration_ms, status_code, error, response_excerpt,
				transformation_version)
			SELECT $3::uuid, $1::uuid, $2::uuid, $4::int, $5::bool, $6::timestamptz, $7::bigint, $8::int, $9::text, $10::text, $11::int FROM s`+attemptAgain+`),
		delivery AS (
			UPDATE webhook_deliveries w
			SET attempts = greatest(attempts, $4), status = 'succeeded', last_status_code = $8, last_error = $9,
			    next_attempt_at = NULL, transformation_version = $11, body_sent = $12, updated_at = now(),
			    resolved_by = CASE WHEN w.resolved_at IS NULL THEN w.resent_by ELSE w.resolved_by END,
			    resolved_at = CASE WHEN w.resolved_at IS NULL AND w.resent_by IS NOT NULL THEN now() ELSE w.resolved_at END
			WHERE w.org_id = $1 AND w.id = $2 AND EXISTS (SELECT 1 FROM s)),
		place AS (
			DELETE FROM webhook_in_flight WHERE org_id = $1 AND delivery_id = $2 AND EXISTS (SELECT 1 FROM s) RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM s), (SELECT count(*) FROM (SELECT pg_notify('`+eventsChannel+`', '') FROM place) n)`,
		a.OrgID, a.DeliveryID, NewID(), a.Attempt, a.Manual, a.StartedAt, a.Duration.Milliseconds(),
		a.StatusCode, a.Error, a.Excerpt, a.TransformationVersion, a.BodySent).Scan(&recorded, &released)
	return recorded, err
}

// subscriptionFailing reads whether a subscription is failing (false when
// it was deleted meanwhile).
func subscriptionFailing(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, failing *bool) error {
	err := tx.QueryRow(ctx, `SELECT failing_since IS NOT NULL FROM webhook_subscriptions WHERE org_id = $1 AND id = $2`,
		orgID, id).Scan(failing)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// subscriptionAttempt counts an attempt in its subscription's health, as
// domain.HealthState.After says: the failure that makes it failing emits
// webhook.subscription.failing; the success that ends a failing spell
// emits webhook.subscription.recovered (which wakes the relays: the held
// deliveries go again).
func subscriptionAttempt(ctx context.Context, tx pgx.Tx, a WebhookAttemptRecord, subscriptionID uuid.UUID, probe bool) (failing bool, err error) {
	o := domain.AttemptOutcome{Succeeded: a.Status == domain.WebhookSucceeded, Probe: probe, StatusCode: a.StatusCode, Error: a.Error}
	// Read without a lock first: an attempt that changes nothing (a
	// success of a healthy subscription, the common case) takes none that
	// deliveries to the subscription would queue behind.
	h, _, _, err := subscriptionHealth(ctx, tx, a.OrgID, subscriptionID, false)
	if err == nil && h.ChangedBy(o.Succeeded) {
		var url string
		var now time.Time
		// Locked, it is read again: another attempt may have changed it.
		h, url, now, err = subscriptionHealth(ctx, tx, a.OrgID, subscriptionID, true)
		if err == nil && h.ChangedBy(o.Succeeded) {
			return recordHealth(ctx, tx, a, subscriptionID, url, h, h.After(o, now))
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // the subscription was deleted meanwhile
	}
	return false, err
}

// subscriptionHealth reads a subscription's health, its URL and the
// transaction's time, locking the row when lock says so.
func subscriptionHealth(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, lock bool) (h domain.HealthState, url string, now time.Time, err error) {
	sql := `SELECT consecutive_failures, failing_since, probe_interval_seconds, probe_at, last_failure_status, last_failure_error,
		url, now() FROM webhook_subscriptions WHERE org_id = $1 AND id = $2`
	if lock {
		sql += ` FOR NO KEY UPDATE`
	}
	var interval *int
	err = tx.QueryRow(ctx, sql, orgID, id).Scan(
		&h.ConsecutiveFailures, &h.FailingSince, &interval, &h.ProbeAt, &h.LastFailureStatus, &h.LastFailureError, &url, &now)
	if interval != nil {
		h.ProbeInterval = time.Duration(*interval) * time.Second
	}
	return h, url, now, err
}

// recordHealth writes a subscription's health after an attempt a, was
// before it, and emits the event of a failing spell begun or ended. The
// event names the subscription's URL by its origin only, as the audit log
// does: its path and query can hold the receiver's credentials, and events
// are read with events:read and delivered to every subscribed receiver. It
// reports whether the subscription is failing.
func recordHealth(ctx context.Context, tx pgx.Tx, a WebhookAttemptRecord, subscriptionID uuid.UUID, url string, was, h domain.HealthState) (bool, error) {
	var interval *int
	if h.ProbeInterval > 0 {
		secs := int(h.ProbeInterval / time.Second)
		interval = &secs
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET consecutive_failures = $3, last_failure_status = $4, last_failure_error = $5,
		failing_since = $6, probe_interval_seconds = $7, probe_at = $8 WHERE org_id = $1 AND id = $2`,
		a.OrgID, subscriptionID, h.ConsecutiveFailures, h.LastFailureStatus, h.LastFailureError, h.FailingSince, interval, h.ProbeAt); err != nil {
		return false, err
	}
	switch {
	case !was.Failing() && h.Failing():
		return true, emit(ctx, tx, a.OrgID, domain.SubscriptionFailing.New(domain.SubscriptionFailingData{SubscriptionID: subscriptionID,
			URL: outbound.Origin(url), ConsecutiveFailures: h.ConsecutiveFailures, LastStatus: a.StatusCode, LastError: a.Error,
			Since: domain.NewTimestamp(*h.FailingSince)}))
	case was.Failing() && !h.Failing():
		// The statuses are written into the statement rather than passed:
		// the planner proves the predicate of the backlog index
		// (webhook_deliveries_backlog) only from literals.
		var held int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2
			AND status IN (`+statusLiterals(domain.RecoveryReleases)+`)`, a.OrgID, subscriptionID).Scan(&held); err != nil {
			return false, err
		}
		return false, emit(ctx, tx, a.OrgID, domain.SubscriptionRecovered.New(domain.SubscriptionRecoveredData{SubscriptionID: subscriptionID,
			URL: outbound.Origin(url), FailingSince: domain.NewTimestamp(*was.FailingSince), HeldDeliveries: held}))
	}
	return h.Failing(), nil
}

// EndWebhookDelivery ends a delivery without an attempt (its subscription was
// disabled): exhausted, with the reason.
func (d *DB) EndWebhookDelivery(ctx context.Context, orgID, deliveryID uuid.UUID, reason string) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET status = 'exhausted', last_error = $3, next_attempt_at = NULL, updated_at = now()
			WHERE org_id = $1 AND id = $2`, orgID, deliveryID, reason); err != nil {
			return err
		}
		_, err := releaseInFlight(ctx, tx, orgID, deliveryID)
		return err
	})
}
