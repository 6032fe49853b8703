package db

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// MaxResendBatch is the most deliveries one bulk resend takes: each is
// resent while the request that starts it waits.
const MaxResendBatch = 1000

// ResendableStatuses are the statuses a bulk resend takes.
var ResendableStatuses = []domain.WebhookStatus{domain.WebhookFailed, domain.WebhookExhausted}

// NewResendBatch is a bulk resend to record: the failed or exhausted
// deliveries of the organisation its filters select.
type NewResendBatch struct {
	OrgID          uuid.UUID
	SubscriptionID *uuid.UUID
	// Statuses are among ResendableStatuses; none means both.
	Statuses      []domain.WebhookStatus
	EventType     string
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	CreatedBy     string
}

// Validate refuses a status a bulk resend does not take.
func (in *NewResendBatch) Validate() error {
	if len(in.Statuses) == 0 {
		in.Statuses = slices.Clone(ResendableStatuses)
	}
	for _, s := range in.Statuses {
		if !slices.Contains(ResendableStatuses, s) {
			return domain.Errorf(domain.EINVALID, "a bulk resend takes failed or exhausted deliveries, not %q", s)
		}
	}
	if in.CreatedAfter != nil && in.CreatedBefore != nil && in.CreatedAfter.After(*in.CreatedBefore) {
		return domain.Errorf(domain.EINVALID, "created_after is later than created_before: no delivery can match")
	}
	return nil
}

func (in NewResendBatch) conds() *conds {
	c := newConds()
	c.add("w.org_id = ?", in.OrgID)
	statuses := in.Statuses
	if len(statuses) == 0 {
		statuses = ResendableStatuses
	}
	c.add("w.status = ANY(?)", statuses)
	c.addIf(in.SubscriptionID != nil, "w.subscription_id = ?", in.SubscriptionID)
	c.addIf(in.EventType != "", "e.type = ?", in.EventType)
	c.addIf(in.CreatedAfter != nil, "w.created_at > ?", in.CreatedAfter)
	c.addIf(in.CreatedBefore != nil, "w.created_at < ?", in.CreatedBefore)
	return c
}

// CountResendSelection counts the deliveries a bulk resend of in would
// take (up to MaxResendBatch+1: more is refused).
func (d *DB) CountResendSelection(ctx context.Context, in NewResendBatch) (int, error) {
	c := in.conds()
	var n int
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1`+webhookDeliveryFrom+` WHERE `+c.where()+`
		LIMIT `+c.param(MaxResendBatch+1)+`) s`, c.args...).Scan(&n)
	return n, err
}

// FirstOfResendSelection returns the first n deliveries a bulk resend of
// in would take, in its order (oldest first).
func (d *DB) FirstOfResendSelection(ctx context.Context, in NewResendBatch, n int) ([]WebhookDelivery, error) {
	c := in.conds()
	rows, err := d.pool.Query(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+` WHERE `+c.where()+`
		ORDER BY w.created_at, w.id LIMIT `+c.param(n), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) { return scanWebhookDelivery(r) })
}

// CreateResendBatch records a bulk resend and its deliveries, oldest
// first, in one transaction. More than MaxResendBatch deliveries is
// EINVALID, and nothing is recorded.
func (d *DB) CreateResendBatch(ctx context.Context, in NewResendBatch) (uuid.UUID, int, error) {
	if err := in.Validate(); err != nil {
		return uuid.Nil, 0, err
	}
	id := NewID()
	var n int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO resend_batches (id, org_id, subscription_id, statuses, event_type, created_after, created_before, created_by)
			VALUES ($1, $2, $3, $4, nullif($5, ''), $6, $7, $8)`,
			id, in.OrgID, in.SubscriptionID, in.Statuses, in.EventType, in.CreatedAfter, in.CreatedBefore, in.CreatedBy); err != nil {
			return err
		}
		c := in.conds()
		tag, err := tx.Exec(ctx, `
			INSERT INTO resend_batch_items (org_id, batch_id, position, delivery_id)
			SELECT w.org_id, `+c.param(id)+`, row_number() OVER (ORDER BY w.created_at, w.id), w.id
			FROM (SELECT w.org_id, w.id, w.created_at`+webhookDeliveryFrom+` WHERE `+c.where()+`
			      ORDER BY w.created_at, w.id LIMIT `+c.param(MaxResendBatch+1)+`) w`, c.args...)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		if n > MaxResendBatch {
			return domain.Errorf(domain.EINVALID, "more than %d deliveries match: narrow the filters (subscription, status, event type, time)", MaxResendBatch)
		}
		return nil
	})
	return id, n, err
}

// ResendBatchDeliveries returns the deliveries of a bulk resend, in its
// order, with their positions; a delivery deleted since is left out.
func (d *DB) ResendBatchDeliveries(ctx context.Context, orgID, batchID uuid.UUID) ([]int, []WebhookDelivery, error) {
	rows, err := d.pool.Query(ctx, `SELECT i.position, `+webhookDeliveryColumns+` FROM resend_batch_items i
		JOIN webhook_deliveries w ON w.org_id = i.org_id AND w.id = i.delivery_id
		JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id
		WHERE i.org_id = $1 AND i.batch_id = $2 ORDER BY i.position`, orgID, batchID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var positions []int
	var out []WebhookDelivery
	for rows.Next() {
		var pos int
		x, err := scanWebhookDelivery(prefixed{rows, &pos})
		if err != nil {
			return nil, nil, err
		}
		positions = append(positions, pos)
		out = append(out, x)
	}
	return positions, out, rows.Err()
}

// prefixed scans one leading column into first, then the rest as row.
type prefixed struct {
	row   pgx.Row
	first any
}

func (p prefixed) Scan(dest ...any) error { return p.row.Scan(append([]any{p.first}, dest...)...) }

// FinishResendItem records what resending the delivery at position did:
// resent (errText nil) or why it was not.
func (d *DB) FinishResendItem(ctx context.Context, orgID, batchID uuid.UUID, position int, errText *string) error {
	_, err := d.pool.Exec(ctx, `UPDATE resend_batch_items SET resent_at = CASE WHEN $4::text IS NULL THEN now() END, error = $4
		WHERE org_id = $1 AND batch_id = $2 AND position = $3`, orgID, batchID, position, errText)
	return err
}

// EndResendBatch records that a bulk resend has resent all it took.
func (d *DB) EndResendBatch(ctx context.Context, orgID, batchID uuid.UUID) error {
	_, err := d.pool.Exec(ctx, `UPDATE resend_batches SET finished_at = now() WHERE org_id = $1 AND id = $2 AND finished_at IS NULL`, orgID, batchID)
	return err
}
