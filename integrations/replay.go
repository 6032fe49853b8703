package integrations

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// Replayed is what a replay did: the receipt it stored and the answer its
// workflow gave (pending when it is still running).
type Replayed struct {
	ReceiptID uuid.UUID
	Outcome   domain.InboundOutcome
}

// CheckReplay applies the replay rules (docs/design.md#replay) to a
// receipt without replaying it: nil when it may be replayed, otherwise
// ENOTFOUND (no such receipt in the organisation) or an ECONFLICT error
// whose message is the reason. Replay applies the same rules.
func (r *Posts) CheckReplay(ctx context.Context, orgID, receiptID uuid.UUID) error {
	_, _, err := r.replayable(ctx, orgID, receiptID)
	return err
}

// Replay runs a receipt's action again on its stored body, through the same
// workflow as a live post, as a new receipt pointing at the original post
// (the original of a replay is its source). Effects are keyed by that
// original, so replaying a post that was applied changes nothing and
// answers its first result. The stored body is mapped again with the
// mapping choice picks (docs/mappings.md#replay). A receipt the rules
// refuse (see CheckReplay), or whose mapping fails or ignores it, is not
// replayed and nothing is stored.
func (r *Posts) Replay(ctx context.Context, orgID, receiptID uuid.UUID, choice domain.MappingChoice) (Replayed, error) {
	src, ep, err := r.replayable(ctx, orgID, receiptID)
	if err != nil {
		return Replayed{}, err
	}
	if r.Workflows == nil {
		// Told before anything is stored: no replay could run.
		return Replayed{}, errNoWorkflows
	}
	rm, err := r.remap(ctx, src, ep, choice)
	if err != nil {
		return Replayed{}, err
	}
	id, inFlight, err := r.DB.StoreReplay(ctx, replayReceipt(orgID, src, rm))
	if err != nil {
		return Replayed{}, err
	}
	if inFlight != uuid.Nil {
		return Replayed{}, replayInFlight(receiptID, inFlight)
	}
	out := r.Run(ctx, domain.InboundInput{OrgID: orgID, EndpointID: src.EndpointID, ReceiptID: id, Source: src.ID, Action: src.Action,
		Ref: domain.FirstRef(src.Refs)})
	return Replayed{ReceiptID: id, Outcome: out}, nil
}

// replayReceipt is the new receipt of a replay of src, with the body its
// mapping made again.
func replayReceipt(orgID uuid.UUID, src db.Receipt, rm remapped) db.NewReceipt {
	return db.NewReceipt{OrgID: orgID, EndpointID: src.EndpointID, Action: src.Action,
		ReceivedAt: time.Now(), Headers: src.Headers, Body: src.RawBody(), Size: len(src.RawBody()), BodyComplete: true,
		ReplayOf: &src.ID, MappingVersion: rm.version, MappedBody: rm.body}
}

// remapped is a stored body mapped again for its replay: the version that
// ran and the body it made (both nil where no mapping ran).
type remapped struct {
	version *int
	body    []byte
}

// errIgnored refuses a replay whose mapping answers null for the body.
var errIgnored = domain.Errorf(domain.ECONFLICT, "the mapping ignores this post (it answered null): nothing to replay")

// remap maps a stored post's body again with the mapping choice picks: the
// endpoint's current mapping, the version the post was mapped with, or
// another version. A mapping that fails is EUNPROCESSABLE
// ("mapping failed: …"), a mapped body not of the action's shape EINVALID
// ("mapped body: …"), and null errIgnored.
func (r *Posts) remap(ctx context.Context, src db.Receipt, ep db.Endpoint, choice domain.MappingChoice) (remapped, error) {
	var v db.MappingVersion
	var err error
	switch {
	case choice.Original && src.MappingVersion == nil:
		return remapped{}, nil
	case choice.Original:
		v, err = r.DB.GetMappingVersion(ctx, src.OrgID, db.MappingOfEndpoint, ep.ID, *src.MappingVersion)
	case choice.Version > 0:
		v, err = r.DB.GetMappingVersion(ctx, src.OrgID, db.MappingOfEndpoint, ep.ID, choice.Version)
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			return remapped{}, domain.Errorf(domain.ENOTFOUND, "endpoint %s has no mapping version %d", ep.ID, choice.Version)
		}
	default:
		v, err = r.DB.CurrentMapping(ctx, src.OrgID, db.MappingOfEndpoint, ep.ID)
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			return remapped{}, nil
		}
	}
	if err != nil {
		return remapped{}, err
	}
	if v.Source == nil {
		return remapped{}, nil // a version that ended mapping
	}
	prog, err := r.Scripts.program(ctx, r.DB, ep.OrgID, db.MappingOfEndpoint, ep.ID, db.MappingRef{Version: v.Version, SHA256: *v.SHA256})
	if err != nil {
		return remapped{}, err
	}
	run, err := r.Scripts.mapPost(ctx, prog, ep, src.RawBody(), src.Headers, src.ReceivedAt.Time)
	if err != nil {
		return remapped{}, err
	}
	run.count()
	switch {
	case run.result == MappingIgnored:
		return remapped{}, errIgnored
	case run.result == MappingFailed && strings.HasPrefix(run.err, "mapped body:"):
		return remapped{}, domain.Errorf(domain.EINVALID, "%s", run.err)
	case run.result == MappingFailed:
		return remapped{}, domain.Errorf(domain.EUNPROCESSABLE, "%s (version %d)", run.err, v.Version)
	}
	if _, err := domain.ParseInbound(src.Action, run.body); err != nil {
		return remapped{}, domain.Errorf(domain.ErrorCode(err), "mapped body: %s", domain.ErrorMessage(err))
	}
	return remapped{version: &v.Version, body: run.body}, nil
}

