package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// replayInFlightSQL finds a replay of a source receipt that is still
// running or parked ($1 org, $2 source).
const replayInFlightSQL = `SELECT id FROM inbound_receipts
	WHERE org_id = $1 AND replay_of = $2 AND outcome IN ('pending', 'parked') LIMIT 1`

// ReplayInFlight returns a replay of the source receipt that is still
// pending or parked, or uuid.Nil when there is none.
func (d *DB) ReplayInFlight(ctx context.Context, orgID, sourceID uuid.UUID) (uuid.UUID, error) {
	return replayInFlight(ctx, d.pool, orgID, sourceID)
}

func replayInFlight(ctx context.Context, q querier, orgID, sourceID uuid.UUID) (uuid.UUID, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, replayInFlightSQL, orgID, sourceID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil
	}
	return id, err
}

// StoreReplay records the receipt of a replay of r.ReplayOf, unless another
// replay of it is still pending or parked: then it stores nothing and
// returns that replay's id as inFlight. Replays of one source are
// serialised on its row, so two at once cannot both be stored.
func (d *DB) StoreReplay(ctx context.Context, r NewReceipt) (id, inFlight uuid.UUID, err error) {
	return d.storeReplay(ctx, r, nil)
}

// errClaimed rolls back a replay whose batch item has a replay already.
var errClaimed = errors.New("the batch item has a replay already")

// storeReplay is StoreReplay, with then run in its transaction after the
// receipt is inserted (its error rolls everything back).
func (d *DB) storeReplay(ctx context.Context, r NewReceipt, then func(pgx.Tx, uuid.UUID) error) (id, inFlight uuid.UUID, err error) {
	if r.ReplayOf == nil {
		return uuid.Nil, uuid.Nil, errors.New("a replay names its source receipt")
	}
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		var locked uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT id FROM inbound_receipts WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			r.OrgID, *r.ReplayOf).Scan(&locked); err != nil {
			return notFound(err, "receipt")
		}
		var err error
		if inFlight, err = replayInFlight(ctx, tx, r.OrgID, *r.ReplayOf); err != nil || inFlight != uuid.Nil {
			return err
		}
		if id, err = insertReceipt(ctx, tx, r); err != nil || then == nil {
			return err
		}
		return then(tx, id)
	})
	return id, inFlight, err
}

// UnstartedReceipts lists, oldest first and across organisations (the
// worker's sweep), up to limit receipts received more than olderThan ago
// (and within the park period) that are still pending with no run
// recorded, after the receipt after (uuid.Nil for the first page):
// either their workflow runs and has not recorded its outcome yet, or it
// never started because the process that stored the receipt died first.
// Starting them again by workflow ID tells the two apart.
func (d *DB) UnstartedReceipts(ctx context.Context, olderThan time.Duration, after uuid.UUID, limit int) ([]domain.InboundInput, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT org_id, endpoint_id, id, coalesce(replay_of, id), action, coalesce(refs[1], '') FROM inbound_receipts
		WHERE outcome = 'pending' AND run_id IS NULL
		  AND received_at < now() - make_interval(secs => $1) AND received_at > now() - make_interval(days => 8)
		  AND ($2::uuid IS NULL OR (received_at, id) > (SELECT received_at, id FROM inbound_receipts WHERE id = $2))
		ORDER BY received_at, id LIMIT $3`, olderThan.Seconds(), nullUUID(after), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.InboundInput, error) {
		var in domain.InboundInput
		err := r.Scan(&in.OrgID, &in.EndpointID, &in.ReceiptID, &in.Source, &in.Action, &in.Ref)
		return in, err
	})
}

func nullUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
