package workflows

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// The SDK's test environment skips time but keeps no history, and runs one
// run: the tests of long waits follow a workflow from run to run (chain)
// and count each run's history events as the server records them
// (countEvents).

// maxEventsPerRun is what a waiting run's history must stay under.
const maxEventsPerRun = 2000

// wake is a signal a chain sends at a moment of the wait.
type wake struct {
	at      time.Time
	name    string
	payload any
}

// chainRun is one run of a chain: when it started and ended, and how many
// events its history holds.
type chainRun struct {
	start, end time.Time
	events     int
}

// chain runs a workflow, then each run it continues as new in a fresh test
// environment starting when the last run ended, until a run ends
// otherwise. It sends wakes at their moments, to the run open then (a wake
// at the moment a run ends goes to the next).
type chain struct {
	t     *testing.T
	start time.Time
	wakes []wake
	// setup registers a run's activity mocks.
	setup func(e *testsuite.TestWorkflowEnvironment)
	// during is called in each run, once its workflow has started.
	during func(e *testsuite.TestWorkflowEnvironment, run int)

	runs  []chainRun
	sent  int // wakes sent
	fired int // timers fired
}

// run runs the chain from wf(in), decoding each continued run's input into
// a new value from newIn, and returns the last run's environment.
func (c *chain) run(wf any, in any, newIn func() any) *testsuite.TestWorkflowEnvironment {
	c.t.Helper()
	now := c.start
	for n := 0; ; n++ {
		if n > 1000 {
			c.t.Fatal("more than 1,000 runs")
		}
		var s testsuite.WorkflowTestSuite
		e := s.NewTestWorkflowEnvironment()
		e.SetStartTime(now)
		events := countEvents(e, &c.fired)
		c.setup(e)
		if c.during != nil {
			run := n
			e.RegisterDelayedCallback(func() { c.during(e, run) }, 0)
		}
		// One wake at a time is scheduled (the environment's queue of
		// callbacks is short): each schedules the next.
		var schedule func(at time.Time)
		schedule = func(at time.Time) {
			if c.sent == len(c.wakes) {
				return
			}
			w := c.wakes[c.sent]
			e.RegisterDelayedCallback(func() {
				*events += 1 + 3 // WorkflowExecutionSignaled, and the workflow task it makes
				c.sent++
				e.SignalWorkflow(w.name, w.payload)
				schedule(w.at)
			}, w.at.Sub(at))
		}
		schedule(now)
		e.ExecuteWorkflow(wf, in)
		*events++ // the run's closing event
		c.runs = append(c.runs, chainRun{start: now, end: e.Now(), events: *events})
		var next *workflow.ContinueAsNewError
		if !errors.As(e.GetWorkflowError(), &next) {
			return e
		}
		in = newIn()
		if err := converter.GetDefaultDataConverter().FromPayloads(next.Input, in); err != nil {
			c.t.Fatal(err)
		}
		in = deref(in)
		now = e.Now()
	}
}

// deref turns the pointer a continued run's input was decoded into back
// into the value the workflow takes.
func deref(v any) any {
	switch p := v.(type) {
	case *domain.InboundInput:
		return *p
	case *domain.MatchInput:
		return *p
	}
	panic(fmt.Sprintf("unexpected input %T", v))
}

// events is the events of every run; most the largest run's.
func (c *chain) events() (total, most int) {
	for _, r := range c.runs {
		total += r.events
		most = max(most, r.events)
	}
	return total, most
}

// countEvents counts, from the environment's listeners, the events a
// server records in a run's history: WorkflowExecutionStarted and its
// first workflow task (scheduled, started, completed: 3 events); 1 per
// timer started or cancelled, 1 per timer fired and 3 for the workflow task
// it makes; 3 per activity (scheduled, started, completed) and 3 for the
// workflow task its completion makes; 1 marker per local activity (it runs
// within a workflow task) and per version marker. Signals (1, and 3 for
// their task) are counted by whoever sends them, and the closing event by
// the caller. It counts the timers fired in fired. Each signal and timer is counted with a task of its own, as
// when they arrive apart.
func countEvents(e *testsuite.TestWorkflowEnvironment, fired *int) *int {
	n := new(int)
	*n = 1 + 3
	e.SetOnTimerScheduledListener(func(string, time.Duration) { *n++ })
	e.SetOnTimerFiredListener(func(string) { *n += 1 + 3; *fired++ })
	e.SetOnTimerCanceledListener(func(string) { *n++ })
	e.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { *n += 2 })
	e.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) { *n += 1 + 3 })
	e.SetOnLocalActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) { *n++ })
	e.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&versionMarkers{n: n}}})
	return n
}

