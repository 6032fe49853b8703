package workflows

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/commerce-integration/commerce/domain"
)

var webhookIn = domain.WebhookInput{OrgID: orgID, DeliveryID: uuid.MustParse("0193e3c0-0000-7000-8000-000000000020")}

// webhookEnv runs the delivery workflow against a receiver that answers
// with the given results in turn (the last one for every later attempt),
// recording when each attempt was made (by the workflow's clock).
type webhookEnv struct {
	*testsuite.TestWorkflowEnvironment
	attempts []domain.DeliverInput
	at       []time.Time
	// admissions answer a retry's AdmitRetry in turn, resendAdmissions a
	// resend's (go at once when they run out); asked records when a retry
	// asked.
	admissions, resendAdmissions []domain.Admission
	asked                        []time.Time
}

// The nightly run is at 02:00 UTC; the delivery starts at 10:30.
var (
	webhookStart = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	nightlyAt    = 2 * time.Hour
)

func newWebhookEnv(results ...domain.DeliverResult) *webhookEnv {
	var s testsuite.WorkflowTestSuite
	e := &webhookEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment()}
	e.SetStartTime(webhookStart)
	var a *activityStub
	e.OnActivity(a.DeliverWebhook, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in domain.DeliverInput) (domain.DeliverResult, error) {
			e.attempts = append(e.attempts, in)
			e.at = append(e.at, e.Now().UTC())
			res := results[min(len(e.attempts), len(results))-1]
			// As the activity does: a failure that is not the last is tried
			// again at the next nightly run.
			if !res.Succeeded && !res.Skipped && !in.Last {
				next := domain.NextNightly(e.Now(), nightlyAt)
				res.RetryAt = &next
			}
			return res, nil
		})
	e.OnActivity(a.AdmitRetry, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in domain.AdmitInput) (domain.Admission, error) {
			if in.Manual {
				if in.Tries < len(e.resendAdmissions) {
					return e.resendAdmissions[in.Tries], nil
				}
				return domain.Admission{Go: true, At: e.Now()}, nil
			}
			e.asked = append(e.asked, e.Now().UTC())
			if in.Tries < len(e.admissions) {
				return e.admissions[in.Tries], nil
			}
			return domain.Admission{Go: true, At: e.Now()}, nil
		})
	return e
}

var (
	receiverDown = domain.DeliverResult{StatusCode: 503, Error: "the receiver answered 503"}
	receiverOK   = domain.DeliverResult{Succeeded: true, StatusCode: 200}
)

func TestFailingReceiverGetsFiveAttemptsAtSuccessiveNightlyRuns(t *testing.T) {
	e := newWebhookEnv(receiverDown)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 5 || out.Status != domain.WebhookExhausted || out.Attempts != 5 {
		t.Fatalf("%d attempts, outcome %+v; want 5, exhausted", len(e.attempts), out)
	}
	want := []time.Time{webhookStart}
	for day := 1; day <= 4; day++ {
		want = append(want, time.Date(2026, 11, 22+day, 2, 0, 0, 0, time.UTC))
	}
	for i, in := range e.attempts {
		if !e.at[i].Equal(want[i]) || in.Attempt != i+1 || in.Manual || in.Last != (i == 4) {
			t.Errorf("attempt %d at %s (number %d, manual %v, last %v), want at %s", i+1, e.at[i], in.Attempt, in.Manual, in.Last, want[i])
		}
	}
}

func TestReceiverThatRecoversStopsTheRetries(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverDown, receiverOK)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 3 || out.Status != domain.WebhookSucceeded || out.Attempts != 3 {
		t.Fatalf("%d attempts, outcome %+v; want 3, succeeded", len(e.attempts), out)
	}
	if want := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC); !e.at[2].Equal(want) {
		t.Fatalf("third attempt at %s, want %s", e.at[2], want)
	}
}

func TestFirstAttemptSucceedingIsTheOnlyOne(t *testing.T) {
	e := newWebhookEnv(receiverOK)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil || len(e.attempts) != 1 || out.Status != domain.WebhookSucceeded {
		t.Fatalf("%d attempts, %+v, %v", len(e.attempts), out, err)
	}
	if !e.at[0].Equal(webhookStart) {
		t.Fatalf("attempt 1 at %s, not at once", e.at[0])
	}
}

func TestResendAttemptsAtOnceAndCounts(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverOK)
	// Support resends an hour after the first failure.
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(ResendSignal, nil) }, time.Hour)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 2 || !e.attempts[1].Manual || e.attempts[1].Attempt != 2 || out.Status != domain.WebhookSucceeded {
		t.Fatalf("attempts %+v, outcome %+v", e.attempts, out)
	}
	if want := webhookStart.Add(time.Hour); !e.at[1].Equal(want) {
		t.Fatalf("resend at %s, want %s", e.at[1], want)
	}
}

