package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

var inboundIn = domain.InboundInput{
	OrgID: orgID, EndpointID: uuid.MustParse("0193e3c0-0000-7000-8000-000000000010"),
	ReceiptID: uuid.MustParse("0193e3c0-0000-7000-8000-000000000011"), Source: uuid.MustParse("0193e3c0-0000-7000-8000-000000000011"),
	Action: domain.ActionERPOrderStatus,
}

// inboundEnv is a test workflow environment that records the outcomes the
// workflow stores and asks for its answer as the HTTP handler does.
type inboundEnv struct {
	*testsuite.TestWorkflowEnvironment
	outcomes []domain.RecordOutcomeInput
	answer   *domain.InboundOutcome
	answerAt time.Time
	applies  applies
	// failRecords is how many records fail (a database fault) before
	// records are kept.
	failRecords int
}

func newInboundEnv(t *testing.T) *inboundEnv {
	var s testsuite.WorkflowTestSuite
	e := &inboundEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment()}
	e.SetStartTime(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	mockPost(e.TestWorkflowEnvironment, e.applies.apply, func(_ context.Context, in domain.RecordOutcomeInput) error {
		if e.failRecords > 0 {
			e.failRecords--
			return errors.New("the database is out of reach")
		}
		e.outcomes = append(e.outcomes, in)
		return nil
	})
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(AnswerUpdate, "answer-1", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("answer update rejected: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("answer update failed: %v", err)
					return
				}
				out := v.(domain.InboundOutcome)
				e.answer, e.answerAt = &out, e.Now()
			},
		})
	}, 0)
	return e
}

func (e *inboundEnv) last() domain.RecordOutcomeInput {
	if len(e.outcomes) == 0 {
		return domain.RecordOutcomeInput{}
	}
	return e.outcomes[len(e.outcomes)-1]
}

func TestInboundActionAppliesAndAnswers(t *testing.T) {
	e := newInboundEnv(t)
	res := domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200,
		Changes: []domain.Change{{Entity: "order", Field: "status", From: "confirmed", To: "in_progress"}}}
	e.onApply(inboundIn).Return(res, nil).Once()
	e.ExecuteWorkflow(InboundAction, inboundIn)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if e.answer == nil || e.answer.Result == nil || e.answer.Result.Status != 200 || len(e.answer.Result.Changes) != 1 {
		t.Fatalf("answer %+v", e.answer)
	}
	if e.last().Outcome != domain.OutcomeApplied {
		t.Fatalf("recorded %+v", e.outcomes)
	}
	e.AssertExpectations(t)
}

func TestInboundActionRefusalIsRecordedAndAnswered(t *testing.T) {
	e := newInboundEnv(t)
	e.onApply(inboundIn).
		Return(domain.InboundResult{}, temporal.NewNonRetryableApplicationError("order cannot move from fulfilled to confirmed", string(domain.ECONFLICT), nil)).Once()
	e.ExecuteWorkflow(InboundAction, inboundIn)
	if e.answer == nil || e.answer.Code != domain.ECONFLICT || e.answer.Message == "" {
		t.Fatalf("answer %+v", e.answer)
	}
	if e.last().Outcome != domain.OutcomeFailed || e.last().Error == "" {
		t.Fatalf("recorded %+v", e.outcomes)
	}
	e.AssertExpectations(t)
}