// versionMarkers counts the version markers a run records: one per change
// id, the first time the run asks for its version.
type versionMarkers struct {
	interceptor.WorkerInterceptorBase
	n *int
}

func (v *versionMarkers) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &versionInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, n: v.n}
}

type versionInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	n *int
}

func (i *versionInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&versionOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, n: i.n, seen: map[string]bool{}})
}

type versionOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	n    *int
	seen map[string]bool
}

func (o *versionOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	if !o.seen[changeID] {
		o.seen[changeID] = true
		*o.n++
	}
	return o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
}

// spread is n wakes of the signal name with payload, evenly over the wait
// from start (the first one wait/(n+1) in, the last as long before its end).
func spread(n int, start time.Time, wait time.Duration, name string, payload any) []wake {
	wakes := make([]wake, n)
	for i := range wakes {
		wakes[i] = wake{at: start.Add(wait * time.Duration(i+1) / time.Duration(n+1)), name: name, payload: payload}
	}
	return wakes
}

var waitStart = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// parkedOn is the answer of a post parked waiting for order SO-9.
var parkedOn = domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: `order "SO-9"`,
	WaitingKeys: []string{domain.WaitKey(domain.WaitOrder, "SO-9")}}

// A parked post woken 1,000 times over its 7-day wait (each wake naming
// the order it waits for, so each one looks again) keeps every run's
// history under 2,000 events: it continues as new, carrying its answer
// and its deadline, and still ends unmatched after 7 days, answering its
// parked answer in a continued run too. The wait as one run would hold
// over 10,000 events.
func TestParkedPostWokenAThousandTimesKeepsEachRunUnder2000Events(t *testing.T) {
	var outcomes []domain.RecordOutcomeInput
	attempts := 0
	var lateAnswer *domain.InboundOutcome
	c := &chain{t: t, start: waitStart,
		wakes: spread(1000, waitStart, ParkFor, RecordCreatedSignal, domain.RecordsCreated{Keys: parkedOn.WaitingKeys}),
		setup: func(e *testsuite.TestWorkflowEnvironment) {
			mockPost(e, func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
				attempts++
				return parkedOn, nil
			}, func(_ context.Context, in domain.RecordOutcomeInput) error {
				outcomes = append(outcomes, in)
				return nil
			})
		},
		during: func(e *testsuite.TestWorkflowEnvironment, run int) {
			if run != 3 {
				return
			}
			// The sender asks again (a retried post): a continued run
			// answers what the first one did.
			e.UpdateWorkflow(AnswerUpdate, "answer-again", &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { t.Errorf("answer rejected: %v", err) },
				OnComplete: func(v any, err error) {
					if err != nil {
						t.Errorf("answer: %v", err)
						return
					}
					out := v.(domain.InboundOutcome)
					lateAnswer = &out
				},
			})
		},
	}
	e := c.run(InboundAction, inboundIn, func() any { return new(domain.InboundInput) })
	endedAs(t, e.GetWorkflowError(), ErrTypeInboundUnmatched)
	total, most := c.events()
	t.Logf("parked post, 1,000 wakes over 7 days: %d runs, %d events in all, at most %d in one run", len(c.runs), total, most)
	if most >= maxEventsPerRun {
		t.Fatalf("a run's history holds %d events, want under %d", most, maxEventsPerRun)
	}
	if len(c.runs) < 2 {
		t.Fatal("the wait did not continue as new")
	}
	if c.sent != 1000 {
		t.Fatalf("%d wakes sent, want 1000", c.sent)
	}
	if got := e.Now().Sub(waitStart); got != ParkFor {
		t.Fatalf("gave up after %v, want 7 days", got)
	}
	// Each wake looked again (none lost, none merged: they are 10 minutes
	// apart), as did each recheck timer and each continued run.
	if want := 1 + 1000 + c.fired + len(c.runs) - 1; attempts != want || c.fired < int(ParkFor/ParkRecheck)-len(c.runs) {
		t.Fatalf("%d attempts, want %d; %d rechecks", attempts, want, c.fired)
	}
	if len(outcomes) != 2 || outcomes[0].Outcome != domain.OutcomeParked || len(outcomes[0].WaitingKeys) != 1 ||
		outcomes[1].Outcome != domain.OutcomeUnmatched || outcomes[1].Error != "no matching record within 168h0m0s" {
		t.Fatalf("recorded %+v", outcomes)
	}
	if lateAnswer == nil || lateAnswer.Result == nil || lateAnswer.Result.Status != 202 || lateAnswer.Result.WaitingFor != parkedOn.WaitingFor {
		t.Fatalf("a continued run answered %+v", lateAnswer)
	}
}

