package workflows

import (
	"context"

	"github.com/commerce-integration/commerce/domain"
)

// Activities is what the workflows ask of the world: the signatures of the
// activities they call. Package activities implements it, and the worker
// registers that implementation (Register). Workflows call each activity by
// its name, the method's name, which is also what their histories record.
type Activities interface {
	// ApplyInbound carries out an inbound post's action once.
	ApplyInbound(context.Context, domain.InboundInput) (domain.InboundResult, error)
	// ApplyInboundStep carries out an inbound post's action once and, when
	// that ends the post, records its outcome in the same step.
	ApplyInboundStep(context.Context, domain.InboundStepInput) (domain.InboundStep, error)
	// RecordOutcome stores where a receipt stands.
	RecordOutcome(context.Context, domain.RecordOutcomeInput) error
	// MatchSupplierInvoice runs a three-way match against the goods received.
	MatchSupplierInvoice(context.Context, domain.MatchInput) (domain.MatchResult, error)
	// RaiseNoReceipt ends a match that waited too long for goods.
	RaiseNoReceipt(context.Context, domain.MatchInput) (domain.MatchResult, error)
	// DeliverWebhook makes one attempt of a webhook delivery.
	DeliverWebhook(context.Context, domain.DeliverInput) (domain.DeliverResult, error)
	// AdmitRetry asks the delivery's subscription whether its automatic
	// retry may go now.
	AdmitRetry(context.Context, domain.AdmitInput) (domain.Admission, error)
	// ExpireQuote moves a quote past its valid_until to expired.
	ExpireQuote(context.Context, domain.ExpireQuoteInput) (domain.ExpireQuoteResult, error)
	// ReplayBatchChunk replays the next receipts of a bulk replay.
	ReplayBatchChunk(context.Context, domain.ReplayBatchInput) (domain.ReplayChunkResult, error)
	// EndReplayBatch marks a bulk replay ended.
	EndReplayBatch(context.Context, domain.ReplayBatchInput) error
}

// The activities' names: the methods of Activities.
const (
	applyInbound         = "ApplyInbound"
	applyInboundStep     = "ApplyInboundStep"
	recordOutcome        = "RecordOutcome"
	matchSupplierInvoice = "MatchSupplierInvoice"
	raiseNoReceipt       = "RaiseNoReceipt"
	deliverWebhook       = "DeliverWebhook"
	admitRetry           = "AdmitRetry"
	expireQuote          = "ExpireQuote"
	replayBatchChunk     = "ReplayBatchChunk"
	endReplayBatch       = "EndReplayBatch"
)
