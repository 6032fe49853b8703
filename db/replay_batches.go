package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// MaxReplayBatch is the most receipts one bulk replay takes.
const MaxReplayBatch = 10000

// NewReplayBatch is a bulk replay to record: the receipts it takes are the
// originals (not replays) of the organisation the filter selects.
type NewReplayBatch struct {
	OrgID          uuid.UUID
	EndpointID     *uuid.UUID
	Outcomes       []domain.Outcome
	ReceivedAfter  *time.Time
	ReceivedBefore *time.Time
	// Ref selects as the receipts list's ref filter does.
	Ref       string
	DryRun    bool
	CreatedBy string
	// Mapping chooses the mapping each receipt's body is mapped with again.
	Mapping domain.MappingChoice
	// IncludeResolved takes the receipts a replay resolved as well;
	// without it they are left out. (A cancelled receipt is resolved by
	// its cancellation, and a batch that names the outcome cancelled
	// takes it.)
	IncludeResolved bool
}

// filter is the receipts list filter that selects the batch's receipts.
func (in NewReplayBatch) filter() OrgReceiptFilter {
	return OrgReceiptFilter{EndpointID: in.EndpointID, Outcomes: in.Outcomes, ReceivedAfter: in.ReceivedAfter,
		ReceivedBefore: in.ReceivedBefore, Ref: in.Ref, ExceptReplayed: !in.IncludeResolved}
}

// ReplayBatch is a bulk replay and its progress.
type ReplayBatch struct {
	ID uuid.UUID
	// Status is running, completed or stopped.
	Status     string
	DryRun     bool
	Total      int
	Done       int
	Applied    int
	Unchanged  int
	Parked     int
	Failed     int
	Skipped    int
	StartedAt  domain.Timestamp
	FinishedAt *domain.Timestamp
	// Problems are the receipts that failed or were skipped so far.
	Problems []ReplayBatchProblem
}

// CreateReplayBatch records a bulk replay and its receipts, oldest first,
// in one transaction. More than MaxReplayBatch receipts is EINVALID, and
// nothing is recorded.
func (d *DB) CreateReplayBatch(ctx context.Context, in NewReplayBatch) (uuid.UUID, int, error) {
	id := NewID()
	var n int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO replay_batches (id, org_id, endpoint_id, outcomes, received_after, received_before, ref, dry_run, created_by, mapping_version)
			VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), $8, $9, $10)`,
			id, in.OrgID, in.EndpointID, in.Outcomes, in.ReceivedAfter, in.ReceivedBefore, in.Ref, in.DryRun, in.CreatedBy, in.Mapping.String()); err != nil {
			return err
		}
		c := in.filter().conds(in.OrgID)
		c.parts = append(c.parts, "r.replay_of IS NULL")
		tag, err := tx.Exec(ctx, `
			INSERT INTO replay_batch_items (org_id, batch_id, position, receipt_id)
			SELECT r.org_id, `+c.param(id)+`, row_number() OVER (ORDER BY r.received_at, r.id), r.id
			FROM (SELECT r.org_id, r.id, r.received_at FROM inbound_receipts r WHERE `+c.where()+`
			      ORDER BY r.received_at, r.id LIMIT `+c.param(MaxReplayBatch+1)+`) r`, c.args...)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		if n > MaxReplayBatch {
			return domain.Errorf(domain.EINVALID, "more than %d receipts match: narrow the filters (endpoint, outcome, received_after, received_before, ref)", MaxReplayBatch)
		}
		return nil
	})
	return id, n, err
}

// CountReplaySelection counts the receipts a bulk replay of in would
// cover (up to MaxReplayBatch+1: more is refused), for the confirmation
// that names how many.
func (d *DB) CountReplaySelection(ctx context.Context, in NewReplayBatch) (int, error) {
	c := in.filter().conds(in.OrgID)
	c.parts = append(c.parts, "r.replay_of IS NULL")
	var n int
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM inbound_receipts r WHERE `+c.where()+`
		LIMIT `+c.param(MaxReplayBatch+1)+`) s`, c.args...).Scan(&n)
	return n, err
}

// FirstOfReplaySelection returns the first n receipts a bulk replay of in
// would take, in its order (oldest first), for the form to show before it
// starts.
func (d *DB) FirstOfReplaySelection(ctx context.Context, in NewReplayBatch, n int) ([]Receipt, error) {
	c := in.filter().conds(in.OrgID)
	c.parts = append(c.parts, "r.replay_of IS NULL")
	rows, err := d.pool.Query(ctx, `SELECT `+receiptColumns+` FROM inbound_receipts r WHERE `+c.where()+`
		ORDER BY r.received_at, r.id LIMIT `+c.param(n), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) { return scanReceipt(r) })
}

// GetReplayBatch returns one of the organisation's bulk replays with its
// progress, counted from its receipts.
func (d *DB) GetReplayBatch(ctx context.Context, orgID, id uuid.UUID) (ReplayBatch, error) {
	var b ReplayBatch
	err := d.pool.QueryRow(ctx, `
		SELECT b.id, b.status, b.dry_run, b.started_at, b.finished_at, count(i.receipt_id), count(i.done_at),
		       count(*) FILTER (WHERE i.outcome = 'applied'), count(*) FILTER (WHERE i.outcome = 'unchanged'),
		       count(*) FILTER (WHERE i.outcome = 'parked'), count(*) FILTER (WHERE i.outcome = 'failed'),
		       count(*) FILTER (WHERE i.outcome = 'skipped')
		FROM replay_batches b LEFT JOIN replay_batch_items i ON i.batch_id = b.id
		WHERE b.org_id = $1 AND b.id = $2 GROUP BY b.id`, orgID, id).Scan(
		&b.ID, &b.Status, &b.DryRun, &b.StartedAt, &b.FinishedAt, &b.Total, &b.Done,
		&b.Applied, &b.Unchanged, &b.Parked, &b.Failed, &b.Skipped)
	if err != nil {
		return b, notFound(err, "replay batch")
	}
	b.Problems, err = d.ReplayBatchProblems(ctx, orgID, id)
	return b, err
}

