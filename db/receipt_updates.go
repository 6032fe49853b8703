package db

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// ReceiptUpdate says where a receipt now stands, what its sender was
// answered, or both.
type ReceiptUpdate struct {
	// Outcome is where the post now stands; empty leaves it as it is (an
	// update that carries only the answer).
	Outcome domain.Outcome
	// WaitingFor names the record a parked post waits for; Error says why a
	// post did not go through. Both are set with the outcome.
	WaitingFor *string
	Error      *string
	// WaitingKeys are a parked post's wait keys (domain.WaitKey); they are
	// kept (inbound_receipt_waits) only while the post is parked.
	WaitingKeys []string
	// RunID is the workflow run that moved the receipt, when one did.
	RunID string
	// Status and Response are the HTTP answer the sender got; Status 0 when
	// this update carries no answer.
	Status   int
	Response []byte
}

// UpdateReceipt is the one way a receipt moves: it records the outcome (a
// final one stamps completed_at and the duration; parked clears them) and
// the answer, and a post that newly ends failed, error or unmatched
// (domain.Outcome.Failed) emits inbound.receipt.failed in the same
// transaction.
func (d *DB) UpdateReceipt(ctx context.Context, orgID, id uuid.UUID, u ReceiptUpdate) error {
	return d.inTx(ctx, func(tx pgx.Tx) error { return updateReceipt(ctx, tx, orgID, id, u) })
}

// updateReceipt is UpdateReceipt within tx.
func updateReceipt(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, u ReceiptUpdate) error {
	var previous domain.Outcome
	var action domain.Action
	var endpoint uuid.UUID
	var failing bool
	var status *int
	if u.Status != 0 {
		status = &u.Status
	}
	err := tx.QueryRow(ctx, `
		UPDATE inbound_receipts r
		SET status_code = coalesce($7, r.status_code),
		    response = CASE WHEN $7::int IS NULL THEN r.response ELSE $8 END,
		    run_id = coalesce(nullif($6, ''), r.run_id),
		    outcome = CASE WHEN $3 = '' THEN r.outcome ELSE $3 END,
		    waiting_for = CASE WHEN $3 = '' THEN r.waiting_for ELSE $4 END,
		    error = CASE WHEN $3 = '' THEN r.error ELSE $5 END,
		    completed_at = CASE WHEN $3 = '' THEN r.completed_at
		                        WHEN $3 IN ('parked', 'pending') THEN NULL ELSE clock_timestamp() END,
		    duration_ms = CASE WHEN $3 = '' THEN r.duration_ms
		                       WHEN $3 IN ('parked', 'pending') THEN NULL
		                       ELSE (extract(epoch FROM clock_timestamp() - r.received_at) * 1000)::int END
		FROM inbound_receipts old
		WHERE r.org_id = $1 AND r.id = $2 AND old.org_id = r.org_id AND old.id = r.id
		RETURNING old.outcome, r.action, r.endpoint_id,
		          (SELECT e.failing_since IS NOT NULL FROM inbound_endpoints e WHERE e.org_id = r.org_id AND e.id = r.endpoint_id)`,
		orgID, id, string(u.Outcome), u.WaitingFor, u.Error, u.RunID, status, jsonOrNil(u.Response)).Scan(&previous, &action, &endpoint, &failing)
	if err != nil {
		return notFound(err, "receipt")
	}
	if err := setWaits(ctx, tx, orgID, id, u); err != nil {
		return err
	}
	if previous != u.Outcome {
		if err := resolveReceipts(ctx, tx, orgID, id, u.Outcome); err != nil {
			return err
		}
		if _, err := endpointOutcome(ctx, tx, orgID, endpoint, u.Outcome, &failing); err != nil {
			return err
		}
	}
	if !u.Outcome.Failed() || previous == u.Outcome {
		return nil
	}
	return emitFor(ctx, tx, orgID, &id, domain.InboundReceiptFailed.New(domain.InboundReceiptFailedData{
		ReceiptID: id, EndpointID: endpoint, Action: action, Outcome: u.Outcome, Error: u.Error}))
}

// setWaits keeps a receipt's wait keys (inbound_receipt_waits) while it is
// parked: an update that moves it sets them anew ('*' when it names none,
// which any load of the organisation wakes), or clears them.
func setWaits(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, u ReceiptUpdate) error {
	if u.Outcome == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM inbound_receipt_waits WHERE org_id = $1 AND receipt_id = $2`, orgID, id); err != nil {
		return err
	}
	if u.Outcome != domain.OutcomeParked {
		return nil
	}
	keys := u.WaitingKeys
	if len(keys) == 0 {
		keys = []string{anyRecord}
	}
	_, err := tx.Exec(ctx, `INSERT INTO inbound_receipt_waits (org_id, receipt_id, key)
		SELECT $1, $2, k FROM unnest($3::text[]) k ON CONFLICT DO NOTHING`, orgID, id, keys)
	return err
}

func jsonOrNil(b []byte) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return string(b)
}
