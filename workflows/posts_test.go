package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/commerce-integration/commerce/domain"
)

// applyFunc and recordFunc stand for ApplyInbound and RecordOutcome in a
// workflow test.
type (
	applyFunc  = func(context.Context, domain.InboundInput) (domain.InboundResult, error)
	recordFunc = func(context.Context, domain.RecordOutcomeInput) error
)

// mockPost mocks a post's activities with apply and record: ApplyInbound
// and RecordOutcome, which runs recorded before oneStepPosts call, and
// ApplyInboundStep as package activities makes it of the two: apply, then
// record what domain.InboundStepInput.FinalRecord says when the step ends
// the post. A test written against apply and record holds in runs of
// either kind.
func mockPost(e *testsuite.TestWorkflowEnvironment, apply applyFunc, record recordFunc) {
	var a *activityStub
	e.OnActivity(a.ApplyInbound, mock.Anything, mock.Anything).Return(apply).Maybe()
	e.OnActivity(a.RecordOutcome, mock.Anything, mock.Anything).Return(record).Maybe()
	e.OnActivity(a.ApplyInboundStep, mock.Anything, mock.Anything).Return(func(ctx context.Context, in domain.InboundStepInput) (domain.InboundStep, error) {
		res, err := apply(ctx, in.Post)
		step := domain.InboundStep{Result: res}
		if err != nil {
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || !appErr.NonRetryable() {
				return step, err
			}
			step.Refused = &domain.Refusal{Code: domain.Code(appErr.Type()), Message: appErr.Message()}
		}
		if rec, ok := in.FinalRecord(step); ok {
			step.Recorded = record(ctx, rec) == nil
		}
		return step, nil
	}).Maybe()
}

// recordNothing is a RecordOutcome that keeps nothing.
func recordNothing(context.Context, domain.RecordOutcomeInput) error { return nil }

// applies is ApplyInbound as a testify mock: a test sets what each call
// answers with On(input).Return(result, err) or Return(applyFunc).
type applies struct{ mock.Mock }

func (m *applies) on(in any) *mock.Call { return m.On("ApplyInbound", in) }

func (m *applies) apply(ctx context.Context, in domain.InboundInput) (domain.InboundResult, error) {
	args := m.MethodCalled("ApplyInbound", in)
	if fn, ok := args.Get(0).(applyFunc); ok {
		return fn(ctx, in)
	}
	return args.Get(0).(domain.InboundResult), args.Error(1)
}

func (e *inboundEnv) onApply(in any) *mock.Call { return e.applies.on(in) }

// AssertExpectations checks the environment's mocks and the calls set on
// onApply.
func (e *inboundEnv) AssertExpectations(t *testing.T) {
	t.Helper()
	e.TestWorkflowEnvironment.AssertExpectations(t)
	e.applies.AssertExpectations(t)
}
