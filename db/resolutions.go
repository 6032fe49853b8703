package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// Resolution is what resolved a failed or parked post, or a failed or
// exhausted delivery (docs/console.md, "Resolved failures").
type Resolution struct {
	// By is replay or cancel for a post; resend, recover or bulk_resend
	// for a delivery.
	By string
	// ReceiptID is the replay that resolved a post (nil otherwise).
	ReceiptID *uuid.UUID
	// BatchID is the bulk resend that resolved a delivery (nil otherwise).
	BatchID *uuid.UUID
	At      domain.Timestamp
}

// Resolution filter values: the receipts and deliveries lists take
// resolved=false (the default of a list of failures), true or any.
const (
	ResolvedAny = "any"
)

// ParseResolved reads a resolved filter: "" is def; "any" keeps both.
func ParseResolved(s string, def *bool) (*bool, error) {
	switch s {
	case "":
		return def, nil
	case ResolvedAny:
		return nil, nil
	case "true":
		t := true
		return &t, nil
	case "false":
		f := false
		return &f, nil
	}
	return nil, domain.Errorf(domain.EINVALID, "resolved %q: want true, false or any", s)
}

// Unresolved is the resolved filter of a list of failures by default.
func Unresolved() *bool {
	f := false
	return &f
}

// FailureOutcomes reports whether outcomes name only failures (failed,
// error, unmatched, parked): such a list leaves resolved receipts out
// unless asked.
func FailureOutcomes(outcomes []domain.Outcome) bool {
	if len(outcomes) == 0 {
		return false
	}
	for _, o := range outcomes {
		if !o.Failed() && o != domain.OutcomeParked {
			return false
		}
	}
	return true
}

// resolveReceipts records, in the transaction that moved receipt id to
// outcome, what that resolves: a post cancelled on purpose resolves
// itself; one that applied or found nothing to change resolves the failed
// and parked posts of the same original (the original and its other
// replays) that nothing had resolved.
func resolveReceipts(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, outcome domain.Outcome) error {
	switch outcome {
	case domain.OutcomeCancelled:
		_, err := tx.Exec(ctx, `UPDATE inbound_receipts SET resolved_by = 'cancel', resolved_receipt = NULL, resolved_at = now()
			WHERE org_id = $1 AND id = $2 AND resolved_by IS NULL`, orgID, id)
		return err
	case domain.OutcomeApplied, domain.OutcomeUnchanged:
		_, err := tx.Exec(ctx, `
			UPDATE inbound_receipts x SET resolved_by = 'replay', resolved_receipt = me.id, resolved_at = now()
			FROM inbound_receipts me
			WHERE me.org_id = $1 AND me.id = $2 AND x.org_id = $1 AND x.id <> me.id
			  AND (x.id = coalesce(me.replay_of, me.id) OR x.replay_of = coalesce(me.replay_of, me.id))
			  AND x.outcome IN ('failed', 'error', 'unmatched', 'parked') AND x.resolved_by IS NULL`, orgID, id)
		return err
	}
	return nil
}
