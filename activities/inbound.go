package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/metrics"
)

// ApplyInbound reads the receipt's stored body, checks its shape and carries
// out its action. The effect is keyed by the source receipt, so a retry or a
// replay of a post that was applied answers the first result and changes
// nothing again. A post naming a record that does not exist yet comes back
// parked.
func (a *Activities) ApplyInbound(ctx context.Context, in domain.InboundInput) (domain.InboundResult, error) {
	res, _, err := a.applyInbound(ctx, in, nil)
	return res, businessError(err)
}

// ApplyInboundStep carries out the post as ApplyInbound does and, when
// that ends it, records its outcome as RecordOutcome would
// (domain.InboundStepInput.FinalRecord): a post that applies, or changes
// nothing, commits with its outcome in one transaction; a refusal, which
// writes nothing, is recorded in a transaction of its own and comes back
// in the step, not as an error. A step whose outcome could not be recorded
// says so (Recorded false), and the workflow records it.
func (a *Activities) ApplyInboundStep(ctx context.Context, in domain.InboundStepInput) (domain.InboundStep, error) {
	run := runID(ctx)
	var step domain.InboundStep
	res, recorded, err := a.applyInbound(ctx, in.Post, func(res domain.InboundResult) (db.ReceiptUpdate, bool) {
		rec, ok := in.FinalRecord(domain.InboundStep{Result: res})
		return receiptUpdate(rec, run), ok
	})
	step.Result, step.Recorded = res, recorded
	if err == nil {
		if recorded {
			metrics.InboundOutcome(string(in.Post.Action), string(res.Outcome))
		}
		return step, nil
	}
	if domain.ErrorCode(err) == domain.EINTERNAL {
		return step, err // a fault: the local activity is retried
	}
	step.Refused = &domain.Refusal{Code: domain.ErrorCode(err), Message: domain.ErrorMessage(err)}
	rec, _ := in.FinalRecord(step)
	if err := a.DB.UpdateReceipt(ctx, rec.OrgID, rec.ReceiptID, receiptUpdate(rec, run)); err != nil {
		if a.Log != nil {
			a.Log.Warn("could not record a refused post; the workflow records it", zap.Stringer("receipt_id", rec.ReceiptID), zap.Error(err))
		}
		return step, nil
	}
	step.Recorded = true
	metrics.InboundOutcome(string(in.Post.Action), string(rec.Outcome))
	return step, nil
}

// applyInbound reads the receipt's stored body, checks its shape and
// carries out its action; then, when given, says how to move the receipt
// in the same transaction (db.DB.ApplyInboundAndRecord). Its error is the
// domain's, not yet an activity's.
func (a *Activities) applyInbound(ctx context.Context, in domain.InboundInput, then func(domain.InboundResult) (db.ReceiptUpdate, bool)) (domain.InboundResult, bool, error) {
	r, err := a.DB.GetReceipt(ctx, in.OrgID, in.ReceiptID)
	if err != nil {
		return domain.InboundResult{}, false, err
	}
	// The input is trusted only as far as the receipt bears it out: its
	// action, and the post its effects are keyed by (itself, or the
	// original it replays).
	if r.Action != in.Action || (in.Source != r.ID && (r.ReplayOf == nil || in.Source != *r.ReplayOf)) {
		return domain.InboundResult{}, false, domain.Errorf(domain.EINVALID, "the workflow input does not match receipt %s", r.ID)
	}
	if !r.BodyComplete() {
		return domain.InboundResult{}, false, domain.Errorf(domain.ETOOLARGE, "the body was over %d bytes and was not kept whole", domain.MaxInboundBody)
	}
	// A mapped post applies the body its mapping made.
	parsed, err := domain.ParseInbound(in.Action, r.ActionBody())
	if err != nil {
		return domain.InboundResult{}, false, err
	}
	res, recorded, err := a.DB.ApplyInboundAndRecord(ctx, in.OrgID, in.ReceiptID, in.Source, parsed, a.BaseURL, then)
	a.logCause(err, zap.Stringer("org_id", in.OrgID), zap.Stringer("receipt_id", in.ReceiptID), zap.String("action", string(in.Action)))
	return res, recorded, err
}

// RecordOutcome stores where a receipt stands (with the workflow run that
// moved it there) and, with the workflow's first answer, what its sender is
// answered: the one writer of a receipt whose workflow ran.
func (a *Activities) RecordOutcome(ctx context.Context, in domain.RecordOutcomeInput) error {
	if err := a.DB.UpdateReceipt(ctx, in.OrgID, in.ReceiptID, receiptUpdate(in, runID(ctx))); err != nil {
		return err
	}
	if in.Outcome != "" {
		metrics.InboundOutcome(string(in.Action), string(in.Outcome))
	}
	return nil
}

// receiptUpdate is how a record moves its receipt, by the workflow run
// runID.
func receiptUpdate(in domain.RecordOutcomeInput, runID string) db.ReceiptUpdate {
	var waiting, errText *string
	if in.WaitingFor != "" {
		waiting = &in.WaitingFor
	}
	if in.Error != "" {
		errText = &in.Error
	}
	u := db.ReceiptUpdate{Outcome: in.Outcome, WaitingFor: waiting, WaitingKeys: in.WaitingKeys, Error: errText, RunID: runID}
	if in.Answer != nil {
		u.Status, u.Response = in.Answer.HTTPAnswer(in.ReceiptID, in.Action)
	}
	return u
}

// runID is the workflow run of the activity ctx runs, if any.
func runID(ctx context.Context) string {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).WorkflowExecution.RunID
	}
	return ""
}

// MatchSupplierInvoice runs the three-way match of an invoice against the
// goods received so far (awaiting_receipt while there are none).
func (a *Activities) MatchSupplierInvoice(ctx context.Context, in domain.MatchInput) (domain.MatchResult, error) {
	res, err := a.DB.MatchSupplierInvoice(ctx, in.OrgID, in.InvoiceID)
	return res, businessError(err)
}

// RaiseNoReceipt records the no_receipt variance of an invoice for which
// nothing was received in time.
func (a *Activities) RaiseNoReceipt(ctx context.Context, in domain.MatchInput) (domain.MatchResult, error) {
	res, err := a.DB.RaiseNoReceipt(ctx, in.OrgID, in.InvoiceID)
	return res, businessError(err)
}
