package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// ResendBatch is a bulk resend and its report: what it took, how many it
// resent, and where those deliveries stand now.
type ResendBatch struct {
	ID             uuid.UUID
	SubscriptionID *uuid.UUID
	Statuses       []string
	EventType      *string
	CreatedAfter   *domain.Timestamp
	CreatedBefore  *domain.Timestamp
	CreatedBy      string
	StartedAt      domain.Timestamp
	FinishedAt     *domain.Timestamp
	// Total is how many deliveries it took; Resent how many it asked an
	// attempt of, NotResent how many it did not (Problems say why).
	Total, Resent, NotResent int
	// Of those resent: Delivered since, failed or exhausted again, and
	// still waiting for their attempt's answer.
	Delivered, Failing, Waiting int
	// Problems are the deliveries not resent, or resent and not delivered
	// (failed or exhausted again), in the batch's order: at most
	// MaxResendProblems.
	Problems []ResendProblem
}

// MaxResendProblems is the most problems a bulk resend's report lists.
const MaxResendProblems = 100

// ResendProblem is a delivery of a bulk resend that it did not resend, or
// that failed again.
type ResendProblem struct {
	DeliveryID uuid.UUID
	EventType  string
	// Status is where the delivery stands now (nil: deleted since).
	Status *domain.WebhookStatus
	// Reason is why it was not resent, else the last attempt's error.
	Reason *string
}

const resendBatchSelect = `
	SELECT b.id, b.subscription_id, b.statuses, b.event_type, b.created_after, b.created_before, b.created_by, b.started_at, b.finished_at,
	       count(i.position), count(i.resent_at), count(i.error),
	       count(*) FILTER (WHERE i.resent_at IS NOT NULL AND w.status = 'succeeded'),
	       count(*) FILTER (WHERE i.resent_at IS NOT NULL AND w.status IN ('failed', 'exhausted')),
	       count(*) FILTER (WHERE i.resent_at IS NOT NULL AND w.status NOT IN ('succeeded', 'failed', 'exhausted'))
	FROM resend_batches b
	LEFT JOIN resend_batch_items i ON i.org_id = b.org_id AND i.batch_id = b.id
	LEFT JOIN webhook_deliveries w ON w.org_id = i.org_id AND w.id = i.delivery_id`

func scanResendBatch(row pgx.Row) (ResendBatch, error) {
	var b ResendBatch
	err := row.Scan(&b.ID, &b.SubscriptionID, &b.Statuses, &b.EventType, &b.CreatedAfter, &b.CreatedBefore, &b.CreatedBy, &b.StartedAt, &b.FinishedAt,
		&b.Total, &b.Resent, &b.NotResent, &b.Delivered, &b.Failing, &b.Waiting)
	return b, err
}

// GetResendBatch returns one of the organisation's bulk resends with its
// report.
func (d *DB) GetResendBatch(ctx context.Context, orgID, id uuid.UUID) (ResendBatch, error) {
	b, err := scanResendBatch(d.pool.QueryRow(ctx, resendBatchSelect+` WHERE b.org_id = $1 AND b.id = $2 GROUP BY b.id`, orgID, id))
	if err != nil {
		return b, notFound(err, "bulk resend")
	}
	rows, err := d.pool.Query(ctx, `
		SELECT i.delivery_id, coalesce(e.type, ''), w.status, coalesce(i.error, w.last_error)
		FROM resend_batch_items i
		LEFT JOIN webhook_deliveries w ON w.org_id = i.org_id AND w.id = i.delivery_id
		LEFT JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		WHERE i.org_id = $1 AND i.batch_id = $2
		  AND (i.error IS NOT NULL OR (i.resent_at IS NOT NULL AND (w.status IS NULL OR w.status IN ('failed', 'exhausted'))))
		ORDER BY i.position LIMIT $3`, orgID, id, MaxResendProblems)
	if err != nil {
		return b, err
	}
	b.Problems, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResendProblem, error) {
		var p ResendProblem
		err := r.Scan(&p.DeliveryID, &p.EventType, &p.Status, &p.Reason)
		return p, err
	})
	return b, err
}

// ListResendBatches lists the organisation's bulk resends with their
// reports (without problems), newest first.
func (d *DB) ListResendBatches(ctx context.Context, orgID uuid.UUID, limit int) ([]ResendBatch, error) {
	rows, err := d.pool.Query(ctx, resendBatchSelect+` WHERE b.org_id = $1 GROUP BY b.id ORDER BY b.started_at DESC, b.id DESC LIMIT $2`, orgID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResendBatch, error) { return scanResendBatch(r) })
}

// ListReplayBatches lists the organisation's bulk replays with their
// counts (without problems), newest first.
func (d *DB) ListReplayBatches(ctx context.Context, orgID uuid.UUID, limit int) ([]ReplayBatch, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT b.id, b.status, b.dry_run, b.started_at, b.finished_at, count(i.receipt_id), count(i.done_at),
		       count(*) FILTER (WHERE i.outcome = 'applied'), count(*) FILTER (WHERE i.outcome = 'unchanged'),
		       count(*) FILTER (WHERE i.outcome = 'parked'), count(*) FILTER (WHERE i.outcome = 'failed'),
		       count(*) FILTER (WHERE i.outcome = 'skipped')
		FROM replay_batches b LEFT JOIN replay_batch_items i ON i.batch_id = b.id
		WHERE b.org_id = $1 GROUP BY b.id ORDER BY b.started_at DESC, b.id DESC LIMIT $2`, orgID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ReplayBatch, error) {
		var b ReplayBatch
		err := r.Scan(&b.ID, &b.Status, &b.DryRun, &b.StartedAt, &b.FinishedAt, &b.Total, &b.Done,
			&b.Applied, &b.Unchanged, &b.Parked, &b.Failed, &b.Skipped)
		return b, err
	})
}