func TestParkedPostTriesEvery15MinutesFor7DaysThenEndsUnmatched(t *testing.T) {
	var outcomes []domain.RecordOutcomeInput
	attempts := 0
	var answer *domain.InboundOutcome
	var answerAt time.Time
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	// The wait continues as new now and then (waits_test.go): follow it
	// from run to run.
	c := &chain{t: t, start: start,
		setup: func(e *testsuite.TestWorkflowEnvironment) {
			mockPost(e, func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
				attempts++
				return domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: `order "SO-9"`}, nil
			}, func(_ context.Context, in domain.RecordOutcomeInput) error {
				outcomes = append(outcomes, in)
				return nil
			})
		},
		during: func(e *testsuite.TestWorkflowEnvironment, run int) {
			if run > 0 {
				return
			}
			e.UpdateWorkflow(AnswerUpdate, "answer-1", &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { t.Errorf("answer update rejected: %v", err) },
				OnComplete: func(v any, err error) {
					out := v.(domain.InboundOutcome)
					answer, answerAt = &out, e.Now()
				},
			})
		},
	}
	e := c.run(InboundAction, inboundIn, func() any { return new(domain.InboundInput) })
	endedAs(t, e.GetWorkflowError(), ErrTypeInboundUnmatched)
	// The sender was answered 202 at once, not after a week.
	if answer == nil || answer.Result == nil || answer.Result.Status != 202 || !answerAt.Equal(start) {
		t.Fatalf("answer %+v at %v", answer, answerAt)
	}
	// Every 15 minutes, and once more at the start of each continued run.
	if want := 1 + int(ParkFor/ParkRecheck) + len(c.runs) - 1; attempts != want || c.fired != int(ParkFor/ParkRecheck) {
		t.Fatalf("%d attempts (%d on the timer), want %d (every 15 minutes for 7 days)", attempts, c.fired, want)
	}
	if got := e.Now().Sub(start); got != ParkFor {
		t.Fatalf("gave up after %v, want 7 days", got)
	}
	if len(outcomes) != 2 || outcomes[0].Outcome != domain.OutcomeParked || outcomes[0].WaitingFor != `order "SO-9"` || outcomes[1].Outcome != domain.OutcomeUnmatched {
		t.Fatalf("recorded %+v", outcomes)
	}
}

// An input's ParkFor (which only the recording of histories sets) shortens
// the park and its rechecks; the command sequence is the same.
func TestParkForInTheInputShortensThePark(t *testing.T) {
	e := newInboundEnv(t)
	attempts := 0
	in := inboundIn
	in.ParkFor = time.Hour
	e.onApply(in).Return(func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
		attempts++
		return domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: `order "SO-9"`}, nil
	})
	start := e.Now()
	e.ExecuteWorkflow(InboundAction, in)
	endedAs(t, e.GetWorkflowError(), ErrTypeInboundUnmatched)
	if attempts != 5 {
		t.Fatalf("%d attempts, want 5 (every 15 minutes for an hour)", attempts)
	}
	if got := e.Now().Sub(start); got != time.Hour {
		t.Fatalf("gave up after %v, want 1h", got)
	}
	if e.last().Outcome != domain.OutcomeUnmatched || e.last().Error != "no matching record within 1h0m0s" {
		t.Fatalf("recorded %+v", e.last())
	}
}

func TestParkedPostCompletesWhenTheRecordArrives(t *testing.T) {
	e := newInboundEnv(t)
	arrived := false
	e.onApply(inboundIn).Return(func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
		if arrived {
			return domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200}, nil
		}
		return domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: "order"}, nil
	})
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e.RegisterDelayedCallback(func() {
		arrived = true
		e.SignalWorkflow(RecordCreatedSignal, nil)
	}, 5*time.Minute)
	e.ExecuteWorkflow(InboundAction, inboundIn)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// The signal woke it before the 15-minute recheck.
	if got := e.Now().Sub(start); got > 6*time.Minute {
		t.Fatalf("completed after %v, want about 5 minutes (on the signal)", got)
	}
	if e.last().Outcome != domain.OutcomeApplied {
		t.Fatalf("recorded %+v", e.outcomes)
	}
}

// The workflow is the one writer of a receipt it runs: the record that
// goes with its first answer carries that answer (what the sender, and any
// retry of the post, is answered), and later records move the outcome only.
func TestTheFirstAnswerIsRecordedWithItsOutcomeAndOnlyOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		parks   bool
		refusal error
		records int
		endedAs string
	}{
		{name: "applied at once", records: 1},
		{name: "refused", refusal: temporal.NewNonRetryableApplicationError("no", string(domain.EUNPROCESSABLE), nil), records: 1, endedAs: ErrTypeInboundFailed},
		{name: "parked, then applied", parks: true, records: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newInboundEnv(t)
			arrived := false
			e.onApply(inboundIn).Return(func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
				switch {
				case c.refusal != nil:
					return domain.InboundResult{}, c.refusal
				case c.parks && !arrived:
					return domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: "order"}, nil
				}
				return domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200}, nil
			})
			e.RegisterDelayedCallback(func() {
				arrived = true
				e.SignalWorkflow(RecordCreatedSignal, nil)
			}, 5*time.Minute)
			e.ExecuteWorkflow(InboundAction, inboundIn)
			endedAs(t, e.GetWorkflowError(), c.endedAs)
			if len(e.outcomes) != c.records {
				t.Fatalf("%d records, want %d: %+v", len(e.outcomes), c.records, e.outcomes)
			}
			first := e.outcomes[0]
			if first.Answer == nil || e.answer == nil || !reflect.DeepEqual(*first.Answer, *e.answer) || first.Action != inboundIn.Action {
				t.Fatalf("first record's answer %+v (action %q), the answer given %+v", first.Answer, first.Action, e.answer)
			}
			for _, later := range e.outcomes[1:] {
				if later.Answer != nil {
					t.Fatalf("a later record (%s) carries an answer too: %+v", later.Outcome, later.Answer)
				}
			}
		})
	}
}