// A wake for records a parked post does not wait for runs nothing; a wake
// for its own does.
func TestParkedPostIgnoresWakesForOtherRecords(t *testing.T) {
	arrived := false
	attempts := 0
	other := domain.RecordsCreated{Keys: []string{domain.WaitKey(domain.WaitOrder, "SO-OTHER")}}
	mine := domain.RecordsCreated{Keys: []string{domain.WaitKey(domain.WaitOrder, "SO-OTHER"), parkedOn.WaitingKeys[0]}}
	c := &chain{t: t, start: waitStart,
		// 50 wakes for another order in the first 10 minutes, then one
		// naming the post's own order.
		wakes: append(spread(50, waitStart, 10*time.Minute, RecordCreatedSignal, other),
			wake{at: waitStart.Add(11 * time.Minute), name: RecordCreatedSignal, payload: mine}),
		setup: func(e *testsuite.TestWorkflowEnvironment) {
			mockPost(e, func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
				attempts++
				if arrived {
					return domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200}, nil
				}
				return parkedOn, nil
			}, recordNothing)
			// The order is there from 10.5 minutes on.
			e.RegisterDelayedCallback(func() { arrived = true }, 10*time.Minute+30*time.Second)
		},
	}
	e := c.run(InboundAction, inboundIn, func() any { return new(domain.InboundInput) })
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := e.Now().Sub(waitStart); got != 11*time.Minute {
		t.Fatalf("applied after %v, want 11 minutes (on the wake naming its order)", got)
	}
	if attempts != 2 {
		t.Fatalf("%d attempts, want 2: the first, and the wake naming its order", attempts)
	}
}

// A record that arrives just as a parked run continues as new (after its
// last look) is found by the new run's first look, without waiting for a
// wake or the timer.
func TestAContinuedParkedPostLooksAgainFirst(t *testing.T) {
	runs := 0
	var recorded []domain.Outcome
	// Wakes for another order fill the first run.
	other := domain.RecordsCreated{Keys: []string{domain.WaitKey(domain.WaitOrder, "SO-OTHER")}}
	c := &chain{t: t, start: waitStart, wakes: spread(2*wakesPerRun, waitStart, 2*time.Hour, RecordCreatedSignal, other),
		setup: func(e *testsuite.TestWorkflowEnvironment) {
			runs++
			arrived := runs > 1 // the record arrived as the first run ended
			mockPost(e, func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
				if arrived {
					return domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200}, nil
				}
				return parkedOn, nil
			}, func(_ context.Context, in domain.RecordOutcomeInput) error {
				recorded = append(recorded, in.Outcome)
				return nil
			})
		},
	}
	e := c.run(InboundAction, inboundIn, func() any { return new(domain.InboundInput) })
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(c.runs) != 2 || !c.runs[1].start.Equal(c.runs[1].end) {
		t.Fatalf("runs %+v, want the second to apply at once", c.runs)
	}
	if len(recorded) != 2 || recorded[0] != domain.OutcomeParked || recorded[1] != domain.OutcomeApplied {
		t.Fatalf("recorded %v", recorded)
	}
}

