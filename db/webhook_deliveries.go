package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// WebhookDelivery is a webhook delivery as support sees it.
type WebhookDelivery struct {
	ID             uuid.UUID
	OrgID          uuid.UUID
	EventID        uuid.UUID
	EventType      string
	SubscriptionID uuid.UUID
	URL            string
	Status         domain.WebhookStatus
	Attempts       int
	LastStatusCode *int
	LastError      *string
	NextAttemptAt  *domain.Timestamp
	CreatedAt      domain.Timestamp
	UpdatedAt      domain.Timestamp
	// TransformationVersion is the version of the subscription's
	// transformation the last attempt ran (nil: none).
	TransformationVersion *int
	// BodySent is the body the transformation made for the last attempt,
	// as sent; filled by GetWebhookDelivery only (it may be 1 MB).
	BodySent []byte
	// Resolution says what delivered a delivery that had failed or was
	// exhausted: a resend, a recover or a bulk resend (nil: none did).
	Resolution *Resolution
	// AttemptLog is filled by GetWebhookDelivery.
	AttemptLog []WebhookAttempt
}

// WebhookAttempt is one logged attempt of a delivery; Response is the
// start of the answer's body.
type WebhookAttempt struct {
	Attempt    int
	Manual     bool
	StartedAt  domain.Timestamp
	DurationMS int
	StatusCode *int
	Error      *string
	Response   *string
	// TransformationVersion is the version of the transformation that ran
	// (nil: none).
	TransformationVersion *int
}

const webhookDeliveryColumns = `w.id, w.org_id, w.event_id, e.type, w.subscription_id, s.url, w.status, w.attempts,
	w.last_status_code, w.last_error, w.next_attempt_at, w.created_at, w.updated_at, w.transformation_version,
	w.resolved_by, w.resend_batch, w.resolved_at`

const webhookDeliveryFrom = ` FROM webhook_deliveries w
	JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
	JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id`

func scanWebhookDelivery(row pgx.Row) (WebhookDelivery, error) {
	var x WebhookDelivery
	var by *string
	var batch *uuid.UUID
	var at *domain.Timestamp
	err := row.Scan(&x.ID, &x.OrgID, &x.EventID, &x.EventType, &x.SubscriptionID, &x.URL, &x.Status, &x.Attempts,
		&x.LastStatusCode, &x.LastError, &x.NextAttemptAt, &x.CreatedAt, &x.UpdatedAt, &x.TransformationVersion, &by, &batch, &at)
	if by != nil && at != nil {
		x.Resolution = &Resolution{By: *by, At: *at}
		if *by == ResentByBulk {
			x.Resolution.BatchID = batch
		}
	}
	return x, err
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
		if err := tx.QueryRow(ctx, `SELECT body_sent FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, x.OrgID, x.ID).Scan(&x.BodySent); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT attempt, manual, started_at, duration_ms, status_code, error, response_excerpt, transformation_version
			FROM webhook_attempts WHERE org_id = $1 AND delivery_id = $2 ORDER BY attempt`, x.OrgID, x.ID)
		if err != nil {
			return err
		}
		x.AttemptLog, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookAttempt, error) {
			var a WebhookAttempt
			err := r.Scan(&a.Attempt, &a.Manual, &a.StartedAt, &a.DurationMS, &a.StatusCode, &a.Error, &a.Response, &a.TransformationVersion)
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

// DeliveryListFilter narrows the organisation's delivery list.
type DeliveryListFilter struct {
	SubscriptionID *uuid.UUID
	Status         domain.WebhookStatus
	EventType      string
	// EventID narrows to one event's deliveries, one per subscription
	// (read by the index of the event and subscription).
	EventID *uuid.UUID
	// ID narrows to one delivery.
	ID *uuid.UUID
	// Ref keeps the deliveries of the events that a receipt applied when
	// that receipt is found by Ref as the receipt list finds it: its id, or
	// a reference its body names, whole or the start of one, in any case
	// (docs/design.md#references).
	Ref string
	// CreatedAfter and CreatedBefore bound when the delivery was created.
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	// Resolved keeps only the deliveries a resend delivered after they
	// failed (true) or only the others (false); nil keeps both.
	Resolved *bool
}

// ListWebhookDeliveriesPage lists the organisation's deliveries, newest
// first, a page at a time.
func (d *DB) ListWebhookDeliveriesPage(ctx context.Context, orgID uuid.UUID, f DeliveryListFilter, p Page) ([]WebhookDelivery, error) {
	c := newConds()
	org := c.param(orgID)
	c.parts = append(c.parts, "w.org_id = "+org)
	c.addIf(f.Status != "", "w.status = ?", f.Status)
	c.addIf(f.SubscriptionID != nil, "w.subscription_id = ?", f.SubscriptionID)
	c.addIf(f.EventType != "", "e.type = ?", f.EventType)
	c.addIf(f.EventID != nil, "w.event_id = ?", f.EventID)
	c.addIf(f.ID != nil, "w.id = ?", f.ID)
	c.addIf(f.CreatedAfter != nil, "w.created_at > ?", f.CreatedAfter)
	c.addIf(f.CreatedBefore != nil, "w.created_at < ?", f.CreatedBefore)
	if f.Ref != "" {
		// The events of the receipts found (index of events by receipt),
		// then their deliveries (index of deliveries by event).
		c.parts = append(c.parts, "w.event_id IN (SELECT ev.id FROM events ev WHERE ev.org_id = "+org+
			" AND ev.receipt_id IN ("+refSearch(c, org, f.Ref)+"))")
	}
	if f.Resolved != nil {
		c.parts = append(c.parts, map[bool]string{true: "w.resolved_at IS NOT NULL", false: "w.resolved_at IS NULL"}[*f.Resolved])
	}
	return listPage(ctx, d.pool, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom, "webhook_deliveries", "w", c, p, scanWebhookDelivery)
}

// RecoverableDeliveries lists, oldest first, the deliveries of one of the
// organisation's subscriptions created since then that failed or were
// exhausted: the ones a receiver that was down missed. ENOTFOUND when the
// organisation has no such subscription.
func (d *DB) RecoverableDeliveries(ctx context.Context, orgID, subscriptionID uuid.UUID, since time.Time) ([]WebhookDelivery, error) {
	if _, err := d.GetSubscription(ctx, orgID, subscriptionID); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+`
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.created_at >= $3 AND w.status IN ('failed', 'exhausted')
		ORDER BY w.created_at, w.id`, orgID, subscriptionID, since)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) { return scanWebhookDelivery(r) })
}

// What asked for a delivery's attempt (webhook_deliveries.resent_by).
const (
	ResentBySupport = "resend"
	ResentByRecover = "recover"
	ResentByBulk    = "bulk_resend"
)

// MarkDeliveriesResent records that by (ResentBy...; batch, the bulk
// resend) asked for an attempt of the organisation's deliveries ids: those
// that failed or were exhausted and then succeed are resolved by it.
func (d *DB) MarkDeliveriesResent(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID, by string, batch *uuid.UUID) error {
	_, err := d.pool.Exec(ctx, `UPDATE webhook_deliveries SET resent_by = $3, resend_batch = $4
		WHERE org_id = $1 AND id = ANY ($2) AND status IN ('failed', 'exhausted') AND resolved_at IS NULL`, orgID, ids, by, batch)
	return err
}
