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
		// The original, then its other replays.
		for _, sql := range resolveByReplaySQL {
			if _, err := tx.Exec(ctx, sql, orgID, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveByReplaySQL mark resolved by receipt $2 the unresolved failures
// of its original ($1 the organisation): the original itself, then the
// original's other replays. The original's id is read once (an init plan)
// and each statement matches on one equality, so that each is planned as
// one index lookup (the key; inbound_receipts_replays) whatever the planner
// knows of the table. One statement joining the table to itself with "the
// original or one of its replays" ran for every post applied and was
// planned, on a table without statistics, as a walk of the organisation's
// failed receipts: in a long run, hundreds of milliseconds a post after a
// few thousand refused ones.
var resolveByReplaySQL = []string{
	`UPDATE inbound_receipts x SET resolved_by = 'replay', resolved_receipt = $2, resolved_at = now()
	WHERE x.org_id = $1 AND x.id = (SELECT coalesce(me.replay_of, me.id) FROM inbound_receipts me WHERE me.org_id = $1 AND me.id = $2)
	  AND x.id <> $2 AND x.outcome IN ('failed', 'error', 'unmatched', 'parked') AND x.resolved_by IS NULL`,
	`UPDATE inbound_receipts x SET resolved_by = 'replay', resolved_receipt = $2, resolved_at = now()
	WHERE x.org_id = $1 AND x.replay_of = (SELECT coalesce(me.replay_of, me.id) FROM inbound_receipts me WHERE me.org_id = $1 AND me.id = $2)
	  AND x.id <> $2 AND x.outcome IN ('failed', 'error', 'unmatched', 'parked') AND x.resolved_by IS NULL`,
}