func TestSupplierInvoiceWithoutReceiptAnswers202AndLeavesTheMatchWaiting(t *testing.T) {
	e := newInboundEnv(t)
	var a *activityStub
	in := inboundIn
	in.Action = domain.ActionSupplierInvoice
	invoice, po := uuid.MustParse("0193e3c0-0000-7000-8000-000000000020"), uuid.MustParse("0193e3c0-0000-7000-8000-000000000021")
	e.onApply(in).Return(domain.InboundResult{
		Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoice, POID: &po, InvoiceRef: "INV-1"}, nil)
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{InvoiceID: invoice, InvoiceRef: "INV-1", Status: domain.MatchAwaitingReceipt}, nil)
	e.OnWorkflow(ThreeWayMatch, mock.Anything, mock.Anything).
		Return(domain.MatchResult{Status: domain.MatchMatched}, nil)
	var childID string
	e.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		childID = info.WorkflowExecution.ID
	})
	e.ExecuteWorkflow(InboundAction, in)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if e.answer == nil || e.answer.Result.Status != 202 || e.answer.Match == nil || e.answer.Match.Status != domain.MatchAwaitingReceipt {
		b, _ := json.Marshal(e.answer)
		t.Fatalf("answer %s", b)
	}
	if childID != domain.MatchWorkflowID(po, "INV-1") {
		t.Fatalf("match workflow %q, want %q", childID, domain.MatchWorkflowID(po, "INV-1"))
	}
}

func TestSupplierInvoiceMatchedAtOnceAnswers200(t *testing.T) {
	e := newInboundEnv(t)
	var a *activityStub
	in := inboundIn
	in.Action = domain.ActionSupplierInvoice
	invoice, po := uuid.New(), uuid.New()
	e.onApply(in).Return(domain.InboundResult{
		Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoice, POID: &po}, nil)
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{InvoiceRef: "INV-2", Status: domain.MatchVariance, Variances: []domain.Variance{{Kind: domain.VarianceAmount}}}, nil)
	e.ExecuteWorkflow(InboundAction, in)
	if e.answer == nil || e.answer.Result.Status != 200 || e.answer.Match.Status != domain.MatchVariance {
		t.Fatalf("answer %+v", e.answer)
	}
}

// When the first match cannot be made (the database was out of reach for
// the hour its local activity retries), the post is answered 202 and the
// match goes on in its own workflow rather than being left undone.
func TestSupplierInvoiceWhoseFirstMatchFailsLeavesItToTheMatchWorkflow(t *testing.T) {
	e := newInboundEnv(t)
	var a *activityStub
	in := inboundIn
	in.Action = domain.ActionSupplierInvoice
	invoice, po := uuid.New(), uuid.New()
	e.onApply(in).Return(domain.InboundResult{
		Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoice, POID: &po, InvoiceRef: "INV-3"}, nil)
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{}, errors.New("connection refused"))
	var child domain.MatchInput
	e.OnWorkflow(ThreeWayMatch, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in domain.MatchInput) (domain.MatchResult, error) {
		child = in
		return domain.MatchResult{Status: domain.MatchMatched}, nil
	})
	var childID string
	e.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		childID = info.WorkflowExecution.ID
	})
	e.ExecuteWorkflow(InboundAction, in)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if e.answer == nil || e.answer.Result.Status != 202 || e.answer.Match != nil {
		b, _ := json.Marshal(e.answer)
		t.Fatalf("answer %s, want 202 without a match result", b)
	}
	if childID != domain.MatchWorkflowID(po, "INV-3") || child.InvoiceID != invoice || child.InvoiceRef != "INV-3" {
		t.Fatalf("match workflow %q with %+v, want %q for invoice %s", childID, child, domain.MatchWorkflowID(po, "INV-3"), invoice)
	}
	if got := e.last().Outcome; got != domain.OutcomeApplied {
		t.Fatalf("outcome %s, want applied (the invoice was recorded)", got)
	}
}