func TestResendOfAnExhaustedDeliveryMakesOneAttempt(t *testing.T) {
	e := newWebhookEnv(receiverDown)
	in := webhookIn
	in.Attempts, in.Manual = 5, true
	e.ExecuteWorkflow(WebhookDelivery, in)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 1 || e.attempts[0].Attempt != 6 || !e.attempts[0].Manual || !e.attempts[0].Last || out.Status != domain.WebhookExhausted {
		t.Fatalf("attempts %+v, outcome %+v", e.attempts, out)
	}
}

func TestResendOfASucceededDeliveryThatFailsGoesOnToTheNightlyRetries(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverOK)
	in := webhookIn
	in.Attempts, in.Manual = 1, true
	e.ExecuteWorkflow(WebhookDelivery, in)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 2 || !e.attempts[0].Manual || e.attempts[1].Manual || e.attempts[1].Attempt != 3 || out.Status != domain.WebhookSucceeded {
		t.Fatalf("attempts %+v, outcome %+v", e.attempts, out)
	}
	if want := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC); !e.at[1].Equal(want) {
		t.Fatalf("the retry after the failed resend at %s, want %s", e.at[1], want)
	}
}

func TestDisabledSubscriptionEndsTheDelivery(t *testing.T) {
	e := newWebhookEnv(domain.DeliverResult{Skipped: true, Error: "subscription disabled"})
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil || len(e.attempts) != 1 || out.Status != domain.WebhookExhausted {
		t.Fatalf("%d attempts, %+v, %v", len(e.attempts), out, err)
	}
}

// A first attempt that fails for the service's own fault (the database) is
// made again, with the same number, until it can be recorded.
func TestFirstAttemptFaultIsMadeAgainWithTheSameNumber(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	var a *activityStub
	var attempts []int
	calls := 0
	e.OnActivity(a.DeliverWebhook, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in domain.DeliverInput) (domain.DeliverResult, error) {
			calls++
			attempts = append(attempts, in.Attempt)
			if calls <= 2 {
				return domain.DeliverResult{}, errors.New("database unavailable")
			}
			return receiverOK, nil
		})
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil || out.Status != domain.WebhookSucceeded || out.Attempts != 1 {
		t.Fatalf("%+v, %v; want succeeded at attempt 1", out, err)
	}
	if len(attempts) != 3 || attempts[0] != 1 || attempts[1] != 1 || attempts[2] != 1 {
		t.Fatalf("attempt numbers %v, want [1 1 1]", attempts)
	}
}

// A first attempt whose subscription secret cannot be opened ends the
// delivery in error at once: it is not made again.
func TestFirstAttemptWithAnUnopenableSecretIsNotMadeAgain(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	var a *activityStub
	calls := 0
	e.OnActivity(a.DeliverWebhook, mock.Anything, mock.Anything).Return(
		func(context.Context, domain.DeliverInput) (domain.DeliverResult, error) {
			calls++
			return domain.DeliverResult{}, temporal.NewNonRetryableApplicationError("secret", domain.SecretUnopenable, nil)
		})
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var appErr *temporal.ApplicationError
	if err := e.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != domain.SecretUnopenable {
		t.Fatalf("workflow error %v, want %s", err, domain.SecretUnopenable)
	}
	if calls != 1 {
		t.Fatalf("%d attempts, want 1", calls)
	}
}

// The policy in the delivery's input is the one it goes by: its number of
// attempts ends the delivery, and every attempt is handed the policy, by
// which the activity works out the retry time.
func TestADeliveryGoesByThePolicyItsInputCarries(t *testing.T) {
	e := newWebhookEnv(receiverDown)
	policy := domain.DeliveryPolicy{Attempts: 3, NightlyAt: 4 * time.Hour, Spread: time.Minute}
	in := webhookIn
	in.Policy = &policy
	e.ExecuteWorkflow(WebhookDelivery, in)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 3 || out.Status != domain.WebhookExhausted || out.Attempts != 3 {
		t.Fatalf("%d attempts, outcome %+v; want 3, exhausted", len(e.attempts), out)
	}
	for i, a := range e.attempts {
		if a.Policy == nil || *a.Policy != policy || a.Last != (i == 2) {
			t.Errorf("attempt %d handed policy %+v (last %v), want %+v", i+1, a.Policy, a.Last, policy)
		}
	}
}