// DryRunResult is what replaying a receipt would do: the action's result,
// and the version and body of the mapping that would run (nil for none).
type DryRunResult struct {
	domain.InboundResult
	MappingVersion *int
	MappedBody     []byte
}

// DryRun applies the replay rules to a receipt, as Replay does, maps its
// body again as Replay would, and works out what replaying it would
// change, in a transaction that is rolled back: no receipt, no event, no
// workflow. The action's own refusal (the order cannot move that way, ...)
// or the mapping's is returned as its error.
func (r *Posts) DryRun(ctx context.Context, orgID, receiptID uuid.UUID, choice domain.MappingChoice) (DryRunResult, error) {
	src, ep, err := r.replayable(ctx, orgID, receiptID)
	if err != nil {
		return DryRunResult{}, err
	}
	rm, err := r.remap(ctx, src, ep, choice)
	if err != nil {
		return DryRunResult{}, err
	}
	body := src.RawBody()
	if rm.body != nil {
		body = rm.body
	}
	parsed, err := domain.ParseInbound(src.Action, body)
	if err != nil {
		return DryRunResult{MappingVersion: rm.version, MappedBody: rm.body}, err
	}
	res, err := r.DB.DryRunInbound(ctx, orgID, src.ID, parsed, r.BaseURL)
	return DryRunResult{InboundResult: res, MappingVersion: rm.version, MappedBody: rm.body}, err
}

// ReplayBatchItem replays one receipt of a bulk replay, at most once for
// the batch however often it is called: the replay's receipt is stored in
// the same transaction that claims the batch's item for it, and a call for
// an item already claimed (its worker died) carries that replay on instead
// of making another. It returns how the item came out (applied, unchanged,
// parked, failed, or skipped with the reason the rules refused it), or ""
// when the replay is still running and the item should be looked at again.
// A dry run batch replays nothing: each item is a dry run.
func (r *Posts) ReplayBatchItem(ctx context.Context, orgID, batchID uuid.UUID, item db.ReplayBatchItem, dryRun bool, choice domain.MappingChoice) (outcome, reason string, err error) {
	refusal := func(err error) (string, string, error) {
		switch domain.ErrorCode(err) {
		case domain.ECONFLICT, domain.ENOTFOUND:
			return "skipped", domain.ErrorMessage(err), nil
		case domain.EINTERNAL:
			return "", "", err
		}
		return "failed", domain.ErrorMessage(err), nil
	}
	if dryRun {
		res, err := r.DryRun(ctx, orgID, item.ReceiptID, choice)
		if err != nil {
			return refusal(err)
		}
		if res.Outcome == domain.OutcomeApplied && len(res.Changes) == 0 {
			res.Outcome = domain.OutcomeUnchanged
		}
		return batchOutcome(res.Outcome), "", nil
	}
	replayID := item.ReplayReceiptID
	if replayID == nil {
		src, ep, err := r.replayable(ctx, orgID, item.ReceiptID)
		if err != nil {
			return refusal(err)
		}
		rm, err := r.remap(ctx, src, ep, choice)
		if err != nil {
			return refusal(err)
		}
		id, inFlight, existing, err := r.DB.StoreBatchReplay(ctx, replayReceipt(orgID, src, rm), batchID, item.ReceiptID)
		switch {
		case err != nil:
			return refusal(err)
		case inFlight != uuid.Nil:
			return refusal(replayInFlight(item.ReceiptID, inFlight))
		case existing != uuid.Nil:
			id = existing
		}
		replayID = &id
	}
	rec, err := r.DB.GetReceipt(ctx, orgID, *replayID)
	if err != nil {
		return "", "", err
	}
	if rec.Outcome == domain.OutcomePending && rec.ReplayOf != nil {
		r.Run(ctx, domain.InboundInput{OrgID: orgID, EndpointID: rec.EndpointID, ReceiptID: rec.ID, Source: *rec.ReplayOf, Action: rec.Action,
			Ref: domain.FirstRef(rec.Refs)})
		if rec, err = r.DB.GetReceipt(ctx, orgID, *replayID); err != nil {
			return "", "", err
		}
	}
	if rec.Error != nil {
		reason = *rec.Error
	}
	return batchOutcome(rec.Outcome), reason, nil
}

