package db

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// parked is the answer of a post that waits for a record: what names it
// for people, keys (domain.WaitKey) for the load that creates it.
func parked(what string, keys ...string) (domain.InboundResult, error) {
	return domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: what, WaitingKeys: keys}, nil
}

// waitKey is the wait key of ref under kind, or none when ref is nil.
func waitKey(kind string, ref *string) []string {
	if ref == nil {
		return nil
	}
	return []string{domain.WaitKey(kind, *ref)}
}

// applied is the result of a post that went through: outcome applied, or
// unchanged without changes, with the action's own answer fields.
func applied(changes []domain.Change, answer domain.ActionAnswer) domain.InboundResult {
	out := domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200, Changes: changes, Extras: domain.AnswerFields(answer)}
	if len(changes) == 0 {
		out.Outcome = domain.OutcomeUnchanged
	}
	if out.Changes == nil {
		out.Changes = []domain.Change{}
	}
	return out
}

// ApplyInbound carries out a post (read with domain.ParseInbound) in one
// transaction. Its effect is keyed by source, the receipt that first caused
// it (the original receipt, for a replay): when that receipt's effect was
// recorded before (a retried activity, a replay), the recorded result is
// returned and nothing is applied again. A post that names a record that
// does not exist yet is parked (nothing is written). Business rejections are
// domain errors (409, 422, ...).
//
// receipt is the receipt being run (source itself, or a replay of it).
// When another receipt applied the effect, this run changes nothing: it is
// unchanged, with no changes, as its dry run said; a retry of the run that
// applied it answers that run's result.
func (d *DB) ApplyInbound(ctx context.Context, orgID, receipt, source uuid.UUID, body domain.InboundBody, baseURL string) (domain.InboundResult, error) {
	res, _, err := d.applyInbound(ctx, orgID, receipt, source, body, baseURL, false, nil)
	return res, err
}

// ApplyInboundAndRecord is ApplyInbound, and when then returns an update
// for the result, it moves the receipt (UpdateReceipt) in the same
// transaction: a post and the outcome that ends it commit together, or
// neither does. recorded says whether it did.
func (d *DB) ApplyInboundAndRecord(ctx context.Context, orgID, receipt, source uuid.UUID, body domain.InboundBody, baseURL string,
	then func(domain.InboundResult) (ReceiptUpdate, bool)) (res domain.InboundResult, recorded bool, err error) {
	return d.applyInbound(ctx, orgID, receipt, source, body, baseURL, false, then)
}

// errDryRun rolls back the transaction of a dry run.
var errDryRun = errors.New("dry run: rolled back")

// DryRunInbound works out what ApplyInbound would do, in a transaction that
// is rolled back: nothing is written, no event is emitted. A post whose
// effect was recorded already would change nothing: it answers unchanged,
// with no changes.
func (d *DB) DryRunInbound(ctx context.Context, orgID, source uuid.UUID, body domain.InboundBody, baseURL string) (domain.InboundResult, error) {
	res, _, err := d.applyInbound(ctx, orgID, uuid.Nil, source, body, baseURL, true, nil)
	return res, err
}

func (d *DB) applyInbound(ctx context.Context, orgID, receipt, source uuid.UUID, body domain.InboundBody, baseURL string, dry bool,
	then func(domain.InboundResult) (ReceiptUpdate, bool)) (domain.InboundResult, bool, error) {
	var res domain.InboundResult
	recorded := false
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		recorded = false // a retried transaction starts again
		record := func() error {
			if then == nil {
				return nil
			}
			u, ok := then(res)
			if !ok {
				return nil
			}
			recorded = true
			return updateReceipt(ctx, tx, orgID, receipt, u)
		}
		// The events the effect emits carry the post it belongs to (the
		// column default of events.receipt_id reads this setting).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('effect:' || $1::text, 0)),
			set_config('commerce.receipt_id', $1::text, true)`, source); err != nil {
			return err
		}
		var stored []byte
		var appliedBy *uuid.UUID
		err := tx.QueryRow(ctx, `SELECT result, applied_by FROM inbound_effects WHERE org_id = $1 AND receipt_id = $2`, orgID, source).Scan(&stored, &appliedBy)
		if err == nil && (dry || (appliedBy != nil && *appliedBy != receipt)) {
			res = domain.InboundResult{Outcome: domain.OutcomeUnchanged, Status: 200, Changes: []domain.Change{}}
			if dry {
				return errDryRun
			}
			return record()
		}
		if err == nil {
			if err := json.Unmarshal(stored, &res); err != nil {
				return err
			}
			return record()
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		res, err = body.ApplyTo(&actor{ctx: ctx, tx: tx, org: orgID, source: source, baseURL: baseURL})
		if err != nil || res.Parked() {
			return err
		}
		if dry {
			return errDryRun
		}
		if _, err = tx.Exec(ctx, `INSERT INTO inbound_effects (org_id, receipt_id, result, applied_by) VALUES ($1, $2, $3, $4)`, orgID, source, res, receipt); err != nil {
			return err
		}
		return record()
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return domain.InboundResult{}, false, err
	}
	return res, recorded, nil
}

// actor carries out one inbound post within its transaction: each of its
// domain.ActionApplier methods is one action.
type actor struct {
	ctx context.Context
	tx  pgx.Tx
	org uuid.UUID
	// source is the receipt that first caused the effect (the original,
	// for a replay).
	source  uuid.UUID
	baseURL string
}

var _ domain.ActionApplier = (*actor)(nil)

// nonNil is s, or an empty slice for nil: a list in an answer is [], not
// null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
