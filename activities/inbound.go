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
	r, err := a.DB.GetReceipt(ctx, in.OrgID, in.ReceiptID)
	if err != nil {
		return domain.InboundResult{}, businessError(err)
	}
	// The input is trusted only as far as the receipt bears it out: its
	// action, and the post its effects are keyed by (itself, or the
	// original it replays).
	if r.Action != in.Action || (in.Source != r.ID && (r.ReplayOf == nil || in.Source != *r.ReplayOf)) {
		return domain.InboundResult{}, businessError(domain.Errorf(domain.EINVALID, "the workflow input does not match receipt %s", r.ID))
	}
	if !r.BodyComplete() {
		return domain.InboundResult{}, businessError(domain.Errorf(domain.ETOOLARGE, "the body was over %d bytes and was not kept whole", domain.MaxInboundBody))
	}
	// A mapped post applies the body its mapping made.
	parsed, err := domain.ParseInbound(in.Action, r.ActionBody())
	if err != nil {
		return domain.InboundResult{}, businessError(err)
	}
	res, err := a.DB.ApplyInbound(ctx, in.OrgID, in.ReceiptID, in.Source, parsed, a.BaseURL)
	a.logCause(err, zap.Stringer("org_id", in.OrgID), zap.Stringer("receipt_id", in.ReceiptID), zap.String("action", string(in.Action)))
	return res, businessError(err)
}

// RecordOutcome stores where a receipt stands (with the workflow run that
// moved it there) and, with the workflow's first answer, what its sender is
// answered: the one writer of a receipt whose workflow ran.
func (a *Activities) RecordOutcome(ctx context.Context, in domain.RecordOutcomeInput) error {
	var waiting, errText *string
	if in.WaitingFor != "" {
		waiting = &in.WaitingFor
	}
	if in.Error != "" {
		errText = &in.Error
	}
	runID := ""
	if activity.IsActivity(ctx) {
		runID = activity.GetInfo(ctx).WorkflowExecution.RunID
	}
	u := db.ReceiptUpdate{Outcome: in.Outcome, WaitingFor: waiting, WaitingKeys: in.WaitingKeys, Error: errText, RunID: runID}
	if in.Answer != nil {
		u.Status, u.Response = in.Answer.HTTPAnswer(in.ReceiptID, in.Action)
	}
	if err := a.DB.UpdateReceipt(ctx, in.OrgID, in.ReceiptID, u); err != nil {
		return err
	}
	if in.Outcome != "" {
		metrics.InboundOutcome(string(in.Action), string(in.Outcome))
	}
	return nil
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