// An invoice reference at its 500-character limit still names a match
// workflow Temporal accepts: the ID is bounded, and is the one the signal
// of a goods receipt looks for.
func TestSupplierInvoiceWithALongRefStartsItsMatchUnderABoundedID(t *testing.T) {
	e := newInboundEnv(t)
	var a *activityStub
	in := inboundIn
	in.Action = domain.ActionSupplierInvoice
	invoice, po := uuid.New(), uuid.New()
	ref := strings.Repeat("INV/2026/ÉTÉ/", 50)[:500]
	e.onApply(in).Return(domain.InboundResult{
		Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoice, POID: &po, InvoiceRef: ref}, nil)
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{InvoiceID: invoice, InvoiceRef: ref, Status: domain.MatchAwaitingReceipt}, nil)
	e.OnWorkflow(ThreeWayMatch, mock.Anything, mock.Anything).Return(domain.MatchResult{Status: domain.MatchMatched}, nil)
	var childID string
	e.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		childID = info.WorkflowExecution.ID
	})
	e.ExecuteWorkflow(InboundAction, in)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if childID != domain.MatchWorkflowID(po, ref) || len(childID) > domain.MaxWorkflowIDLength {
		t.Fatalf("match workflow %q (%d bytes), want %q within %d bytes", childID, len(childID), domain.MatchWorkflowID(po, ref), domain.MaxWorkflowIDLength)
	}
	if e.answer == nil || e.answer.Result == nil || e.answer.Result.Status != 202 || e.last().Outcome != domain.OutcomeApplied {
		t.Fatalf("answer %+v, recorded %+v", e.answer, e.outcomes)
	}
}

// A run recorded before boundedMatchStart replays with the match ID it
// recorded: under the default version the long ref is kept whole.
func TestRunsBeforeTheBoundedMatchIDKeepTheirMatchID(t *testing.T) {
	e := newInboundEnv(t)
	e.OnGetVersion(oneStepPosts, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	e.OnGetVersion(boundedMatchStart, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	var a *activityStub
	in := inboundIn
	in.Action = domain.ActionSupplierInvoice
	invoice, po := uuid.New(), uuid.New()
	ref := strings.Repeat("INV-2026-", 20)
	e.onApply(in).Return(domain.InboundResult{
		Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoice, POID: &po, InvoiceRef: ref}, nil)
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{InvoiceID: invoice, InvoiceRef: ref, Status: domain.MatchAwaitingReceipt}, nil)
	e.OnWorkflow(ThreeWayMatch, mock.Anything, mock.Anything).Return(domain.MatchResult{Status: domain.MatchMatched}, nil)
	var childID string
	e.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		childID = info.WorkflowExecution.ID
	})
	e.ExecuteWorkflow(InboundAction, in)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if want := "match/" + po.String() + "/" + ref; childID != want || childID == domain.MatchWorkflowID(po, ref) {
		t.Fatalf("match workflow %q, want the recorded form %q", childID, want)
	}
}

// failChildStarts is a worker interceptor under which every child workflow
// fails to start, as when the server refuses the start.
type failChildStarts struct {
	interceptor.WorkerInterceptorBase
}

func (*failChildStarts) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &failChildInbound{interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type failChildInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (i *failChildInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&failChildOutbound{interceptor.WorkflowOutboundInterceptorBase{Next: out}})
}

type failChildOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (*failChildOutbound) ExecuteChildWorkflow(ctx workflow.Context, _ string, _ ...any) workflow.ChildWorkflowFuture {
	f, set := workflow.NewFuture(ctx)
	set.SetError(errors.New("namespace default not found"))
	return failedChild{f}
}

type failedChild struct{ workflow.Future }

func (c failedChild) GetChildWorkflowExecution() workflow.Future { return c.Future }

