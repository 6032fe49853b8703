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
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Subscription is a webhook subscription (never with its secret).
type Subscription struct {
	ID         uuid.UUID        `json:"id"`
	OrgID      uuid.UUID        `json:"org_id"`
	URL        string           `json:"url"`
	EventTypes []string         `json:"events"`
	Active     bool             `json:"active"`
	CreatedAt  domain.Timestamp `json:"created_at"`
	SubscriptionSettings
	// State is healthy, or failing (FailingSince says since when).
	State string `json:"state" enum:"healthy,failing" doc:"failing after 5 failed attempts in a row: its deliveries are held, spending no attempts, while a probe tries the oldest now and then; healthy again at the probe's first success."`
	// Backlog counts its deliveries not delivered yet.
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

// The subscription states and orderings.
const (
	SubscriptionHealthy = "healthy"
	SubscriptionFailing = "failing"
	OrderingNone        = "none"
	OrderingPerEntity   = "per_entity"
)

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

const subscriptionColumns = `id, org_id, url, event_types, active, created_at,
	consecutive_failures, failing_since, last_failure_status, last_failure_error,
	rate_limit_per_second, max_in_flight, ordering`

func scanSubscription(row pgx.Row) (Subscription, error) { return scanSubscriptionWith(row) }

// scanSubscriptionWith scans subscriptionColumns and then extra.
func scanSubscriptionWith(row pgx.Row, extra ...any) (Subscription, error) {
	var s Subscription
	err := row.Scan(append([]any{&s.ID, &s.OrgID, &s.URL, &s.EventTypes, &s.Active, &s.CreatedAt,
		&s.ConsecutiveFailures, &s.FailingSince, &s.LastFailureStatus, &s.LastFailureError,
		&s.RateLimitPerSecond, &s.MaxInFlight, &s.Ordering}, extra...)...)
	s.State = SubscriptionHealthy
	if s.FailingSince != nil {
		s.State = SubscriptionFailing
	}
	return s, err
}

// withBacklog fills in the backlog of the organisation's subscriptions
// list, in one statement (an index holds the deliveries not delivered).
func (d *DB) withBacklog(ctx context.Context, orgID uuid.UUID, list []Subscription, err error) ([]Subscription, error) {
	if err != nil || len(list) == 0 {
		return list, err
	}
	ids := make([]uuid.UUID, len(list))
	at := make(map[uuid.UUID]*DeliveryBacklog, len(list))
	for i := range list {
		ids[i] = list[i].ID
		at[list[i].ID] = &list[i].Backlog
	}
	rows, err := d.pool.Query(ctx, `
		SELECT subscription_id, status, count(*) FROM webhook_deliveries
		WHERE org_id = $1 AND subscription_id = ANY ($2) AND status IN ('pending', 'failed', 'held')
		GROUP BY subscription_id, status`, orgID, ids)
	if err != nil {
		return list, err
	}
	var sub uuid.UUID
	var status string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&sub, &status, &n}, func() error {
		b := at[sub]
		switch domain.WebhookStatus(status) {
		case domain.WebhookPending:
			b.Pending = n
		case domain.WebhookFailed:
			b.Failed = n
		case domain.WebhookHeld:
			b.Held = n
		}
		return nil
	})
	return list, err
}

// oneWithBacklog is withBacklog of one subscription.
func (d *DB) oneWithBacklog(ctx context.Context, s Subscription, err error) (Subscription, error) {
	if err != nil {
		return s, err
	}
	list, err := d.withBacklog(ctx, s.OrgID, []Subscription{s}, nil)
	return list[0], err
}

// NewSubscription is what adding a subscription takes. An empty EventTypes
// means every event type.
type NewSubscription struct {
	OrgID      uuid.UUID
	URL        string
	EventTypes []string
	// The settings; nil leaves each at its default (no rate limit, 10 in
	// flight, no ordering).
	RateLimit   *int
	MaxInFlight *int
	Ordering    *string
}

