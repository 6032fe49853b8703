package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// oneStepPosts marks the change that carries out a post and records the
// outcome that ends it in one local activity (ApplyInboundStep) and one
// transaction, where it was two of each (ApplyInbound, then
// RecordOutcome): a post that applies, changes nothing or is refused. A
// parked post, or a supplier invoice whose match follows, records as
// before. A run that records oneStepPosts records no other marker: every
// earlier change of the post (outcomeInUI, failedRuns, boundedParkWait,
// boundedMatchStart) is on in it without asking, where each GetVersion
// was a marker and a TemporalChangeVersion upsert. Runs recorded before
// it take the two steps and ask for each change as they did.
const oneStepPosts = "one-step-posts"

// apply runs the action once. In a run with oneStepPosts on, the same
// local activity records the outcome when the action ends the post (see
// there), and a refusal comes back as the step's, made the error it was
// before.
func (w *inbound) apply(ctx workflow.Context) (domain.InboundOutcome, error) {
	in := w.in
	in.Parked = nil // the activity needs the post, not the state of its wait
	if !w.c.all {
		var res domain.InboundResult
		err := workflow.ExecuteLocalActivity(ctx, applyInbound, in).Get(ctx, &res)
		return domain.InboundOutcome{Result: &res}, err
	}
	var step domain.InboundStep
	err := workflow.ExecuteLocalActivity(ctx, applyInboundStep, domain.InboundStepInput{Post: in, KeepAnswer: w.answer == nil}).Get(ctx, &step)
	out := domain.InboundOutcome{Result: &step.Result}
	if err != nil {
		return out, err
	}
	w.recorded = step.Recorded
	if r := step.Refused; r != nil {
		return out, temporal.NewNonRetryableApplicationError(r.Message, string(r.Code), nil)
	}
	return out, nil
}

// closeAs is how the run of a post whose outcome is recorded closes: nil
// (Completed) for a post that applied or changed nothing; for one that did
// not, an error that makes the run read as it went in the Temporal UI's
// list and status badge: its message is the line of the run's details
// (with the answer's status), its details the post's answer. The receipt already holds the outcome:
// nothing reads a run's result.
func (w *inbound) closeAs(ctx workflow.Context, outcome domain.Outcome, message string, out domain.InboundOutcome) error {
	var typ string
	switch outcome {
	case domain.OutcomeFailed:
		typ = ErrTypeInboundFailed
	case domain.OutcomeError:
		typ = ErrTypeInboundError
	case domain.OutcomeUnmatched:
		typ = ErrTypeInboundUnmatched
	case domain.OutcomeCancelled:
	default:
		return nil
	}
	if !w.c.on(failedRuns) {
		return nil
	}
	if outcome == domain.OutcomeCancelled {
		return temporal.NewCanceledError(w.line(outcome, "", message, nil))
	}
	return temporal.NewNonRetryableApplicationError(w.line(outcome, "", message, &out), typ, nil, out)
}
