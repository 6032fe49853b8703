package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/commerce-integration/commerce/domain"
)

func date(t *testing.T, s string) domain.Date {
	t.Helper()
	d, err := domain.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestQuoteExpiresAtTheEndOfItsValidUntilDay(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	start := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	env.SetStartTime(start)
	var a *activityStub
	var calledAt time.Time
	env.OnActivity(a.ExpireQuote, mockCtx, domain.ExpireQuoteInput{OrgID: orgID, QuoteID: quoteID}).
		Return(func(context.Context, domain.ExpireQuoteInput) (domain.ExpireQuoteResult, error) {
			calledAt = env.Now()
			return domain.ExpireQuoteResult{Expired: true, Status: domain.QuoteExpired}, nil
		}).Once()

	env.ExecuteWorkflow(QuoteExpiry, domain.QuoteExpiryInput{OrgID: orgID, QuoteID: quoteID, ValidUntil: date(t, "2026-12-31")})

	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow did not complete: %v", env.GetWorkflowError())
	}
	if want := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC); calledAt.Before(want) || calledAt.After(want.Add(time.Minute)) {
		t.Fatalf("quote expired at %v, want %v", calledAt, want)
	}
	var res domain.ExpireQuoteResult
	if err := env.GetWorkflowResult(&res); err != nil || !res.Expired {
		t.Fatalf("result = %+v, %v", res, err)
	}
	env.AssertExpectations(t)
}

func TestQuoteExpiryWaitsAgainWhenValidUntilMoved(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	var a *activityStub
	later := date(t, "2026-12-15")
	var calls []time.Time
	env.OnActivity(a.ExpireQuote, mockCtx, domain.ExpireQuoteInput{OrgID: orgID, QuoteID: quoteID}).
		Return(func(context.Context, domain.ExpireQuoteInput) (domain.ExpireQuoteResult, error) {
			calls = append(calls, env.Now())
			if len(calls) == 1 {
				return domain.ExpireQuoteResult{Status: domain.QuoteSent, ValidUntil: &later}, nil
			}
			return domain.ExpireQuoteResult{Expired: true, Status: domain.QuoteExpired, ValidUntil: &later}, nil
		}).Twice()

	env.ExecuteWorkflow(QuoteExpiry, domain.QuoteExpiryInput{OrgID: orgID, QuoteID: quoteID, ValidUntil: date(t, "2026-12-01")})

	if env.GetWorkflowError() != nil || len(calls) != 2 {
		t.Fatalf("error %v after %d calls", env.GetWorkflowError(), len(calls))
	}
	if !calls[0].Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)) || !calls[1].Equal(time.Date(2026, 12, 16, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("calls at %v, want the ends of 1 and 15 December", calls)
	}
}

func TestQuoteExpiryStopsWhenQuoteWasAccepted(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	var a *activityStub
	later := date(t, "2027-06-30")
	env.OnActivity(a.ExpireQuote, mockCtx, domain.ExpireQuoteInput{OrgID: orgID, QuoteID: quoteID}).
		Return(domain.ExpireQuoteResult{Status: domain.QuoteAccepted, ValidUntil: &later}, nil).Once()
	env.ExecuteWorkflow(QuoteExpiry, domain.QuoteExpiryInput{OrgID: orgID, QuoteID: quoteID, ValidUntil: date(t, "2026-11-30")})
	var res domain.ExpireQuoteResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Expired || res.Status != domain.QuoteAccepted {
		t.Fatalf("result = %+v, %v", res, err)
	}
	env.AssertExpectations(t)
}

var (
	orgID   = uuid.MustParse("0193e3c0-0000-7000-8000-000000000001")
	quoteID = uuid.MustParse("0193e3c0-0000-7000-8000-000000000002")
	mockCtx = mock.Anything
)