// CreatedSubscription is a new subscription with its secret, which is never
// readable again.
type CreatedSubscription struct {
	Subscription
	Secret string
}

// CreateSubscription adds a webhook subscription with a new secret, sealed
// with sealer. The URL is checked by the caller (outbound.CheckURL).
func (d *DB) CreateSubscription(ctx context.Context, sealer *secrets.Sealer, in NewSubscription) (CreatedSubscription, error) {
	for _, t := range in.EventTypes {
		if !slices.Contains(domain.EventTypes, t) {
			return CreatedSubscription{}, domain.Errorf(domain.EINVALID, "unknown event type %q", t)
		}
	}
	if len(in.URL) > 2000 {
		return CreatedSubscription{}, domain.Errorf(domain.EINVALID, "the URL is longer than 2000 characters")
	}
	if err := (SubscriptionChange{RateLimitSet: true, RateLimit: in.RateLimit, MaxInFlight: in.MaxInFlight, Ordering: in.Ordering}).check(); err != nil {
		return CreatedSubscription{}, err
	}
	if _, err := d.Organisation(ctx, in.OrgID); err != nil {
		return CreatedSubscription{}, err
	}
	if in.EventTypes == nil {
		in.EventTypes = []string{}
	}
	secret, id := secrets.NewSigningSecret(), NewID()
	s, err := scanSubscription(d.pool.QueryRow(ctx, `
		INSERT INTO webhook_subscriptions (id, org_id, url, event_types, secret_sealed, rate_limit_per_second, max_in_flight, ordering)
		VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, 10), coalesce($8, 'none')) RETURNING `+subscriptionColumns,
		id, in.OrgID, in.URL, in.EventTypes, sealer.Seal(secret, sealedAt(subscriptionSecrets, id)), in.RateLimit, in.MaxInFlight, in.Ordering))
	return CreatedSubscription{Subscription: s, Secret: secret}, err
}

// SetSubscriptionActive disables or enables one of the organisation's
// subscriptions. A disabled subscription gets no new deliveries, and its
// deliveries waiting for a retry end exhausted when their turn comes.
func (d *DB) SetSubscriptionActive(ctx context.Context, orgID, id uuid.UUID, active bool) (Subscription, error) {
	s, err := scanSubscription(d.pool.QueryRow(ctx, `
		UPDATE webhook_subscriptions SET active = $3, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING `+subscriptionColumns,
		orgID, id, active))
	return d.oneWithBacklog(ctx, s, notFound(err, "subscription"))
}

// ListSubscriptions lists an organisation's subscriptions, newest first.
func (d *DB) ListSubscriptions(ctx context.Context, orgID uuid.UUID) ([]Subscription, error) {
	if _, err := d.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions
		WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Subscription, error) { return scanSubscription(r) })
	return d.withBacklog(ctx, orgID, list, err)
}

// ---- the outbox relay