// replayable checks a receipt against the replay rules and returns the
// original post a replay of it runs again. Only a post whose body was kept
// whole and that got past the signature step (the intake stage its receipt
// records) may be replayed, and a signed endpoint's post only while its
// stored signature (of either of the service's schemes, or the sender's
// HMAC on an hmac endpoint) verifies as the endpoint verifies now, with its
// received_at as the clock: a post refused 401, or stored while the
// endpoint was paused and so never verified, cannot be pushed through. A
// basic endpoint's receipt is not verified again: its Authorization header
// is a password, never kept, and the receipt got past the signature step
// when it arrived (docs/design.md#sender-verification).
func (r *Posts) replayable(ctx context.Context, orgID, receiptID uuid.UUID) (db.Receipt, db.Endpoint, error) {
	var ep db.Endpoint
	src, err := r.DB.GetReceipt(ctx, orgID, receiptID)
	if err != nil {
		return src, ep, err
	}
	if src.ReplayOf != nil {
		if src, err = r.DB.GetReceipt(ctx, orgID, *src.ReplayOf); err != nil {
			return src, ep, err
		}
	}
	refuse := func(format string, args ...any) (db.Receipt, db.Endpoint, error) {
		return src, ep, replayRefused(receiptID, format, args...)
	}
	switch {
	case !src.BodyComplete():
		return refuse("its body was over %d bytes and only its start was kept", domain.MaxInboundBody)
	case src.Stage == domain.StageSignature:
		return refuse("it was refused for its signature (401)")
	case src.Stage == domain.StagePaused:
		return refuse("it was stored while its endpoint was paused, before the signature step, and was never verified")
	case !passedSignature(src.Stage):
		return refuse("it was refused at the %s step, before the signature step", src.Stage)
	}
	ep, err = r.DB.Endpoint(ctx, orgID, src.EndpointID)
	if err != nil {
		return src, ep, err
	}
	switch ep.State {
	case domain.EndpointDeleted:
		return refuse("its endpoint %s was deleted", ep.ID)
	case domain.EndpointPaused:
		return refuse("its endpoint %s is paused: resume it first", ep.ID)
	}
	inFlight, err := r.DB.ReplayInFlight(ctx, orgID, src.ID)
	if err != nil {
		return src, ep, err
	}
	if inFlight != uuid.Nil {
		return src, ep, replayInFlight(receiptID, inFlight)
	}
	if ep.Verification == domain.VerifyBasic {
		return src, ep, nil
	}
	if r.Sealer == nil && (ep.Verification == domain.VerifyHMAC || (ep.Verification == domain.VerifyService && ep.RequireSignature)) {
		return src, ep, errors.New("its endpoint requires a signature, and checking it again needs COMMERCE_SECRET_KEY")
	}
	_, err = verify(r.Sealer, ep, keptHeader(src.Headers), src.RawBody(), src.ReceivedAt.Time)
	var refused *unverified
	if errors.As(err, &refused) {
		return refuse("its signature does not verify with the endpoint's secret at the time it was received (%s)", refused.reason)
	}
	return src, ep, err
}

// replayRefused is a replay refusal: ECONFLICT, with the reason.
func replayRefused(receiptID uuid.UUID, format string, args ...any) error {
	return domain.Errorf(domain.ECONFLICT, "receipt %s cannot be replayed: "+format, append([]any{receiptID}, args...)...)
}

// replayInFlight refuses a replay while another replay of the same post is
// still running or parked.
func replayInFlight(receiptID, inFlight uuid.UUID) error {
	return replayRefused(receiptID, "replay %s of it is still running or parked: wait for it, or cancel it", inFlight)
}
