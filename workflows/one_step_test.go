package workflows

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// postCase is a post's path through InboundAction, with the local
// activities a run with oneStepPosts on starts, and a run recorded before.
type postCase struct {
	name       string
	apply      func(arrived *bool) applyFunc
	in         func() domain.InboundInput
	endedAs    string
	steps, old []string
}

var appliedPost = domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200,
	Changes: []domain.Change{{Entity: "order", Field: "status", From: "confirmed", To: "in_progress"}}}

func always(res domain.InboundResult, err error) func(*bool) applyFunc {
	return func(*bool) applyFunc {
		return func(context.Context, domain.InboundInput) (domain.InboundResult, error) { return res, err }
	}
}

var invoiceID, invoicePO = uuid.MustParse("0193e3c0-0000-7000-8000-0000000000a1"), uuid.MustParse("0193e3c0-0000-7000-8000-0000000000a2")

var postCases = []postCase{
	{name: "applied", apply: always(appliedPost, nil),
		steps: []string{applyInboundStep}, old: []string{applyInbound, recordOutcome}},
	{name: "unchanged", apply: always(domain.InboundResult{Outcome: domain.OutcomeUnchanged, Status: 200, Changes: []domain.Change{}}, nil),
		steps: []string{applyInboundStep}, old: []string{applyInbound, recordOutcome}},
	{name: "refused", apply: always(domain.InboundResult{}, temporal.NewNonRetryableApplicationError("order cannot move from fulfilled to confirmed", string(domain.ECONFLICT), nil)),
		endedAs: ErrTypeInboundFailed, steps: []string{applyInboundStep}, old: []string{applyInbound, recordOutcome}},
	{name: "parked, then applied", apply: func(arrived *bool) applyFunc {
		return func(context.Context, domain.InboundInput) (domain.InboundResult, error) {
			if *arrived {
				return appliedPost, nil
			}
			return domain.InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: `order "SO-9"`, WaitingKeys: []string{"order:SO-9"}}, nil
		}
	}, steps: []string{applyInboundStep, recordOutcome, applyInboundStep}, old: []string{applyInbound, recordOutcome, applyInbound, recordOutcome}},
	{name: "supplier invoice, matched", in: func() domain.InboundInput {
		in := inboundIn
		in.Action = domain.ActionSupplierInvoice
		return in
	}, apply: always(domain.InboundResult{Outcome: domain.OutcomeApplied, Status: 200, InvoiceID: &invoiceID, POID: &invoicePO, InvoiceRef: "INV-1"}, nil),
		steps: []string{applyInboundStep, matchSupplierInvoice, recordOutcome}, old: []string{applyInbound, matchSupplierInvoice, recordOutcome}},
}

// runPost runs c in a new run (oneStepPosts on) or in one recorded before
// it, and returns what it recorded, answered and started.
func runPost(t *testing.T, c postCase, before bool) (e *inboundEnv, locals []string, err error) {
	e = newInboundEnv(t)
	if before {
		e.OnGetVersion(oneStepPosts, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	arrived := false
	in := inboundIn
	if c.in != nil {
		in = c.in()
	}
	e.onApply(in).Return(c.apply(&arrived))
	var a *activityStub
	e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
		Return(domain.MatchResult{InvoiceRef: "INV-1", Status: domain.MatchMatched}, nil).Maybe()
	e.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		locals = append(locals, info.ActivityType.Name)
	})
	e.RegisterDelayedCallback(func() {
		arrived = true
		e.SignalWorkflow(RecordCreatedSignal, domain.RecordsCreated{Keys: []string{"order:SO-9"}})
	}, 5*time.Minute)
	e.ExecuteWorkflow(InboundAction, in)
	return e, locals, e.GetWorkflowError()
}

