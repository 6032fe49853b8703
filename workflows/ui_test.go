package workflows

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/commerce-integration/commerce/domain"
)

// upserts records the values a run gives key, in order.
func upserts(e *testsuite.TestWorkflowEnvironment, key temporal.SearchAttributeKeyKeyword) *[]string {
	var got []string
	e.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeyword(key); ok {
			got = append(got, v)
		}
	}).Return(nil)
	return &got
}

// details is the run's current details, as the Temporal UI reads them.
func details(t *testing.T, e *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := e.QueryWorkflow("__temporal_workflow_metadata")
	if err != nil {
		t.Fatal(err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	return md.GetCurrentDetails()
}

func TestInboundRunShowsItsOutcomeAndDetailsForTheTemporalUI(t *testing.T) {
	e := newInboundEnv(t)
	got := upserts(e.TestWorkflowEnvironment, OutcomeAttr)
	in := inboundIn
	in.Ref = "SO-2026-0204"
	e.onApply(in).
		Return(domain.InboundResult{}, temporal.NewNonRetryableApplicationError("currency EUR does not match the order's GBP", string(domain.EUNPROCESSABLE), nil)).Once()
	e.ExecuteWorkflow(InboundAction, in)
	want := "erp_order_status SO-2026-0204: failed 422 currency EUR does not match the order's GBP"
	// The run ends Failed, its failure the line of its details, and the
	// post's answer in the failure's details.
	endedAs(t, e.GetWorkflowError(), ErrTypeInboundFailed)
	var appErr *temporal.ApplicationError
	if errors.As(e.GetWorkflowError(), &appErr); appErr.Message() != want {
		t.Fatalf("the run's failure reads %q, want %q", appErr.Message(), want)
	}
	var answer domain.InboundOutcome
	if err := appErr.Details(&answer); err != nil || answer.Status() != 422 || answer.Code != domain.EUNPROCESSABLE {
		t.Fatalf("the failure's details %+v (%v), want the post's 422 answer", answer, err)
	}
	if !slices.Equal(*got, []string{"failed"}) {
		t.Fatalf("CommerceOutcome set to %q, want [failed]", *got)
	}
	if d := details(t, e.TestWorkflowEnvironment); d != want {
		t.Fatalf("details %q, want %q", d, want)
	}
}

// A parked post cancelled on purpose ends Canceled, not Completed or
// Failed: that is what happened to it.
func TestACancelledPostsRunEndsCanceled(t *testing.T) {
	e := newInboundEnv(t)
	e.onApply(inboundIn).
		Return(domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: `order "SO-9"`}, nil)
	e.RegisterDelayedCallback(e.CancelWorkflow, time.Hour)
	e.ExecuteWorkflow(InboundAction, inboundIn)
	if err := e.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("the run ended with %v, want canceled", err)
	}
	if got := e.last(); got.Outcome != domain.OutcomeCancelled {
		t.Fatalf("recorded %+v, want cancelled", e.outcomes)
	}
}

// endedAs checks how a run closed: Failed with a non-retryable application
// error of type typ, or, typ "", Completed.
func endedAs(t *testing.T, err error, typ string) {
	t.Helper()
	if typ == "" {
		if err != nil {
			t.Fatalf("the run failed: %v", err)
		}
		return
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != typ || !appErr.NonRetryable() {
		t.Fatalf("the run ended with %v, want a non-retryable %s", err, typ)
	}
}

func TestParkedRunShowsParkedThenApplied(t *testing.T) {
	e := newInboundEnv(t)
	got := upserts(e.TestWorkflowEnvironment, OutcomeAttr)
	parked := domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: `order "SO-9"`, WaitingKeys: []string{"order:SO-9"}}
	e.onApply(inboundIn).Return(parked, nil).Once()
	e.onApply(inboundIn).Return(domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200}, nil)
	e.RegisterDelayedCallback(func() {
		if d := details(t, e.TestWorkflowEnvironment); d != `erp_order_status: parked 202, waiting for order "SO-9"` {
			t.Errorf("details while parked %q", d)
		}
		e.SignalWorkflow(RecordCreatedSignal, domain.RecordsCreated{Keys: []string{"order:SO-9"}})
	}, ParkRecheck/2)
	e.ExecuteWorkflow(InboundAction, inboundIn)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*got, []string{"parked", "applied"}) {
		t.Fatalf("CommerceOutcome set to %q, want [parked applied]", *got)
	}
	if d := details(t, e.TestWorkflowEnvironment); d != "erp_order_status: applied" {
		t.Fatalf("details %q", d)
	}
}

func TestDeliveryRunShowsItsStatusAfterEachAttempt(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverDown, receiverOK)
	got := upserts(e.TestWorkflowEnvironment, DeliveryStatusAttr)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*got, []string{"failed", "failed", "delivered"}) {
		t.Fatalf("CommerceDeliveryStatus set to %q, want [failed failed delivered]", *got)
	}
	if d := details(t, e.TestWorkflowEnvironment); d != "delivered 200 after 3 attempt(s)" {
		t.Fatalf("details %q", d)
	}

	e = newWebhookEnv(receiverDown)
	got = upserts(e.TestWorkflowEnvironment, DeliveryStatusAttr)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	if len(*got) != 5 || (*got)[4] != "exhausted" || (*got)[3] != "failed" {
		t.Fatalf("CommerceDeliveryStatus set to %q, want four failed then exhausted", *got)
	}
	if d := details(t, e.TestWorkflowEnvironment); d != "exhausted 503 after 5 attempt(s)" {
		t.Fatalf("details %q", d)
	}
}