// RelayEvents takes up to limit events not relayed yet (oldest first,
// skipping those another relay holds), creates one delivery per matching
// active subscription (an operational event only for those that name it,
// never for the subscription it concerns), and marks the events relayed,
// in one transaction. Deliveries are made in event order (their ids
// follow it), the order a relay admits them in. It
// returns how many events it took; their deliveries wait in
// UnstartedWebhookDeliveries for their workflows.
func (d *DB) RelayEvents(ctx context.Context, limit int) (int, error) {
	var taken int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH ev AS (
				SELECT id, org_id, type, data, entity_type, entity_id, created_at FROM events WHERE relayed_at IS NULL
				ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
			)
			SELECT ev.id, ev.org_id, s.id, ev.entity_type || ':' || ev.entity_id
			FROM ev LEFT JOIN webhook_subscriptions s
			  ON s.org_id = ev.org_id AND s.active
			 AND (ev.type = ANY (s.event_types) OR (cardinality(s.event_types) = 0 AND NOT ev.type = ANY ($2::text[])))
			 AND s.id IS DISTINCT FROM (CASE WHEN ev.type = ANY ($2::text[]) THEN (ev.data->>'subscription_id')::uuid END)
			ORDER BY ev.created_at, ev.id`,
			limit, domain.OperationalEventTypes)
		if err != nil {
			return err
		}
		var events, ids, orgs, evIDs, subs []uuid.UUID
		var entities []*string
		seen := map[uuid.UUID]bool{}
		for rows.Next() {
			var ev, org uuid.UUID
			var sub *uuid.UUID
			var entity *string
			if err := rows.Scan(&ev, &org, &sub, &entity); err != nil {
				rows.Close()
				return err
			}
			if !seen[ev] {
				seen[ev] = true
				events = append(events, ev)
			}
			if sub != nil {
				ids, orgs, evIDs, subs = append(ids, NewID()), append(orgs, org), append(evIDs, ev), append(subs, *sub)
				entities = append(entities, entity)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		taken = len(events)
		if taken == 0 {
			return nil
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, entity)
				SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[])
				ON CONFLICT (event_id, subscription_id) DO NOTHING`, ids, orgs, evIDs, subs, entities); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE events SET relayed_at = now() WHERE id = ANY ($1)`, events)
		return err
	})
	return taken, err
}

// unstartedDeliveries selects up to $1 deliveries whose workflow has not
// been started and that no relay's claim holds, oldest first, skipping
// those another transaction holds.
const unstartedDeliveries = `
	SELECT w.id, w.org_id, w.event_id, e.type, w.subscription_id, w.attempts, e.trace_parent
	FROM webhook_deliveries w JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
	WHERE w.workflow_started_at IS NULL AND (w.start_claimed_until IS NULL OR w.start_claimed_until < now())
	ORDER BY w.created_at, w.id LIMIT $1
	FOR UPDATE OF w SKIP LOCKED`

func scanDeliveryRef(r pgx.CollectableRow) (domain.WebhookDeliveryRef, error) {
	var x domain.WebhookDeliveryRef
	err := r.Scan(&x.ID, &x.OrgID, &x.EventID, &x.EventType, &x.SubscriptionID, &x.Attempts, &x.TraceParent)
	return x, err
}

// UnstartedWebhookDeliveries lists up to limit deliveries whose workflow
// has not been started, oldest first, leaving out those a relay holds
// (ClaimWebhookDeliveries).
func (d *DB) UnstartedWebhookDeliveries(ctx context.Context, limit int) ([]domain.WebhookDeliveryRef, error) {
	rows, err := d.pool.Query(ctx, unstartedDeliveries, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanDeliveryRef)
}

// ClaimLease is how long a relay's claim on deliveries to start, or wakes
// to send, holds them from other relays: longer than a round takes (a
// batch of starts takes milliseconds), short enough that a relay that
// stopped holding one (its worker killed) delays them little. A relay still
// starting when its lease runs out may meet another that claimed the same
// deliveries: starts and wakes are idempotent, so nothing doubles.
const ClaimLease = 10 * time.Second

// MarkWebhookDeliveriesStarted records that the deliveries' workflows
// exist (which ends any claim on them).
func (d *DB) MarkWebhookDeliveriesStarted(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `UPDATE webhook_deliveries SET workflow_started_at = now(), start_claimed_until = NULL
		WHERE id = ANY ($1) AND workflow_started_at IS NULL`, ids)
	return err
}

// ReleaseWebhookDeliveries ends a relay's claim on deliveries it did not
// start, so that the next round takes them again.
func (d *DB) ReleaseWebhookDeliveries(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `
		WITH released AS (UPDATE webhook_deliveries SET start_claimed_until = NULL
		                  WHERE id = ANY ($1) AND workflow_started_at IS NULL RETURNING org_id, id)
		DELETE FROM webhook_in_flight f USING released r WHERE f.org_id = r.org_id AND f.delivery_id = r.id`, ids)
	return err
}

// ListenEvents calls fn whenever events were written (see eventsChannel),
// and after every interval without one, until ctx ends.
func (d *DB) ListenEvents(ctx context.Context, interval time.Duration, fn func()) error {
	return d.listen(ctx, eventsChannel, interval, func(string) { fn() }, fn)
}

// ---- attempts

// Envelope is the body of a delivery: the event.
type Envelope struct {
	ID        uuid.UUID        `json:"id"`
	Type      string           `json:"type"`
	CreatedAt domain.Timestamp `json:"created_at"`
	Data      json.RawMessage  `json:"data"`
}

// WebhookTarget is what an attempt needs: where, with which secret, what.
type WebhookTarget struct {
	DeliveryID     uuid.UUID
	SubscriptionID uuid.UUID
	URL            string
	Active         bool
	Status         domain.WebhookStatus
	Event          Envelope
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
	err := d.pool.QueryRow(ctx, `
		SELECT w.id, s.id, s.url, s.active, w.status, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_expires_at,
		       e.id, e.type, e.created_at, e.data::text
		FROM webhook_deliveries w
		JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id
		JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		WHERE w.org_id = $1 AND w.id = $2`, orgID, deliveryID).Scan(
		&t.DeliveryID, &t.SubscriptionID, &t.URL, &t.Active, &t.Status, &t.secretSealed, &t.previousSealed, &t.previousExpiresAt,
		&t.Event.ID, &t.Event.Type, &createdAt, &t.Event.Data)
	t.Event.CreatedAt = domain.NewTimestamp(createdAt)
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
}

// RecordWebhookAttempt logs an attempt and moves the delivery, and reports
// whether its subscription is failing after it. An attempt recorded again
// (its activity was retried after a crash) replaces the first record.
func (d *DB) RecordWebhookAttempt(ctx context.Context, a WebhookAttemptRecord) (failing bool, err error) {
	if !slices.Contains(domain.WebhookStatuses, a.Status) {
		return false, fmt.Errorf("unknown delivery status %q", a.Status)
	}
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		// first: this attempt is recorded for the first time (not again by
		// a retried activity), so it counts towards the subscription's run.
		var first bool
		if err := tx.QueryRow(ctx, `
			INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, manual, started_at, duration_ms, status_code, error, response_excerpt)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (org_id, delivery_id, attempt) DO UPDATE SET
				manual = EXCLUDED.manual, started_at = EXCLUDED.started_at, duration_ms = EXCLUDED.duration_ms,
				status_code = EXCLUDED.status_code, error = EXCLUDED.error, response_excerpt = EXCLUDED.response_excerpt
			RETURNING xmax = 0`,
			NewID(), a.OrgID, a.DeliveryID, a.Attempt, a.Manual, a.StartedAt, a.Duration.Milliseconds(),
			a.StatusCode, a.Error, a.Excerpt).Scan(&first); err != nil {
			return err
		}
		var d domain.DeliveryExhaustedData
		err := tx.QueryRow(ctx, `
			UPDATE webhook_deliveries w
			SET attempts = greatest(attempts, $3), status = $4, last_status_code = $5, last_error = $6,
			    next_attempt_at = $7, updated_at = now()
			FROM events e WHERE w.org_id = $1 AND w.id = $2 AND e.org_id = w.org_id AND e.id = w.event_id
			RETURNING w.id, w.event_id, e.type, w.subscription_id, w.attempts`,
			a.OrgID, a.DeliveryID, a.Attempt, a.Status, a.StatusCode, a.Error, a.NextAttemptAt).Scan(
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
			err := tx.QueryRow(ctx, `SELECT failing_since IS NOT NULL FROM webhook_subscriptions WHERE org_id = $1 AND id = $2`,
				a.OrgID, d.SubscriptionID).Scan(&failing)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		if a.Status == domain.WebhookExhausted {
			if err := emit(ctx, tx, a.OrgID, domain.DeliveryExhausted.New(d)); err != nil {
				return err
			}
		}
		failing, err = subscriptionAttempt(ctx, tx, a, d.SubscriptionID, probe)
		return err
	})
	return failing, err
}

// subscriptionAttempt counts an attempt in its subscription's run of
// failures: the fifth failure in a row makes the subscription failing,
// with its first probe due ProbeFirst later, and emits
// webhook.subscription.failing; a probe that fails doubles the wait for
// the next, up to ProbeMax. A success ends the run, and after a failing
// spell emits webhook.subscription.recovered (which wakes the relays: the
// held deliveries go again).
func subscriptionAttempt(ctx context.Context, tx pgx.Tx, a WebhookAttemptRecord, subscriptionID uuid.UUID, probe bool) (failing bool, err error) {
	succeeded := a.Status == domain.WebhookSucceeded
	var url string
	var failures int
	var since, was *time.Time
	err = tx.QueryRow(ctx, `
		WITH old AS (SELECT id, failing_since FROM webhook_subscriptions WHERE org_id = $1 AND id = $2
		             AND NOT ($3 AND consecutive_failures = 0 AND failing_since IS NULL) FOR UPDATE)
		UPDATE webhook_subscriptions s SET
			consecutive_failures = CASE WHEN $3 THEN 0 ELSE s.consecutive_failures + 1 END,
			last_failure_status = CASE WHEN $3 THEN s.last_failure_status ELSE $4 END,
			last_failure_error = CASE WHEN $3 THEN s.last_failure_error ELSE $5 END,
			failing_since = CASE WHEN $3 THEN NULL
			                     WHEN s.failing_since IS NULL AND s.consecutive_failures + 1 >= $6 THEN now()
			                     ELSE s.failing_since END,
			probe_interval_seconds = CASE WHEN $3 THEN NULL
			                     WHEN s.failing_since IS NULL AND s.consecutive_failures + 1 >= $6 THEN $8
			                     WHEN s.failing_since IS NOT NULL AND $7 THEN least(coalesce(s.probe_interval_seconds, $8) * 2, $9)
			                     ELSE s.probe_interval_seconds END,
			probe_at = CASE WHEN $3 THEN NULL
			                WHEN s.failing_since IS NULL AND s.consecutive_failures + 1 >= $6 THEN now() + make_interval(secs => $8)
			                WHEN s.failing_since IS NOT NULL AND $7 THEN now() + make_interval(secs => least(coalesce(s.probe_interval_seconds, $8) * 2, $9))
			                ELSE s.probe_at END
		FROM old WHERE s.org_id = $1 AND s.id = old.id
		RETURNING s.url, s.consecutive_failures, s.failing_since, old.failing_since`,
		a.OrgID, subscriptionID, succeeded, a.StatusCode, a.Error, domain.SubscriptionFailingAfter, probe,
		int(ProbeFirst.Seconds()), int(ProbeMax.Seconds())).Scan(&url, &failures, &since, &was)
	if errors.Is(err, pgx.ErrNoRows) {
		// A success of a healthy subscription (the common case: it changes
		// nothing, and takes no lock that deliveries to the subscription
		// would queue behind), or a subscription deleted meanwhile.
		return false, nil
	}
	switch {
	case err != nil:
		return false, err
	case was == nil && since != nil:
		return true, emit(ctx, tx, a.OrgID, domain.SubscriptionFailing.New(domain.SubscriptionFailingData{SubscriptionID: subscriptionID,
			URL: url, ConsecutiveFailures: failures, LastStatus: a.StatusCode, LastError: a.Error, Since: domain.NewTimestamp(*since)}))
	case was != nil && succeeded:
		var held int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND status IN ('failed', 'held')`,
			a.OrgID, subscriptionID).Scan(&held); err != nil {
			return false, err
		}
		return false, emit(ctx, tx, a.OrgID, domain.SubscriptionRecovered.New(domain.SubscriptionRecoveredData{SubscriptionID: subscriptionID,
			URL: url, FailingSince: domain.NewTimestamp(*was), HeldDeliveries: held}))
	}
	return since != nil, nil
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

