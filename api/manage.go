package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/signature"
	"github.com/commerce-integration/commerce/workflows"
)

// Actor is who makes a management write, as the audit log names it: an API
// key, or an operator at the command line.
type Actor string

// KeyActor is the actor of a write made with an API key.
func KeyActor(keyID uuid.UUID) Actor { return Actor("key:" + keyID.String()) }

// OperatorActor is the actor of a write made at the command line.
func OperatorActor(name string) Actor {
	if name == "" {
		name = "operator"
	}
	return Actor("cli:" + name)
}

// ConsoleActor is the actor of a write made in the support console.
func ConsoleActor(email string) Actor { return Actor("console:" + email) }

// Manager is what support staff and integrators do to inbound receipts and
// webhooks: the management routes and the CLI's receipts and webhook
// commands both call it, and every write it makes is recorded in the audit
// log.
type Manager struct {
	*InboundRunner
	// TemporalUIURL is the Temporal Web UI's address, for links to a
	// receipt's workflow ("" for none); Namespace is Temporal's namespace.
	TemporalUIURL string
	Namespace     string
	// AllowPrivateTargets lets subscriptions name private, loopback and
	// link-local addresses.
	AllowPrivateTargets bool
}

// audit records a management write; a failure to record it is logged, as
// the write itself is done.
func (m *Manager) audit(ctx context.Context, actor Actor, orgID uuid.UUID, action, targetType string, target uuid.UUID, detail map[string]any) {
	err := m.DB.RecordAudit(context.WithoutCancel(ctx), db.NewAuditEntry{OrgID: orgID, Actor: string(actor), Action: action,
		TargetType: targetType, TargetID: target.String(), Detail: detail})
	if err != nil {
		logging.From(ctx, m.Log).Error("recording an audit entry", zap.String("action", action), zap.Error(err))
	}
}

func (m *Manager) workflows() (*workflows.Client, error) {
	if m.Workflows == nil {
		return nil, errors.New("the workflow service is not configured")
	}
	return m.Workflows, nil
}

// ---- receipts

// ReceiptSummary is a receipt as lists show it.
type ReceiptSummary struct {
	ID          uuid.UUID         `json:"id"`
	EndpointID  uuid.UUID         `json:"endpoint_id"`
	Action      domain.Action     `json:"action"`
	ReceivedAt  domain.Timestamp  `json:"received_at"`
	StatusCode  *int              `json:"status_code" doc:"The HTTP status the sender was answered; null while it has no answer."`
	Outcome     domain.Outcome    `json:"outcome" enum:"pending,applied,unchanged,parked,unmatched,cancelled,failed,error"`
	WaitingFor  *string           `json:"waiting_for" doc:"The record a parked post waits for."`
	ReplayOf    *uuid.UUID        `json:"replay_of" doc:"The original post, for a replay."`
	WorkflowID  *string           `json:"workflow_id"`
	Error       *string           `json:"error"`
	SizeBytes   int               `json:"size_bytes"`
	CompletedAt *domain.Timestamp `json:"completed_at"`
	DurationMS  *int              `json:"duration_ms"`
}

func summarise(r db.Receipt) ReceiptSummary {
	return ReceiptSummary{ID: r.ID, EndpointID: r.EndpointID, Action: r.Action, ReceivedAt: r.ReceivedAt, StatusCode: r.StatusCode,
		Outcome: r.Outcome, WaitingFor: r.WaitingFor, ReplayOf: r.ReplayOf, WorkflowID: r.WorkflowID, Error: r.Error,
		SizeBytes: r.SizeBytes, CompletedAt: r.CompletedAt, DurationMS: r.DurationMS}
}

// ReceiptDetail is a receipt with what was posted, what it was answered and
// what it did.
type ReceiptDetail struct {
	ReceiptSummary
	Body          any               `json:"body" doc:"The body posted, as JSON; null when it was not JSON or was not kept whole."`
	BodyComplete  bool              `json:"body_complete" doc:"Whether the whole body was kept (a body over 1 MB keeps only its start)."`
	Headers       map[string]string `json:"headers" doc:"The request headers kept, the signature's v1 values masked."`
	Response      any               `json:"response" doc:"The body the sender was answered."`
	Replays       []uuid.UUID       `json:"replays" doc:"The replays of this receipt, oldest first."`
	TemporalUIURL *string           `json:"temporal_ui_url" doc:"The receipt's workflow in the Temporal Web UI; null when none is configured or no workflow ran."`
	Trace         db.Trace          `json:"trace"`
}

