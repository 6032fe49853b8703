package integrations

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
)

// ReceiptSummary is a receipt as lists show it.
type ReceiptSummary struct {
	ID                 uuid.UUID
	EndpointID         uuid.UUID
	Action             domain.Action
	ReceivedAt         domain.Timestamp
	StatusCode         *int
	Outcome            domain.Outcome
	Refs               []string
	WaitingFor         []string
	WaitingDescription *string
	ReplayOf           *uuid.UUID
	WorkflowID         *string
	Error              *string
	SizeBytes          int
	CompletedAt        *domain.Timestamp
	DurationMS         *int
	TraceID            *string
	// MappingVersion is the version of the endpoint's mapping that ran on
	// the post (nil: none ran).
	MappingVersion *int
	// Resolution says what resolved a failed or parked post (nil: nothing
	// has).
	Resolution *db.Resolution
}

func summarise(r db.Receipt) ReceiptSummary {
	if r.WaitingKeys == nil {
		r.WaitingKeys = []string{}
	}
	if r.Refs == nil {
		r.Refs = []string{}
	}
	return ReceiptSummary{ID: r.ID, EndpointID: r.EndpointID, Action: r.Action, ReceivedAt: r.ReceivedAt, StatusCode: r.StatusCode,
		Refs: r.Refs, WaitingFor: r.WaitingKeys, WaitingDescription: r.WaitingFor, Outcome: r.Outcome, ReplayOf: r.ReplayOf, WorkflowID: r.WorkflowID, Error: r.Error,
		SizeBytes: r.SizeBytes, CompletedAt: r.CompletedAt, DurationMS: r.DurationMS, TraceID: r.TraceID, MappingVersion: r.MappingVersion,
		Resolution: r.Resolution}
}

// ReceiptDetail is a receipt with what was posted, what it was answered and
// what it did.
type ReceiptDetail struct {
	ReceiptSummary
	// Body and Response are the body posted and the answer, decoded; nil
	// when one is not JSON.
	Body         any
	BodyComplete bool
	// MappedBody is the body the endpoint's mapping made of Body, which
	// the action applied (nil where none ran or it made none).
	MappedBody    json.RawMessage
	Headers       map[string]string
	Response      any
	Replays       []uuid.UUID
	TemporalUIURL *string
	Trace         db.Trace
}

// ListReceipts lists the organisation's receipts, newest first.
func (m *Service) ListReceipts(ctx context.Context, orgID uuid.UUID, f db.OrgReceiptFilter, p db.Page) ([]ReceiptSummary, error) {
	rows, err := m.DB.ListOrgReceipts(ctx, orgID, f, p)
	out := make([]ReceiptSummary, len(rows))
	for i, r := range rows {
		out[i] = summarise(r)
	}
	return out, err
}

// Receipt returns one of the organisation's receipts with its trace.
func (m *Service) Receipt(ctx context.Context, orgID, id uuid.UUID) (ReceiptDetail, error) {
	r, err := m.DB.GetReceipt(ctx, orgID, id)
	if err != nil {
		return ReceiptDetail{}, err
	}
	return m.detail(ctx, orgID, r)
}

// detail is a receipt read already, with its body, answer and trace.
func (m *Service) detail(ctx context.Context, orgID uuid.UUID, r db.Receipt) (ReceiptDetail, error) {
	ep, err := m.DB.Endpoint(ctx, orgID, r.EndpointID)
	if err != nil {
		return ReceiptDetail{}, err
	}
	d := ReceiptDetail{ReceiptSummary: summarise(r), BodyComplete: r.BodyComplete(), Headers: MaskedHeaders(ep, r.Headers)}
	if len(r.Body) > 0 {
		_ = json.Unmarshal(r.Body, &d.Body)
	}
	if len(r.Response) > 0 {
		_ = json.Unmarshal(r.Response, &d.Response)
	}
	d.MappedBody = r.MappedBody
	if d.Trace, d.Replays, err = m.DB.ReceiptTrace(ctx, orgID, r); err != nil {
		return d, err
	}
	if r.WorkflowID != nil && m.TemporalUIURL != "" {
		u := m.workflowURL(*r.WorkflowID)
		d.TemporalUIURL = &u
	}
	return d, nil
}

// workflowURL is a workflow's page in the Temporal Web UI.
func (m *Service) workflowURL(workflowID string) string {
	ns := m.Namespace
	if ns == "" {
		ns = "default"
	}
	return strings.TrimSuffix(m.TemporalUIURL, "/") + "/namespaces/" + url.PathEscape(ns) + "/workflows/" + url.PathEscape(workflowID)
}

// ReplayResult is what a replay did, or for a dry run would do.
type ReplayResult struct {
	DryRun bool
	// Receipt is the replay's new receipt (nil for a dry run).
	Receipt *ReceiptDetail
	// Outcome and Changes are what it did (or would do).
	Outcome domain.Outcome
	Changes []domain.Change
	Error   *string
	// MappingVersion and MappedBody are the mapping the replay ran on the
	// stored body and what it made (nil where none ran).
	MappingVersion *int
	MappedBody     json.RawMessage
}