// ReplayBatchProblem is a receipt of a bulk replay that was not replayed
// as asked: its replay failed, or the replay rules skipped it.
type ReplayBatchProblem struct {
	ReceiptID  uuid.UUID
	ReceivedAt domain.Timestamp
	Refs       []string
	Outcome    string
	Reason     *string
	// ReplayID is the replay stored for it, when one was.
	ReplayID *uuid.UUID
}

// ReplayBatchProblems lists the receipts of one of the organisation's bulk
// replays that failed or were skipped, in the batch's order: at most
// MaxReplayBatch, the most a batch takes.
func (d *DB) ReplayBatchProblems(ctx context.Context, orgID, batchID uuid.UUID) ([]ReplayBatchProblem, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT i.receipt_id, r.received_at, coalesce(r.refs, '{}'), i.outcome, i.reason, i.replay_receipt_id
		FROM replay_batch_items i JOIN inbound_receipts r ON r.org_id = i.org_id AND r.id = i.receipt_id
		WHERE i.org_id = $1 AND i.batch_id = $2 AND i.outcome IN ('failed', 'skipped')
		ORDER BY i.position`, orgID, batchID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ReplayBatchProblem, error) {
		var p ReplayBatchProblem
		err := r.Scan(&p.ReceiptID, &p.ReceivedAt, &p.Refs, &p.Outcome, &p.Reason, &p.ReplayID)
		return p, err
	})
	if out == nil {
		out = []ReplayBatchProblem{}
	}
	return out, err
}

// ReplayBatchItem is a receipt of a batch still to be handled.
type ReplayBatchItem struct {
	ReceiptID uuid.UUID
	// ReplayReceiptID is the replay stored for it, when one was (a worker
	// that stored it may have died before it was handled).
	ReplayReceiptID *uuid.UUID
}

// NextReplayBatchItems returns up to limit receipts of a batch still to be
// handled, in order; none when the batch is over or was stopped.
func (d *DB) NextReplayBatchItems(ctx context.Context, orgID, batchID uuid.UUID, limit int) ([]ReplayBatchItem, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT i.receipt_id, i.replay_receipt_id FROM replay_batch_items i
		JOIN replay_batches b ON b.org_id = i.org_id AND b.id = i.batch_id
		WHERE i.org_id = $1 AND i.batch_id = $2 AND i.done_at IS NULL AND b.status = 'running'
		ORDER BY i.position LIMIT $3`, orgID, batchID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ReplayBatchItem, error) {
		var it ReplayBatchItem
		err := r.Scan(&it.ReceiptID, &it.ReplayReceiptID)
		return it, err
	})
}

// FinishReplayBatchItem records how a receipt of a batch came out: applied,
// unchanged, parked, failed or skipped (with the reason).
func (d *DB) FinishReplayBatchItem(ctx context.Context, orgID, batchID, receiptID uuid.UUID, outcome, reason string) error {
	var r *string
	if reason != "" {
		r = &reason
	}
	_, err := d.pool.Exec(ctx, `
		UPDATE replay_batch_items SET outcome = $4, reason = $5, done_at = now()
		WHERE org_id = $1 AND batch_id = $2 AND receipt_id = $3 AND done_at IS NULL`, orgID, batchID, receiptID, outcome, r)
	return err
}

// EndReplayBatch marks a batch completed or stopped (a batch already ended
// stays as it ended).
func (d *DB) EndReplayBatch(ctx context.Context, orgID, batchID uuid.UUID, status string) error {
	_, err := d.pool.Exec(ctx, `
		UPDATE replay_batches SET status = $3, finished_at = now()
		WHERE org_id = $1 AND id = $2 AND status = 'running'`, orgID, batchID, status)
	return err
}

// StoreBatchReplay records the replay receipt of a batch's receipt, as
// StoreReplay does, and claims the batch item for it in the same
// transaction: when the item has a replay already, nothing is stored and
// that replay's id is returned as existing.
func (d *DB) StoreBatchReplay(ctx context.Context, r NewReceipt, batchID, itemReceiptID uuid.UUID) (id, inFlight, existing uuid.UUID, err error) {
	id, inFlight, err = d.storeReplay(ctx, r, func(tx pgx.Tx, id uuid.UUID) error {
		err := tx.QueryRow(ctx, `
			WITH item AS (SELECT replay_receipt_id FROM replay_batch_items
			              WHERE org_id = $1 AND batch_id = $2 AND receipt_id = $3 FOR UPDATE),
			     claimed AS (UPDATE replay_batch_items SET replay_receipt_id = $4
			                 WHERE org_id = $1 AND batch_id = $2 AND receipt_id = $3 AND replay_receipt_id IS NULL
			                 RETURNING replay_receipt_id)
			SELECT coalesce((SELECT replay_receipt_id FROM item), '00000000-0000-0000-0000-000000000000'::uuid)`,
			r.OrgID, batchID, itemReceiptID, id).Scan(&existing)
		if err != nil {
			return notFound(err, "replay batch item")
		}
		if existing != uuid.Nil {
			return errClaimed
		}
		return nil
	})
	if err == errClaimed {
		return uuid.Nil, uuid.Nil, existing, nil
	}
	return id, inFlight, uuid.Nil, err
}