// ---- support

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
	// AttemptLog is filled by GetWebhookDelivery.
	AttemptLog []WebhookAttempt `json:"attempt_log,omitempty"`
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
}

const webhookDeliveryColumns = `w.id, w.org_id, w.event_id, e.type, w.subscription_id, s.url, w.status, w.attempts,
	w.last_status_code, w.last_error, w.next_attempt_at, w.created_at, w.updated_at`

const webhookDeliveryFrom = ` FROM webhook_deliveries w
	JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
	JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id`

func scanWebhookDelivery(row pgx.Row) (WebhookDelivery, error) {
	var x WebhookDelivery
	err := row.Scan(&x.ID, &x.OrgID, &x.EventID, &x.EventType, &x.SubscriptionID, &x.URL, &x.Status, &x.Attempts,
		&x.LastStatusCode, &x.LastError, &x.NextAttemptAt, &x.CreatedAt, &x.UpdatedAt)
	return x, err
}

// WebhookDeliveryFilter narrows a delivery list.
type WebhookDeliveryFilter struct {
	OrgID          uuid.UUID
	Status         domain.WebhookStatus
	SubscriptionID *uuid.UUID
	Limit          int
}

// ListWebhookDeliveries lists an organisation's deliveries, newest first.
func (d *DB) ListWebhookDeliveries(ctx context.Context, f WebhookDeliveryFilter) ([]WebhookDelivery, error) {
	if f.Status != "" && !slices.Contains(domain.WebhookStatuses, f.Status) {
		return nil, domain.Errorf(domain.EINVALID, "unknown delivery status %q (one of %s)", f.Status, domain.JoinValues(domain.WebhookStatuses))
	}
	if _, err := d.Organisation(ctx, f.OrgID); err != nil {
		return nil, err
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	c := newConds()
	c.add("w.org_id = ?", f.OrgID)
	c.addIf(f.Status != "", "w.status = ?", f.Status)
	c.addIf(f.SubscriptionID != nil, "w.subscription_id = ?", f.SubscriptionID)
	rows, err := d.pool.Query(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+` WHERE `+c.where()+
		` ORDER BY w.created_at DESC, w.id DESC LIMIT `+c.param(f.Limit), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) { return scanWebhookDelivery(r) })
}

