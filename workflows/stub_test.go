package workflows

import (
	"context"

	"github.com/commerce-integration/commerce/domain"
)

// activityStub stands for package activities in the workflow tests: its
// methods have the activities' names and signatures, so that
// env.OnActivity mocks each one by its method value, under the name the
// worker registers it by. No test calls them.
type activityStub struct{}

var _ Activities = (*activityStub)(nil)

func (*activityStub) ApplyInbound(context.Context, domain.InboundInput) (domain.InboundResult, error) {
	panic("mocked")
}
func (*activityStub) ApplyInboundStep(context.Context, domain.InboundStepInput) (domain.InboundStep, error) {
	panic("mocked")
}
func (*activityStub) RecordOutcome(context.Context, domain.RecordOutcomeInput) error { panic("mocked") }
func (*activityStub) MatchSupplierInvoice(context.Context, domain.MatchInput) (domain.MatchResult, error) {
	panic("mocked")
}
func (*activityStub) RaiseNoReceipt(context.Context, domain.MatchInput) (domain.MatchResult, error) {
	panic("mocked")
}
func (*activityStub) DeliverWebhook(context.Context, domain.DeliverInput) (domain.DeliverResult, error) {
	panic("mocked")
}
func (*activityStub) AdmitRetry(context.Context, domain.AdmitInput) (domain.Admission, error) {
	panic("mocked")
}
func (*activityStub) ExpireQuote(context.Context, domain.ExpireQuoteInput) (domain.ExpireQuoteResult, error) {
	panic("mocked")
}
func (*activityStub) ReplayBatchChunk(context.Context, domain.ReplayBatchInput) (domain.ReplayChunkResult, error) {
	panic("mocked")
}
func (*activityStub) EndReplayBatch(context.Context, domain.ReplayBatchInput) error { panic("mocked") }