// ReplayReceipt replays one of the organisation's receipts (the replay
// rules: docs/design.md#replay), or with dryRun works out the changes
// a replay would make and writes nothing. A receipt the replay rules refuse
// is ECONFLICT with the reason, told before anything is stored or Temporal
// is reached.
func (m *Service) ReplayReceipt(ctx context.Context, actor Actor, orgID, id uuid.UUID, dryRun bool, choice domain.MappingChoice) (ReplayResult, error) {
	if dryRun {
		res, err := m.DryRun(ctx, orgID, id, choice)
		if err != nil && !slices.Contains([]domain.Code{domain.EINTERNAL, domain.ECONFLICT, domain.ENOTFOUND}, domain.ErrorCode(err)) {
			// The action (or the mapping) refuses: that is what the replay
			// would answer.
			msg := domain.ErrorMessage(err)
			return ReplayResult{DryRun: true, Outcome: domain.OutcomeFailed, Changes: []domain.Change{}, Error: &msg,
				MappingVersion: res.MappingVersion, MappedBody: res.MappedBody}, nil
		}
		if err != nil {
			return ReplayResult{}, err
		}
		return ReplayResult{DryRun: true, Outcome: res.Outcome, Changes: nonNilChanges(res.Changes),
			MappingVersion: res.MappingVersion, MappedBody: res.MappedBody}, nil
	}
	replayed, err := m.Replay(ctx, orgID, id, choice)
	if err != nil {
		return ReplayResult{}, err
	}
	m.audit(ctx, actor, orgID, "receipt.replay", "receipt", id, map[string]any{"replay_receipt_id": replayed.ReceiptID,
		"mapping_version": choice.String()})
	d, err := m.Receipt(ctx, orgID, replayed.ReceiptID)
	if err != nil {
		return ReplayResult{}, err
	}
	out := ReplayResult{Receipt: &d, Outcome: d.Outcome, Changes: []domain.Change{}, Error: d.Error, MappingVersion: d.MappingVersion,
		MappedBody: d.MappedBody}
	if res := replayed.Outcome.Result; res != nil && res.Changes != nil {
		out.Changes = res.Changes
	}
	return out, nil
}

func nonNilChanges(c []domain.Change) []domain.Change {
	if c == nil {
		return []domain.Change{}
	}
	return c
}

// CancelReceipt stops one of the organisation's parked posts; its workflow
// records it cancelled (it can be replayed later). A receipt that is not
// parked is ECONFLICT.
func (m *Service) CancelReceipt(ctx context.Context, actor Actor, orgID, id uuid.UUID) (ReceiptDetail, error) {
	r, err := m.DB.GetReceipt(ctx, orgID, id)
	if err != nil {
		return ReceiptDetail{}, err
	}
	if r.Outcome != domain.OutcomeParked {
		return ReceiptDetail{}, domain.Errorf(domain.ECONFLICT, "receipt %s is %s, not parked", id, r.Outcome)
	}
	wf, err := m.workflows()
	if err != nil {
		return ReceiptDetail{}, err
	}
	if err := wf.CancelInbound(ctx, id); err != nil {
		return ReceiptDetail{}, err
	}
	m.audit(ctx, actor, orgID, "receipt.cancel", "receipt", id, nil)
	// The workflow records the cancellation; wait for it briefly.
	for range 50 {
		if r, err = m.DB.GetReceipt(ctx, orgID, id); err != nil || r.Outcome != domain.OutcomeParked {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return ReceiptDetail{}, err
	}
	return m.detail(ctx, orgID, r)
}

// StartBulkReplay records a bulk replay of the receipts the filter selects
// (at most db.MaxReplayBatch) and starts its workflow replay-batch/<id>.
func (m *Service) StartBulkReplay(ctx context.Context, actor Actor, in db.NewReplayBatch) (db.ReplayBatch, error) {
	if len(in.Outcomes) == 0 {
		return db.ReplayBatch{}, domain.Errorf(domain.EINVALID, "outcome is required: the outcomes of the receipts to replay (comma-separated)")
	}
	if in.EndpointID != nil {
		if _, err := m.DB.Endpoint(ctx, in.OrgID, *in.EndpointID); err != nil {
			return db.ReplayBatch{}, domain.Errorf(domain.EINVALID, "endpoint_id names no endpoint of the organisation")
		}
	}
	wf, err := m.workflows()
	if err != nil {
		return db.ReplayBatch{}, err
	}
	in.CreatedBy = string(actor)
	id, total, err := m.DB.CreateReplayBatch(ctx, in)
	if err != nil {
		return db.ReplayBatch{}, err
	}
	m.audit(ctx, actor, in.OrgID, "replay_batch.start", "replay_batch", id, map[string]any{"total": total, "dry_run": in.DryRun})
	if err := wf.StartReplayBatch(ctx, domain.ReplayBatchInput{OrgID: in.OrgID, BatchID: id, DryRun: in.DryRun, Mapping: in.Mapping}); err != nil {
		// No workflow carries it: it ends stopped, with nothing done.
		if endErr := m.DB.EndReplayBatch(context.WithoutCancel(ctx), in.OrgID, id, "stopped"); endErr != nil {
			logging.From(ctx, m.Log).Error("stopping a bulk replay that did not start", zap.Error(endErr))
		}
		return db.ReplayBatch{}, err
	}
	return m.DB.GetReplayBatch(ctx, in.OrgID, id)
}

// StopBulkReplay stops a running bulk replay after the receipts under way.
func (m *Service) StopBulkReplay(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.ReplayBatch, error) {
	b, err := m.DB.GetReplayBatch(ctx, orgID, id)
	if err != nil {
		return b, err
	}
	if b.Status != "running" {
		return b, domain.Errorf(domain.ECONFLICT, "replay batch %s is %s", id, b.Status)
	}
	if err := m.DB.EndReplayBatch(ctx, orgID, id, "stopped"); err != nil {
		return b, err
	}
	m.audit(ctx, actor, orgID, "replay_batch.stop", "replay_batch", id, nil)
	return m.DB.GetReplayBatch(ctx, orgID, id)
}

// batchOutcome maps a replay's receipt outcome to a batch item outcome.
func batchOutcome(o domain.Outcome) string {
	switch o {
	case domain.OutcomeApplied, domain.OutcomeUnchanged, domain.OutcomeParked:
		return string(o)
	case domain.OutcomePending:
		return ""
	}
	return "failed"
}