func (c failedChild) SignalChildWorkflow(workflow.Context, string, any) workflow.Future {
	return c.Future
}

// When the match workflow of an invoice waiting for goods cannot be
// started, the post does not end applied with the invoice waiting for a
// match that never runs: its receipt records an error (which a replay
// retries) and the sender is answered 500, so it tries again.
func TestSupplierInvoiceWhoseMatchCannotStartIsRecordedAsAnError(t *testing.T) {
	e := newInboundEnv(t)
	e.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&failChildStarts{}}})
	var a *activityStub
	in := inboundIn
	in.Action = domain.ActionSupplierInvoice
	invoice, po := uuid.New(), uuid.New()
	e.onApply(in).Return(domain.InboundResult{
		Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoice, POID: &po, InvoiceRef: "INV-4"}, nil)
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{InvoiceID: invoice, InvoiceRef: "INV-4", Status: domain.MatchAwaitingReceipt}, nil)
	e.ExecuteWorkflow(InboundAction, in)
	endedAs(t, e.GetWorkflowError(), ErrTypeInboundError)
	if got := e.last(); got.Outcome != domain.OutcomeError || !strings.Contains(got.Error, "three-way match") || strings.Contains(got.Error, "namespace") {
		t.Fatalf("recorded %+v, want an error naming the match and no internal detail", e.outcomes)
	}
	if e.answer == nil || e.answer.Code != domain.EINTERNAL || e.answer.Result != nil {
		b, _ := json.Marshal(e.answer)
		t.Fatalf("answer %s, want an internal error", b)
	}
}

func TestThreeWayMatchWaits14DaysThenRaisesNoReceipt(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e.SetStartTime(start)
	var a *activityStub
	in := domain.MatchInput{OrgID: orgID, InvoiceID: uuid.New(), POID: uuid.New(), InvoiceRef: "INV-1"}
	checks := 0
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, in).Return(func(context.Context, domain.MatchInput) (domain.MatchResult, error) {
		checks++
		return domain.MatchResult{Status: domain.MatchAwaitingReceipt}, nil
	})
	var raisedAt time.Time
	e.OnActivity(a.RaiseNoReceipt, mock.Anything, in).Return(func(context.Context, domain.MatchInput) (domain.MatchResult, error) {
		raisedAt = e.Now()
		return domain.MatchResult{Status: domain.MatchVariance, Variances: []domain.Variance{{Kind: domain.VarianceNoReceipt}}}, nil
	}).Once()
	e.ExecuteWorkflow(ThreeWayMatch, in)
	var res domain.MatchResult
	if err := e.GetWorkflowResult(&res); err != nil || res.Status != domain.MatchVariance {
		t.Fatalf("result %+v, %v", res, err)
	}
	if got := raisedAt.Sub(start); got < MatchWaitFor || got > MatchWaitFor+time.Minute {
		t.Fatalf("no_receipt raised after %v, want 14 days", got)
	}
	if want := 1 + int(MatchWaitFor/MatchRecheck); checks != want {
		t.Fatalf("%d checks, want %d", checks, want)
	}
}

func TestThreeWayMatchCompletesOnAReceipt(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e.SetStartTime(start)
	var a *activityStub
	in := domain.MatchInput{OrgID: orgID, InvoiceID: uuid.New(), POID: uuid.New(), InvoiceRef: "INV-1"}
	received := false
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, in).Return(func(context.Context, domain.MatchInput) (domain.MatchResult, error) {
		if received {
			return domain.MatchResult{Status: domain.MatchMatched, Variances: []domain.Variance{}}, nil
		}
		return domain.MatchResult{Status: domain.MatchAwaitingReceipt}, nil
	})
	e.RegisterDelayedCallback(func() {
		received = true
		e.SignalWorkflow(ReceiptRecordedSignal, nil)
	}, 3*24*time.Hour+time.Hour)
	e.ExecuteWorkflow(ThreeWayMatch, in)
	var res domain.MatchResult
	if err := e.GetWorkflowResult(&res); err != nil || res.Status != domain.MatchMatched {
		t.Fatalf("result %+v, %v", res, err)
	}
	if got := e.Now().Sub(start); got > 3*24*time.Hour+2*time.Hour {
		t.Fatalf("matched after %v, want right after the receipt (3 days 1 hour)", got)
	}
}