// A match waiting for goods, woken 1,000 times over its 14-day wait (each
// wake naming its purchase order), keeps every run's history under 2,000
// events and still raises no_receipt after 14 days. As one run it would
// hold over 10,000 events.
func TestWaitingMatchWokenAThousandTimesKeepsEachRunUnder2000Events(t *testing.T) {
	var a *activityStub
	in := domain.MatchInput{OrgID: orgID, InvoiceID: uuid.New(), POID: uuid.New(), InvoiceRef: "INV-1"}
	checks := 0
	var raisedAt time.Time
	var env *testsuite.TestWorkflowEnvironment
	c := &chain{t: t, start: waitStart,
		wakes: spread(1000, waitStart, MatchWaitFor, ReceiptRecordedSignal, domain.GoodsReceived{POID: &in.POID}),
		setup: func(e *testsuite.TestWorkflowEnvironment) {
			env = e
			e.OnActivity(a.MatchSupplierInvoice, mock.Anything, in).Return(func(context.Context, domain.MatchInput) (domain.MatchResult, error) {
				checks++
				return domain.MatchResult{Status: domain.MatchAwaitingReceipt}, nil
			})
			e.OnActivity(a.RaiseNoReceipt, mock.Anything, in).Return(func(context.Context, domain.MatchInput) (domain.MatchResult, error) {
				raisedAt = env.Now()
				return domain.MatchResult{Status: domain.MatchVariance, Variances: []domain.Variance{{Kind: domain.VarianceNoReceipt}}}, nil
			})
		},
	}
	e := c.run(ThreeWayMatch, in, func() any { return new(domain.MatchInput) })
	var res domain.MatchResult
	if err := e.GetWorkflowResult(&res); err != nil || res.Status != domain.MatchVariance {
		t.Fatalf("result %+v, %v", res, err)
	}
	total, most := c.events()
	t.Logf("waiting match, 1,000 wakes over 14 days: %d runs, %d events in all, at most %d in one run", len(c.runs), total, most)
	if most >= maxEventsPerRun {
		t.Fatalf("a run's history holds %d events, want under %d", most, maxEventsPerRun)
	}
	if len(c.runs) < 2 {
		t.Fatal("the wait did not continue as new")
	}
	if c.sent != 1000 {
		t.Fatalf("%d wakes sent, want 1000", c.sent)
	}
	if got := raisedAt.Sub(waitStart); got != MatchWaitFor {
		t.Fatalf("no_receipt raised after %v, want 14 days", got)
	}
	if want := 1 + 1000 + c.fired + len(c.runs) - 1; checks != want || c.fired < int(MatchWaitFor/MatchRecheck)-len(c.runs) {
		t.Fatalf("%d checks, want %d; %d rechecks", checks, want, c.fired)
	}
}

// A wake for goods against another purchase order runs nothing.
func TestWaitingMatchIgnoresWakesForOtherPurchaseOrders(t *testing.T) {
	var a *activityStub
	in := domain.MatchInput{OrgID: orgID, InvoiceID: uuid.New(), POID: uuid.New(), InvoiceRef: "INV-1"}
	otherPO := uuid.New()
	received := false
	checks := 0
	c := &chain{t: t, start: waitStart,
		wakes: []wake{
			{at: waitStart.Add(time.Hour), name: ReceiptRecordedSignal, payload: domain.GoodsReceived{POID: &otherPO}},
			{at: waitStart.Add(2 * time.Hour), name: ReceiptRecordedSignal, payload: domain.GoodsReceived{POID: &in.POID}},
		},
		setup: func(e *testsuite.TestWorkflowEnvironment) {
			e.OnActivity(a.MatchSupplierInvoice, mock.Anything, in).Return(func(context.Context, domain.MatchInput) (domain.MatchResult, error) {
				checks++
				if received {
					return domain.MatchResult{Status: domain.MatchMatched, Variances: []domain.Variance{}}, nil
				}
				return domain.MatchResult{Status: domain.MatchAwaitingReceipt}, nil
			})
			e.RegisterDelayedCallback(func() { received = true }, 30*time.Minute)
		},
	}
	e := c.run(ThreeWayMatch, in, func() any { return new(domain.MatchInput) })
	var res domain.MatchResult
	if err := e.GetWorkflowResult(&res); err != nil || res.Status != domain.MatchMatched {
		t.Fatalf("result %+v, %v", res, err)
	}
	if got := e.Now().Sub(waitStart); got != 2*time.Hour || checks != 2 {
		t.Fatalf("matched after %v and %d checks, want 2h and 2 (the first, and the wake naming its order)", got, checks)
	}
}
