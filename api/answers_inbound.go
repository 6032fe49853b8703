package api

import (
	"encoding/json"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// The answers of the inbound management routes: endpoints, receipts with
// their traces, replays and bulk replays. integrations and db return the
// values; these are their shape on the wire, with the descriptions the
// OpenAPI document gives them (docs/design.md#the-management-api).

// EndpointItem is an inbound endpoint as support sees it: never its token
// or secret.
type EndpointItem struct {
	ID               uuid.UUID            `json:"id"`
	Name             string               `json:"name"`
	Action           domain.Action        `json:"action"`
	URLHint          *string              `json:"url_hint" doc:"The last four characters of the endpoint's token, to tell URLs apart; null for endpoints made before hints were kept, and for deleted ones."`
	RequireSignature bool                 `json:"require_signature" doc:"Whether posts must carry the service's own signature (X-Service-Signature or Standard Webhooks): verification service on an endpoint made to require one."`
	Verification     EndpointVerification `json:"verification"`
	Active           bool                 `json:"active"`
	State            string               `json:"state" enum:"active,paused,deleted"`
	CreatedAt        domain.Timestamp     `json:"created_at"`
	Counts           map[string]int       `json:"counts" doc:"Receipts of the last 24 hours by outcome (outcomes with none are left out)."`
	FailingSince     *domain.Timestamp    `json:"failing_since" doc:"Since when more than half of the endpoint's posts of the last 15 minutes (10 or more) failed or ended in error; null when they do not."`
}

func newEndpointItem(e integrations.EndpointItem) EndpointItem {
	return EndpointItem{ID: e.ID, Name: e.Name, Action: e.Action, URLHint: e.URLHint, RequireSignature: e.RequireSignature,
		Verification: NewEndpointVerification(e.Verification, e.VerificationConfig), Active: e.Active, State: e.State,
		CreatedAt: e.CreatedAt, Counts: e.Counts, FailingSince: e.FailingSince}
}

// EndpointVerification is how an endpoint verifies its sender, never with
// its secret.
type EndpointVerification struct {
	Kind     domain.Verification `json:"kind" enum:"service,hmac,basic,none" doc:"service: the service's own signature, when the endpoint was made to require one; hmac: the sender's own HMAC of the body; basic: HTTP Basic authentication; none: nothing but the token in the URL." example:"hmac"`
	HMAC     *HMACScheme         `json:"hmac,omitempty" doc:"The sender's HMAC scheme; only for kind hmac."`
	Username *string             `json:"username,omitempty" doc:"The HTTP Basic username; only for kind basic." example:"erp"`
}

// NewEndpointVerification is the answer of an endpoint's verification; the
// CLI prints it too.
func NewEndpointVerification(kind domain.Verification, cfg domain.VerificationConfig) EndpointVerification {
	v := EndpointVerification{Kind: kind}
	if c := cfg.HMAC; c != nil {
		v.HMAC = &HMACScheme{Header: c.Header, Algorithm: c.Algorithm, Encoding: c.Encoding, Prefix: c.Prefix,
			TimestampHeader: c.TimestampHeader, ToleranceSeconds: c.ToleranceSeconds}
	}
	if cfg.Username != "" {
		v.Username = &cfg.Username
	}
	return v
}

// HMACScheme is how a sender signs its posts with an HMAC
// (docs/design.md#sender-verification).
type HMACScheme struct {
	Header           string `json:"header" minLength:"1" maxLength:"100" doc:"The request header carrying the signature." example:"X-Hub-Signature-256"`
	Algorithm        string `json:"algorithm" enum:"sha256,sha512" doc:"The HMAC's hash." example:"sha256"`
	Encoding         string `json:"encoding" enum:"hex,base64" doc:"How the HMAC is written in the header: hex (either case) or base64." example:"hex"`
	Prefix           string `json:"prefix,omitempty" maxLength:"50" doc:"Text before the encoded HMAC in the header (GitHub's sha256=); none when absent." example:"sha256="`
	TimestampHeader  string `json:"timestamp_header,omitempty" maxLength:"100" doc:"A header carrying the time the post was signed, in unix seconds. When set, the signed content is <timestamp>.<body> (the timestamp as sent, a dot, the body as sent) and a post signed more than tolerance_seconds from the service's clock is refused 401; when absent, the signed content is the body as sent, and nothing is ever stale."`
	ToleranceSeconds int    `json:"tolerance_seconds,omitempty" minimum:"1" maximum:"86400" doc:"How far the signed time may be from the service's clock, in seconds; 300 when absent. Only with timestamp_header."`
}

// ReceiptSummary is a receipt as lists show it.
type ReceiptSummary struct {
	ID                 uuid.UUID          `json:"id"`
	EndpointID         uuid.UUID          `json:"endpoint_id"`
	Action             domain.Action      `json:"action"`
	ReceivedAt         domain.Timestamp   `json:"received_at"`
	StatusCode         *int               `json:"status_code" doc:"The HTTP status the sender was answered; null while it has no answer."`
	Outcome            domain.Outcome     `json:"outcome" enum:"pending,applied,unchanged,parked,unmatched,cancelled,failed,error,ignored"`
	Refs               []string           `json:"refs" doc:"The business references the body names (order, quote, invoice, purchase order, supplier, delivery and consignment references, customers' external ids), at most 50."`
	WaitingFor         []string           `json:"waiting_for" doc:"For a parked post, the records it waits for, as kind:reference (order:SO-2026-0250); empty for any other."`
	WaitingDescription *string            `json:"waiting_description" doc:"For a parked post, what it waits for, in words."`
	ReplayOf           *uuid.UUID         `json:"replay_of" doc:"The original post, for a replay."`
	WorkflowID         *string            `json:"workflow_id"`
	Error              *string            `json:"error"`
	SizeBytes          int                `json:"size_bytes"`
	CompletedAt        *domain.Timestamp  `json:"completed_at"`
	DurationMS         *int               `json:"duration_ms"`
	TraceID            *string            `json:"trace_id" doc:"The OpenTelemetry trace the post was received in: its HTTP request, workflow, SQL and the webhooks it caused. Null when tracing is off."`
	MappingVersion     *int               `json:"mapping_version" doc:"The version of the endpoint's mapping that ran on the post; null when none ran."`
	Resolution         *ReceiptResolution `json:"resolution" doc:"What resolved this post when it failed or was parked: a replay of it (or of its original) that applied or found nothing to change, or its cancellation; null when nothing has. Lists of failures leave resolved posts out unless asked (resolved)."`
}

// ReceiptResolution is what resolved a failed or parked post.
type ReceiptResolution struct {
	By        string           `json:"by" enum:"replay,cancel" doc:"replay: a replay applied or found nothing to change; cancel: the parked post was cancelled on purpose."`
	ReceiptID *uuid.UUID       `json:"receipt_id,omitempty" doc:"The replay that resolved it; only for by replay."`
	At        domain.Timestamp `json:"at" doc:"When it was resolved."`
}

// NewReceiptResolution is the answer of a receipt's resolution; the CLI
// prints it too.
func NewReceiptResolution(r *db.Resolution) *ReceiptResolution {
	if r == nil {
		return nil
	}
	return &ReceiptResolution{By: r.By, ReceiptID: r.ReceiptID, At: r.At}
}

func newReceiptSummary(r integrations.ReceiptSummary) ReceiptSummary {
	return ReceiptSummary{ID: r.ID, EndpointID: r.EndpointID, Action: r.Action, ReceivedAt: r.ReceivedAt, StatusCode: r.StatusCode,
		Outcome: r.Outcome, Refs: r.Refs, WaitingFor: r.WaitingFor, WaitingDescription: r.WaitingDescription, ReplayOf: r.ReplayOf,
		WorkflowID: r.WorkflowID, Error: r.Error, SizeBytes: r.SizeBytes, CompletedAt: r.CompletedAt, DurationMS: r.DurationMS,
		TraceID: r.TraceID, MappingVersion: r.MappingVersion, Resolution: NewReceiptResolution(r.Resolution)}
}

// ReceiptDetail is a receipt with what was posted, what it was answered and
// what it did.
type ReceiptDetail struct {
	ReceiptSummary
	Body          any               `json:"body" doc:"The body posted, as JSON; null when it was not JSON or was not kept whole."`
	BodyComplete  bool              `json:"body_complete" doc:"Whether the whole body was kept (a body over 1 MB keeps only its start)."`
	MappedBody    any               `json:"mapped_body,omitempty" doc:"The body the endpoint's mapping made of body, which the action applied; absent when no mapping ran or it made none."`
	Headers       map[string]string `json:"headers" doc:"The request headers kept, the signature's v1 values masked."`
	Response      any               `json:"response" doc:"The body the sender was answered."`
	Replays       []uuid.UUID       `json:"replays" doc:"The replays of this receipt, oldest first."`
	TemporalUIURL *string           `json:"temporal_ui_url" doc:"The receipt's workflow in the Temporal Web UI; null when none is configured or no workflow ran."`
	Trace         Trace             `json:"trace"`
}

func newReceiptDetail(d integrations.ReceiptDetail) ReceiptDetail {
	return ReceiptDetail{ReceiptSummary: newReceiptSummary(d.ReceiptSummary), Body: d.Body, BodyComplete: d.BodyComplete,
		MappedBody: jsonOrAbsent(d.MappedBody), Headers: d.Headers, Response: d.Response, Replays: d.Replays, TemporalUIURL: d.TemporalUIURL, Trace: NewTrace(d.Trace)}
}

// Trace is what a post did: the changes its effect made (the effect of the
// original post, for a replay), the events they emitted and those events'
// deliveries.
type Trace struct {
	EffectOf uuid.UUID       `json:"effect_of" doc:"The receipt the effect belongs to: this one, or the original post of a replay."`
	Applied  bool            `json:"applied" doc:"Whether the effect was recorded (false while the post has not gone through)."`
	Changes  []domain.Change `json:"changes"`
	Events   []TraceEvent    `json:"events"`
}

// TraceEvent is an event an inbound post's effect emitted, with the
// deliveries of it.
type TraceEvent struct {
	ID         uuid.UUID         `json:"id"`
	Type       string            `json:"type"`
	CreatedAt  domain.Timestamp  `json:"created_at"`
	Data       domain.JSONObject `json:"data"`
	Deliveries []TraceDelivery   `json:"deliveries" doc:"The event's deliveries to subscriptions, with where each stands now."`
}

// TraceDelivery is a delivery of a traced event and its latest status.
type TraceDelivery struct {
	ID             uuid.UUID            `json:"id"`
	SubscriptionID uuid.UUID            `json:"subscription_id"`
	Status         domain.WebhookStatus `json:"status" enum:"pending,succeeded,failed,exhausted"`
	Attempts       int                  `json:"attempts"`
	LastStatusCode *int                 `json:"last_status_code"`
	UpdatedAt      domain.Timestamp     `json:"updated_at"`
}

// NewTrace is the answer of a receipt's trace; the CLI prints it in a
// receipt too.
func NewTrace(t db.Trace) Trace {
	return Trace{EffectOf: t.EffectOf, Applied: t.Applied, Changes: t.Changes,
		Events: Answers(t.Events, func(e db.TraceEvent) TraceEvent {
			return TraceEvent{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: e.Data,
				Deliveries: Answers(e.Deliveries, func(x db.TraceDelivery) TraceDelivery {
					return TraceDelivery{ID: x.ID, SubscriptionID: x.SubscriptionID, Status: x.Status, Attempts: x.Attempts,
						LastStatusCode: x.LastStatusCode, UpdatedAt: x.UpdatedAt}
				})}
		})}
}

// ReplayResult is what a replay did, or for a dry run would do.
type ReplayResult struct {
	DryRun         bool            `json:"dry_run"`
	Receipt        *ReceiptDetail  `json:"receipt" doc:"The replay's new receipt, with its outcome and trace; null for a dry run."`
	Outcome        domain.Outcome  `json:"outcome" enum:"pending,applied,unchanged,parked,unmatched,cancelled,failed,error,ignored"`
	Changes        []domain.Change `json:"changes" doc:"The changes it made, or for a dry run would make."`
	Error          *string         `json:"error" doc:"Why it did not go through (the action's refusal, or its mapping's), when it did not."`
	MappingVersion *int            `json:"mapping_version" doc:"The version of the endpoint's mapping the stored body was mapped with again; null when none ran."`
	MappedBody     any             `json:"mapped_body,omitempty" doc:"The body that mapping made, which the action applies (or for a dry run would); absent when none ran."`
}

// NewReplayResult is the answer of a replay; the CLI prints a dry run's.
func NewReplayResult(r integrations.ReplayResult) ReplayResult {
	out := ReplayResult{DryRun: r.DryRun, Outcome: r.Outcome, Changes: r.Changes, Error: r.Error, MappingVersion: r.MappingVersion,
		MappedBody: jsonOrAbsent(r.MappedBody)}
	if r.Receipt != nil {
		d := newReceiptDetail(*r.Receipt)
		out.Receipt = &d
	}
	return out
}

// ReplayBatch is a bulk replay and its progress.
type ReplayBatch struct {
	ID         uuid.UUID            `json:"id"`
	Status     string               `json:"status" enum:"running,completed,stopped" doc:"running, completed, or stopped before the end."`
	DryRun     bool                 `json:"dry_run"`
	Total      int                  `json:"total" doc:"Receipts in the batch."`
	Done       int                  `json:"done" doc:"Receipts handled so far."`
	Applied    int                  `json:"applied" doc:"Replays that changed something (for a dry run: that would)."`
	Unchanged  int                  `json:"unchanged" doc:"Replays that changed nothing."`
	Parked     int                  `json:"parked" doc:"Replays parked, still waiting for the record they name."`
	Failed     int                  `json:"failed" doc:"Replays that were refused or did not go through."`
	Skipped    int                  `json:"skipped" doc:"Receipts the replay rules refused (a paused endpoint, a replay already running, ...)."`
	StartedAt  domain.Timestamp     `json:"started_at"`
	FinishedAt *domain.Timestamp    `json:"finished_at"`
	Problems   []ReplayBatchProblem `json:"problems" doc:"Every receipt so far that failed or was skipped, in the batch's order, with the reason."`
}

// ReplayBatchProblem is a receipt of a bulk replay that was not replayed
// as asked: its replay failed, or the replay rules skipped it.
type ReplayBatchProblem struct {
	ReceiptID  uuid.UUID        `json:"receipt_id"`
	ReceivedAt domain.Timestamp `json:"received_at" doc:"When the receipt was received."`
	Refs       []string         `json:"refs" doc:"The receipt's references."`
	Outcome    string           `json:"outcome" enum:"failed,skipped"`
	Reason     *string          `json:"reason" doc:"Why: the replay rule that skipped it, or what the replay was answered."`
	ReplayID   *uuid.UUID       `json:"replay_id" doc:"The replay's receipt, when one was stored."`
}

func newReplayBatch(b db.ReplayBatch) ReplayBatch {
	return ReplayBatch{ID: b.ID, Status: b.Status, DryRun: b.DryRun, Total: b.Total, Done: b.Done, Applied: b.Applied,
		Unchanged: b.Unchanged, Parked: b.Parked, Failed: b.Failed, Skipped: b.Skipped, StartedAt: b.StartedAt, FinishedAt: b.FinishedAt,
		Problems: Answers(b.Problems, func(p db.ReplayBatchProblem) ReplayBatchProblem {
			return ReplayBatchProblem{ReceiptID: p.ReceiptID, ReceivedAt: p.ReceivedAt, Refs: p.Refs, Outcome: p.Outcome,
				Reason: p.Reason, ReplayID: p.ReplayID}
		})}
}

// jsonOrAbsent is a JSON value for an optional field: absent (nil) when
// there is none.
func jsonOrAbsent(v []byte) any {
	if v == nil {
		return nil
	}
	return json.RawMessage(v)
}