// A new run carries out a post that applies, changes nothing or is
// refused in one local activity that records its outcome too; a parked
// post records its wait, and a supplier invoice its match, as before. A
// run recorded before oneStepPosts takes its two steps.
func TestOneStepPostsRunsAPostThatEndsAtOnceAsOneLocalActivity(t *testing.T) {
	for _, c := range postCases {
		t.Run(c.name, func(t *testing.T) {
			for _, before := range []bool{false, true} {
				_, locals, err := runPost(t, c, before)
				endedAs(t, err, c.endedAs)
				want := c.steps
				if before {
					want = c.old
				}
				if !slices.Equal(locals, want) {
					t.Fatalf("recorded before one-step-posts %v: local activities %v, want %v", before, locals, want)
				}
			}
		})
	}
}

// Both kinds of run record the same outcomes, keep the same first answer
// and answer the sender the same: the one step changes how often the
// worker goes to the database, not what it writes.
func TestAPostRecordsAndAnswersTheSameInOneStepAsInTwo(t *testing.T) {
	for _, c := range postCases {
		t.Run(c.name, func(t *testing.T) {
			now, _, err := runPost(t, c, false)
			endedAs(t, err, c.endedAs)
			was, _, err := runPost(t, c, true)
			endedAs(t, err, c.endedAs)
			if len(now.outcomes) == 0 || !reflect.DeepEqual(now.outcomes, was.outcomes) {
				t.Fatalf("recorded %+v in one step, %+v in two", now.outcomes, was.outcomes)
			}
			if now.answer == nil || !reflect.DeepEqual(now.answer, was.answer) {
				t.Fatalf("answered %+v in one step, %+v in two", now.answer, was.answer)
			}
		})
	}
}

// A step that could not record the refusal it came back with (the
// database failed just then) leaves the record to the workflow, which
// records it with its retries.
func TestAStepThatCouldNotRecordLeavesTheRecordToTheWorkflow(t *testing.T) {
	e := newInboundEnv(t)
	e.failRecords = 1
	var locals []string
	e.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		locals = append(locals, info.ActivityType.Name)
	})
	e.onApply(inboundIn).Return(domain.InboundResult{}, temporal.NewNonRetryableApplicationError("order cannot move from fulfilled to confirmed", string(domain.ECONFLICT), nil))
	e.ExecuteWorkflow(InboundAction, inboundIn)
	endedAs(t, e.GetWorkflowError(), ErrTypeInboundFailed)
	if want := []string{applyInboundStep, recordOutcome}; !slices.Equal(locals, want) {
		t.Fatalf("local activities %v, want %v", locals, want)
	}
	if len(e.outcomes) != 1 || e.outcomes[0].Outcome != domain.OutcomeFailed || e.outcomes[0].Answer == nil || e.outcomes[0].Answer.Code != domain.ECONFLICT {
		t.Fatalf("recorded %+v, want the refusal recorded by the workflow with its answer", e.outcomes)
	}
}

// A new run asks for no change but oneStepPosts: each earlier change's
// GetVersion was a marker and a search-attribute upsert of its own.
func TestANewPostRecordsOneMarker(t *testing.T) {
	for _, c := range postCases {
		t.Run(c.name, func(t *testing.T) {
			e := newInboundEnv(t)
			for _, id := range []string{outcomeInUI, failedRuns, boundedParkWait, boundedMatchStart} {
				e.OnGetVersion(id, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion).Never()
			}
			in := inboundIn
			if c.in != nil {
				in = c.in()
			}
			arrived := true
			e.onApply(in).Return(c.apply(&arrived))
			var a *activityStub
			e.OnActivity(a.MatchSupplierInvoice, mock.Anything, mock.Anything).
				Return(domain.MatchResult{InvoiceRef: "INV-1", Status: domain.MatchMatched}, nil).Maybe()
			e.ExecuteWorkflow(InboundAction, in)
			endedAs(t, e.GetWorkflowError(), c.endedAs)
			e.AssertExpectations(t)
		})
	}
}