// A resend signalled while the last attempt runs (support saw the delivery
// as over a moment before its run closed) makes one attempt more instead of
// being lost with the run.
func TestAResendSignalledWhileTheLastAttemptRunsIsOneAttemptMore(t *testing.T) {
	for name, first := range map[string]domain.DeliverResult{"after a success": receiverOK, "after the last failure": receiverDown} {
		t.Run(name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			e := s.NewTestWorkflowEnvironment()
			e.SetStartTime(webhookStart)
			var a *activityStub
			var attempts []domain.DeliverInput
			e.OnActivity(a.DeliverWebhook, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in domain.DeliverInput) (domain.DeliverResult, error) {
					attempts = append(attempts, in)
					if len(attempts) == 1 {
						e.SignalWorkflow(ResendSignal, nil) // while this attempt runs
						return first, nil
					}
					return receiverOK, nil
				})
			in := webhookIn
			in.Attempts = domain.MaxWebhookAttempts - 1 // the next attempt is the last
			e.ExecuteWorkflow(WebhookDelivery, in)
			var out domain.WebhookOutcome
			if err := e.GetWorkflowResult(&out); err != nil {
				t.Fatal(err)
			}
			if len(attempts) != 2 || !attempts[1].Manual || out.Status != domain.WebhookSucceeded || out.Attempts != domain.MaxWebhookAttempts+1 {
				t.Fatalf("%d attempts (%+v), outcome %+v; want the resend made as a second, manual attempt", len(attempts), attempts, out)
			}
		})
	}
}

// While its subscription is failing, a nightly retry is held: it waits as
// the subscription says, spending no attempt, and goes when admitted, as
// the next attempt by number. An hour-long wait passes in the test's
// skipped time.
func TestARetryIsHeldWhileItsSubscriptionIsFailing(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverOK)
	e.admissions = []domain.Admission{{Held: true, Wait: time.Hour}, {Held: true, Wait: time.Hour}}
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	nightly := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	if len(e.attempts) != 2 || e.attempts[1].Attempt != 2 || e.attempts[1].Manual || out.Status != domain.WebhookSucceeded || out.Attempts != 2 {
		t.Fatalf("attempts %+v, outcome %+v; want the retry as attempt 2, succeeded", e.attempts, out)
	}
	if want := []time.Time{nightly, nightly.Add(time.Hour), nightly.Add(2 * time.Hour)}; !slices.Equal(e.asked, want) {
		t.Fatalf("admission asked at %v, want %v", e.asked, want)
	}
	if !e.at[1].Equal(nightly.Add(2 * time.Hour)) {
		t.Fatalf("the retry went at %s, want when admitted, %s", e.at[1], nightly.Add(2*time.Hour))
	}
}

// An admitted retry goes at the start slot its subscription's rate gave
// it; a full subscription makes it ask again; a resend while it waits goes
// at once, as a resend.
func TestARetryGoesAtItsSlotAndAResendDoesNotWait(t *testing.T) {
	nightly := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	e := newWebhookEnv(receiverDown, receiverOK)
	e.admissions = []domain.Admission{{Wait: time.Second}, {Go: true, At: nightly.Add(time.Second + 400*time.Millisecond)}}
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	if err := e.GetWorkflowResult(new(domain.WebhookOutcome)); err != nil {
		t.Fatal(err)
	}
	if len(e.at) != 2 || !e.at[1].Equal(nightly.Add(time.Second+400*time.Millisecond)) {
		t.Fatalf("attempts at %v, want the retry at its slot", e.at)
	}

	e = newWebhookEnv(receiverDown, receiverOK)
	e.admissions = []domain.Admission{{Held: true, Wait: time.Hour}}
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(ResendSignal, nil) }, nightly.Sub(webhookStart)+10*time.Minute)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	if err := e.GetWorkflowResult(new(domain.WebhookOutcome)); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 2 || !e.attempts[1].Manual || !e.at[1].Equal(nightly.Add(10*time.Minute)) {
		t.Fatalf("attempts %+v at %v, want the resend at once while held", e.attempts, e.at)
	}
}

// A resend keeps to its subscription's cap and rate: told to wait, it
// asks again, and goes at the slot it is given; a second resend meanwhile
// is the same one.
func TestAResendKeepsToTheSubscriptionsCapAndRate(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverOK)
	e.resendAdmissions = []domain.Admission{{Wait: 2 * time.Second}, {Go: true, At: webhookStart.Add(time.Hour + 3*time.Second)}}
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(ResendSignal, nil) }, time.Hour)
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(ResendSignal, nil) }, time.Hour+time.Second)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	var out domain.WebhookOutcome
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(e.attempts) != 2 || !e.attempts[1].Manual || out.Status != domain.WebhookSucceeded {
		t.Fatalf("attempts %+v, outcome %+v; want one resend, succeeded", e.attempts, out)
	}
	if want := webhookStart.Add(time.Hour + 3*time.Second); !e.at[1].Equal(want) {
		t.Fatalf("the resend went at %s, want at its slot %s", e.at[1], want)
	}
}