// GetWebhookDelivery returns one of the organisation's deliveries with its
// attempt log, oldest attempt first. Both are read in one snapshot, so the
// delivery's attempts and status agree with the log beside them even while
// an attempt is being recorded.
func (d *DB) GetWebhookDelivery(ctx context.Context, orgID, id uuid.UUID) (x WebhookDelivery, err error) {
	err = pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		x, err = scanWebhookDelivery(tx.QueryRow(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+` WHERE w.org_id = $1 AND w.id = $2`, orgID, id))
		if err != nil {
			return notFound(err, "delivery")
		}
		rows, err := tx.Query(ctx, `
			SELECT attempt, manual, started_at, duration_ms, status_code, error, response_excerpt
			FROM webhook_attempts WHERE org_id = $1 AND delivery_id = $2 ORDER BY attempt`, x.OrgID, x.ID)
		if err != nil {
			return err
		}
		x.AttemptLog, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookAttempt, error) {
			var a WebhookAttempt
			err := r.Scan(&a.Attempt, &a.Manual, &a.StartedAt, &a.DurationMS, &a.StatusCode, &a.Error, &a.Response)
			return a, err
		})
		return err
	})
	if x.AttemptLog == nil {
		x.AttemptLog = []WebhookAttempt{}
	}
	return x, err
}

// Backlog counts what an operator watches grow, across organisations: the
// parked inbound posts, and the subscriptions and endpoints failing now.
func (d *DB) Backlog(ctx context.Context) (parked, failingSubscriptions, failingEndpoints int, err error) {
	err = d.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM inbound_receipts WHERE outcome = 'parked'),
		(SELECT count(*) FROM webhook_subscriptions WHERE failing_since IS NOT NULL),
		(SELECT count(*) FROM inbound_endpoints WHERE failing_since IS NOT NULL)`).Scan(&parked, &failingSubscriptions, &failingEndpoints)
	return parked, failingSubscriptions, failingEndpoints, err
}
