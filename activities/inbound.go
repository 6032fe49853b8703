package activities

import (
	"context"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// InboundInput names an inbound post to carry out: its receipt, and the
// receipt whose effect it is (the same one, or the original of a replay).
type InboundInput struct {
	OrgID      uuid.UUID     `json:"org_id"`
	EndpointID uuid.UUID     `json:"endpoint_id"`
	ReceiptID  uuid.UUID     `json:"receipt_id"`
	Source     uuid.UUID     `json:"source_receipt_id"`
	Action     domain.Action `json:"action"`
}

// InboundResult is what carrying out an inbound post did.
type InboundResult = db.InboundResult

// ApplyInbound reads the receipt's stored body, checks its shape and carries
// out its action. The effect is keyed by the source receipt, so a retry or a
// replay of a post that was applied answers the first result and changes
// nothing again. A post naming a record that does not exist yet comes back
// parked.
func (a *Activities) ApplyInbound(ctx context.Context, in InboundInput) (InboundResult, error) {
	r, err := a.DB.GetReceipt(ctx, in.ReceiptID)
	if err != nil {
		return InboundResult{}, businessError(err)
	}
	if !r.BodyComplete() {
		return InboundResult{}, businessError(domain.Errorf(domain.ETOOLARGE, "the body was over %d bytes and was not kept whole", domain.MaxInboundBody))
	}
	parsed, err := domain.ParseInbound(in.Action, r.RawBody())
	if err != nil {
		return InboundResult{}, businessError(err)
	}
	res, err := a.DB.ApplyInbound(ctx, in.OrgID, in.Source, in.Action, parsed, a.BaseURL)
	return res, businessError(err)
}

// RecordOutcomeInput says where a receipt now stands.
type RecordOutcomeInput struct {
	OrgID      uuid.UUID      `json:"org_id"`
	ReceiptID  uuid.UUID      `json:"receipt_id"`
	Outcome    domain.Outcome `json:"outcome"`
	WaitingFor string         `json:"waiting_for,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// RecordOutcome stores where a receipt stands (with the workflow run that
// moved it there).
func (a *Activities) RecordOutcome(ctx context.Context, in RecordOutcomeInput) error {
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
	return a.DB.SetReceiptOutcome(ctx, in.OrgID, in.ReceiptID, in.Outcome, waiting, errText, runID)
}

// MatchInput names a supplier invoice's three-way match.
type MatchInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	InvoiceID  uuid.UUID `json:"invoice_id"`
	POID       uuid.UUID `json:"po_id"`
	InvoiceRef string    `json:"invoice_ref"`
}

// MatchResult is where a three-way match stands.
type MatchResult = db.MatchResult

// MatchSupplierInvoice runs the three-way match of an invoice against the
// goods received so far (awaiting_receipt while there are none).
func (a *Activities) MatchSupplierInvoice(ctx context.Context, in MatchInput) (MatchResult, error) {
	res, err := a.DB.MatchSupplierInvoice(ctx, in.OrgID, in.InvoiceID)
	return res, businessError(err)
}

// RaiseNoReceipt records the no_receipt variance of an invoice for which
// nothing was received in time.
func (a *Activities) RaiseNoReceipt(ctx context.Context, in MatchInput) (MatchResult, error) {
	res, err := a.DB.RaiseNoReceipt(ctx, in.OrgID, in.InvoiceID)
	return res, businessError(err)
}