// ListReceipts lists the organisation's receipts, newest first.
func (m *Manager) ListReceipts(ctx context.Context, orgID uuid.UUID, f db.OrgReceiptFilter, p db.Page) ([]ReceiptSummary, error) {
	rows, err := m.DB.ListOrgReceipts(ctx, orgID, f, p)
	out := make([]ReceiptSummary, len(rows))
	for i, r := range rows {
		out[i] = summarise(r)
	}
	return out, err
}

// Receipt returns one of the organisation's receipts with its trace.
func (m *Manager) Receipt(ctx context.Context, orgID, id uuid.UUID) (ReceiptDetail, error) {
	r, err := m.DB.GetReceipt(ctx, orgID, id)
	if err != nil {
		return ReceiptDetail{}, err
	}
	d := ReceiptDetail{ReceiptSummary: summarise(r), BodyComplete: r.BodyComplete(), Headers: maskHeaders(r.Headers)}
	if len(r.Body) > 0 {
		_ = json.Unmarshal(r.Body, &d.Body)
	}
	if len(r.Response) > 0 {
		_ = json.Unmarshal(r.Response, &d.Response)
	}
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
func (m *Manager) workflowURL(workflowID string) string {
	ns := m.Namespace
	if ns == "" {
		ns = "default"
	}
	return strings.TrimSuffix(m.TemporalUIURL, "/") + "/namespaces/" + url.PathEscape(ns) + "/workflows/" + url.PathEscape(workflowID)
}

// maskHeaders hides the signature's v1 values: a kept signature is a
// credential for the body it signs, within its tolerance.
func maskHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if strings.EqualFold(k, signature.Header) {
			parts := strings.Split(v, ",")
			for i, p := range parts {
				if name, _, ok := strings.Cut(strings.TrimSpace(p), "="); ok && name != "t" {
					parts[i] = name + "=***"
				}
			}
			v = strings.Join(parts, ",")
		}
		out[k] = v
	}
	return out
}

// ReplayResult is what a replay did, or for a dry run would do.
type ReplayResult struct {
	DryRun bool `json:"dry_run"`
	// Receipt is the replay's new receipt (null for a dry run).
	Receipt *ReceiptDetail `json:"receipt" doc:"The replay's new receipt, with its outcome and trace; null for a dry run."`
	// Outcome and Changes are what it did (or would do).
	Outcome domain.Outcome  `json:"outcome" enum:"pending,applied,unchanged,parked,unmatched,cancelled,failed,error"`
	Changes []domain.Change `json:"changes" doc:"The changes it made, or for a dry run would make."`
	Error   *string         `json:"error" doc:"Why it did not go through (the action's refusal), when it did not."`
}

