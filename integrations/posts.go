package integrations

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

// AnswerWait is how long an inbound post waits for its workflow's first
// answer before it is answered 202 and left to finish.
const AnswerWait = 20 * time.Second

// Posts carries out stored receipts through their workflows: a live post and
// every replay run through it. The workflow records each receipt's outcome
// and its first answer; Posts records one only for a post whose workflow
// could not be started, which no workflow will ever record.
type Posts struct {
	DB        *db.DB
	Workflows *workflows.Client
	Log       *zap.Logger
	// Sealer opens the signing secrets of endpoints, to verify a signed
	// endpoint's receipt again before it is replayed.
	Sealer *secrets.Sealer
	// Wait is how long a post waits for its workflow's first answer before
	// it is answered 202 and left to finish (AnswerWait when zero).
	Wait time.Duration
	// BaseURL is the public {base_url}, for the URLs a dry run's answer
	// would carry.
	BaseURL string
	// Scripts runs the endpoints' mappings.
	Scripts *Scripts
}

// Run starts (or joins) the workflow of a stored receipt and waits for its
// first answer. A workflow that has not answered when the wait ends goes on
// by itself: the answer is then pending (202). So is a post whose start
// Temporal did not take because it is down or not answering: its receipt
// stays pending and the worker's receipts relay starts it later. A post
// whose workflow Temporal refuses to start ends in error (and can be
// replayed): its answer is a fault of the service (500), recorded on the
// receipt here.
func (p *Posts) Run(ctx context.Context, in domain.InboundInput) domain.InboundOutcome {
	if p.Workflows == nil {
		return p.notStarted(ctx, in, "the workflow service is not configured", nil)
	}
	wctx, cancel := context.WithTimeout(ctx, cmp.Or(p.Wait, AnswerWait))
	defer cancel()
	out, err := p.Workflows.RunInbound(wctx, in)
	switch {
	case errors.Is(err, workflows.ErrStillRunning):
		return pendingOutcome()
	case err != nil && temporalAway(err) && ctx.Err() == nil:
		// Temporal is down or not answering: the receipt stays pending, and
		// the worker's receipts relay starts its workflow once Temporal is
		// back (a start that did reach the server is joined, not doubled).
		logging.From(ctx, p.Log).Warn("Temporal did not take the workflow's start; the post waits for the receipts relay",
			zap.Stringer("receipt_id", in.ReceiptID), zap.Error(err))
		return pendingOutcome()
	case err != nil:
		return p.notStarted(ctx, in, "the workflow could not be started", err)
	}
	return out
}

func pendingOutcome() domain.InboundOutcome {
	return domain.InboundOutcome{Result: &domain.InboundResult{Outcome: domain.OutcomePending, Status: 202, Changes: []domain.Change{}}}
}

// temporalAway says whether err is Temporal being unreachable or not
// answering in time, which passes, as opposed to a start it refuses.
func temporalAway(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var exhausted *serviceerror.ResourceExhausted
	if errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.As(err, &exhausted) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return true
	}
	return false
}

// notStarted records a post whose workflow could not be started as an
// error, with the answer its sender gets.
func (p *Posts) notStarted(ctx context.Context, in domain.InboundInput, msg string, cause error) domain.InboundOutcome {
	log := logging.From(ctx, p.Log)
	log.Error(msg, zap.Stringer("receipt_id", in.ReceiptID), zap.Error(cause))
	out := domain.InboundOutcome{Code: domain.EINTERNAL, Message: domain.InternalMessage}
	status, body := out.HTTPAnswer(in.ReceiptID, in.Action)
	errText := msg
	update := db.ReceiptUpdate{Outcome: domain.OutcomeError, Error: &errText, Status: status, Response: body}
	if err := p.DB.UpdateReceipt(context.WithoutCancel(ctx), in.OrgID, in.ReceiptID, update); err != nil {
		log.Error("recording an inbound post that did not start", zap.Error(err))
	}
	return out
}