// ReplayReceipt replays one of the organisation's receipts (DESIGN.md
// section 11), or with dryRun works out the changes a replay would make
// and writes nothing. A receipt the replay rules refuse is ECONFLICT with
// the reason.
func (m *Manager) ReplayReceipt(ctx context.Context, actor Actor, orgID, id uuid.UUID, dryRun bool) (ReplayResult, error) {
	if dryRun {
		res, err := m.DryRun(ctx, orgID, id)
		if err != nil && domain.ErrorCode(err) != domain.EINTERNAL && domain.ErrorCode(err) != domain.ECONFLICT &&
			domain.ErrorCode(err) != domain.ENOTFOUND {
			// The action itself refuses: that is what the replay would answer.
			msg := domain.ErrorMessage(err)
			return ReplayResult{DryRun: true, Outcome: domain.OutcomeFailed, Changes: []domain.Change{}, Error: &msg}, nil
		}
		if err != nil {
			return ReplayResult{}, err
		}
		return ReplayResult{DryRun: true, Outcome: res.Outcome, Changes: nonNilChanges(res.Changes)}, nil
	}
	// A refused replay is told before Temporal is reached.
	if err := m.CheckReplay(ctx, orgID, id); err != nil {
		return ReplayResult{}, err
	}
	if _, err := m.workflows(); err != nil {
		return ReplayResult{}, err
	}
	replayed, err := m.Replay(ctx, orgID, id)
	if err != nil {
		return ReplayResult{}, err
	}
	m.audit(ctx, actor, orgID, "receipt.replay", "receipt", id, map[string]any{"replay_receipt_id": replayed.ReceiptID})
	d, err := m.Receipt(ctx, orgID, replayed.ReceiptID)
	if err != nil {
		return ReplayResult{}, err
	}
	out := ReplayResult{Receipt: &d, Outcome: d.Outcome, Changes: []domain.Change{}, Error: d.Error}
	var answer struct {
		Changes []domain.Change `json:"changes"`
	}
	if json.Unmarshal(replayed.Body, &answer) == nil && answer.Changes != nil {
		out.Changes = answer.Changes
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
func (m *Manager) CancelReceipt(ctx context.Context, actor Actor, orgID, id uuid.UUID) (ReceiptDetail, error) {
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
	return m.Receipt(ctx, orgID, id)
}

// StartBulkReplay records a bulk replay of the receipts the filter selects
// (at most db.MaxReplayBatch) and starts its workflow replay-batch/<id>.
func (m *Manager) StartBulkReplay(ctx context.Context, actor Actor, in db.NewReplayBatch) (db.ReplayBatch, error) {
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
	if err := wf.StartReplayBatch(ctx, domain.ReplayBatchInput{OrgID: in.OrgID, BatchID: id, DryRun: in.DryRun}); err != nil {
		// No workflow carries it: it ends stopped, with nothing done.
		if endErr := m.DB.EndReplayBatch(context.WithoutCancel(ctx), in.OrgID, id, "stopped"); endErr != nil {
			logging.From(ctx, m.Log).Error("stopping a bulk replay that did not start", zap.Error(endErr))
		}
		return db.ReplayBatch{}, err
	}
	return m.DB.GetReplayBatch(ctx, in.OrgID, id)
}

// StopBulkReplay stops a running bulk replay after the receipts under way.
func (m *Manager) StopBulkReplay(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.ReplayBatch, error) {
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

// ---- webhooks

// CreateSubscription subscribes a URL to the organisation's events; the
// answer carries the secret, which is never readable again.
func (m *Manager) CreateSubscription(ctx context.Context, actor Actor, orgID uuid.UUID, rawURL string, events []string) (db.CreatedSubscription, error) {
	u, err := outbound.CheckURL(ctx, rawURL, m.AllowPrivateTargets)
	if err != nil {
		return db.CreatedSubscription{}, domain.Errorf(domain.EINVALID, "url: %v", err)
	}
	s, err := m.DB.CreateSubscription(ctx, m.Sealer, db.NewSubscription{OrgID: orgID, URL: u.String(), EventTypes: events})
	if err != nil {
		return s, err
	}
	m.audit(ctx, actor, orgID, "subscription.create", "subscription", s.ID, map[string]any{"url": outbound.Origin(s.URL), "events": s.EventTypes})
	return s, nil
}

// UpdateSubscription changes a subscription's URL, events or active flag.
func (m *Manager) UpdateSubscription(ctx context.Context, actor Actor, orgID, id uuid.UUID, ch db.SubscriptionChange) (db.Subscription, error) {
	if ch.URL != nil {
		u, err := outbound.CheckURL(ctx, *ch.URL, m.AllowPrivateTargets)
		if err != nil {
			return db.Subscription{}, domain.Errorf(domain.EINVALID, "url: %v", err)
		}
		s := u.String()
		ch.URL = &s
	}
	s, err := m.DB.UpdateSubscription(ctx, orgID, id, ch)
	if err != nil {
		return s, err
	}
	detail := map[string]any{}
	if ch.URL != nil {
		detail["url"] = outbound.Origin(*ch.URL)
	}
	if ch.EventTypes != nil {
		detail["events"] = *ch.EventTypes
	}
	if ch.Active != nil {
		detail["active"] = *ch.Active
	}
	m.audit(ctx, actor, orgID, "subscription.update", "subscription", id, detail)
	return s, nil
}

// DeleteSubscription removes a subscription with its deliveries.
func (m *Manager) DeleteSubscription(ctx context.Context, actor Actor, orgID, id uuid.UUID) error {
	if err := m.DB.DeleteSubscription(ctx, orgID, id); err != nil {
		return err
	}
	m.audit(ctx, actor, orgID, "subscription.delete", "subscription", id, nil)
	return nil
}

// RotateSecret gives a subscription a new secret; the old one keeps signing
// beside it for 24 hours.
func (m *Manager) RotateSecret(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.RotatedSecret, error) {
	r, err := m.DB.RotateSubscriptionSecret(ctx, m.Sealer, orgID, id)
	if err != nil {
		return r, err
	}
	m.audit(ctx, actor, orgID, "subscription.rotate_secret", "subscription", id, map[string]any{"previous_expires_at": r.PreviousExpiresAt})
	return r, nil
}

// Resend makes an attempt of one of the organisation's deliveries now.
func (m *Manager) Resend(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.WebhookDelivery, error) {
	x, err := m.DB.GetWebhookDelivery(ctx, orgID, id)
	if err != nil {
		return x, err
	}
	if err := m.resend(ctx, x); err != nil {
		return x, err
	}
	m.audit(ctx, actor, orgID, "delivery.resend", "delivery", id, nil)
	return x, nil
}

// resend makes an attempt of a delivery now: one that is over (succeeded
// or exhausted) gets a run of one attempt; one still under way is told to
// attempt at once (or, if its workflow is gone, carried on from where it
// stands).
func (m *Manager) resend(ctx context.Context, x db.WebhookDelivery) error {
	wf, err := m.workflows()
	if err != nil {
		return err
	}
	over := x.Status == domain.WebhookSucceeded || x.Status == domain.WebhookExhausted
	ref := domain.WebhookDeliveryRef{ID: x.ID, OrgID: x.OrgID, EventID: x.EventID, EventType: x.EventType,
		SubscriptionID: x.SubscriptionID, Attempts: x.Attempts}
	if err := wf.ResendWebhook(ctx, ref, over); err != nil {
		return err
	}
	return m.DB.MarkWebhookDeliveriesStarted(ctx, []uuid.UUID{x.ID})
}

// Recover resends every delivery of a subscription created since then that
// failed or was exhausted, and returns how many.
func (m *Manager) Recover(ctx context.Context, actor Actor, orgID, subscriptionID uuid.UUID, since time.Time) (int, error) {
	list, err := m.DB.RecoverableDeliveries(ctx, orgID, subscriptionID, since)
	if err != nil {
		return 0, err
	}
	if _, err := m.workflows(); err != nil {
		return 0, err
	}
	n := 0
	for _, x := range list {
		if err := m.resend(ctx, x); err != nil {
			m.audit(ctx, actor, orgID, "subscription.recover", "subscription", subscriptionID,
				map[string]any{"since": domain.NewTimestamp(since), "resent": n, "interrupted": true})
			return n, err
		}
		n++
	}
	m.audit(ctx, actor, orgID, "subscription.recover", "subscription", subscriptionID,
		map[string]any{"since": domain.NewTimestamp(since), "resent": n})
	return n, nil
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

// ---- inbound endpoints

// Endpoints lists a page of the organisation's inbound endpoints, newest
// first, with their receipts of the last 24 hours counted by outcome; never
// a token or a secret.
func (m *Manager) Endpoints(ctx context.Context, orgID uuid.UUID, p db.Page) ([]EndpointItem, error) {
	rows, err := m.DB.ListEndpointSummaries(ctx, orgID, p)
	items := make([]EndpointItem, len(rows))
	for i, e := range rows {
		items[i] = EndpointItem{ID: e.ID, Name: e.Name, Action: e.Action, URLHint: e.TokenHint, RequireSignature: e.RequireSignature,
			Active: e.State == domain.EndpointActive, State: string(e.State), CreatedAt: e.CreatedAt, Counts: map[string]int{}}
		if e.State == domain.EndpointDeleted {
			items[i].URLHint = nil
		}
		for o, n := range e.Counts {
			items[i].Counts[string(o)] = n
		}
	}
	return items, err
}

// CreateEndpoint makes an inbound endpoint as the user named in
// in.AsEmail (who must be an owner or admin); the answer carries its token
// and secret, never readable again.
func (m *Manager) CreateEndpoint(ctx context.Context, actor Actor, in db.NewEndpoint) (db.CreatedEndpoint, error) {
	e, err := m.DB.CreateEndpoint(ctx, m.Sealer, in)
	if err != nil {
		return e, err
	}
	m.audit(ctx, actor, in.OrgID, "endpoint.create", "endpoint", e.ID, map[string]any{"name": e.Name, "action": e.Action,
		"require_signature": e.RequireSignature})
	return e, nil
}

// SetEndpointState pauses, resumes or deletes one of the organisation's
// endpoints.
func (m *Manager) SetEndpointState(ctx context.Context, actor Actor, orgID, id uuid.UUID, to domain.EndpointState) (db.Endpoint, error) {
	e, err := m.DB.SetEndpointState(ctx, orgID, id, to)
	if err != nil {
		return e, err
	}
	verb := map[domain.EndpointState]string{domain.EndpointActive: "resume", domain.EndpointPaused: "pause", domain.EndpointDeleted: "delete"}[to]
	m.audit(ctx, actor, orgID, "endpoint."+verb, "endpoint", id, nil)
	return e, nil
}
