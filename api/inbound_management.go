package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// ---- inbound endpoints

// ListEndpointsOutput is a page of inbound endpoints, newest first.
type ListEndpointsOutput struct {
	Body struct {
		Endpoints  []EndpointItem `json:"endpoints"`
		NextCursor *string        `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// ---- receipts

// ListReceiptsInput is the query of GET /api/v1/inbound/receipts.
type ListReceiptsInput struct {
	EndpointID     string `query:"endpoint_id" format:"uuid" doc:"Only receipts of this endpoint."`
	Outcome        string `query:"outcome" doc:"Only receipts with these outcomes, comma-separated: pending, applied, unchanged, parked, unmatched, cancelled, failed, error, ignored." example:"failed,parked"`
	ReceivedAfter  string `query:"received_after" format:"date-time" doc:"Only receipts received after this instant (RFC 3339)."`
	ReceivedBefore string `query:"received_before" format:"date-time" doc:"Only receipts received before this instant (RFC 3339)."`
	Resolved       string `query:"resolved" doc:"By resolution: true (only receipts something resolved: a replay of them applied, or a cancellation), false (only those nothing has) or any. Default false when every outcome asked for is a failure (failed, error, unmatched, parked), any otherwise."`
	Ref            string `query:"ref" maxLength:"200" doc:"A receipt id (as X-Receipt-Id gave it), or a reference its body names (order_ref, quote_ref, invoice_ref, po_number, supplier_ref, delivery_ref, consignment_ref, a customer's external_id): whole, or the start of one (3 characters or more), in any case." example:"SO-2026-0202"`
	SmallPage
}

// ListReceiptsOutput is a page of receipts, newest first.
type ListReceiptsOutput struct {
	Body struct {
		Receipts   []ReceiptSummary `json:"receipts"`
		NextCursor *string          `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// ReceiptOutput is a receipt with its body, answer and trace.
type ReceiptOutput struct{ Body ReceiptDetail }

// ReplayInput is POST /api/v1/inbound/receipts/{id}/replay.
type ReplayInput struct {
	IDPath
	Body struct {
		DryRun         bool                 `json:"dry_run,omitempty" doc:"Work out the changes a replay would make, and write nothing: no receipt, no event, no workflow."`
		MappingVersion MappingVersionChoice `json:"mapping_version,omitzero"`
	} `required:"false"`
}

// ReplayOutput is what a replay did.
type ReplayOutput struct{ Body ReplayResult }

// BulkReplayInput is POST /api/v1/inbound/replays.
type BulkReplayInput struct {
	Body struct {
		EndpointID      *uuid.UUID           `json:"endpoint_id,omitempty" doc:"Only receipts of this endpoint."`
		Outcome         string               `json:"outcome" minLength:"1" doc:"The outcomes of the receipts to replay, comma-separated (failed, error, parked, unmatched, cancelled, ...)." example:"failed,unmatched"`
		ReceivedAfter   *time.Time           `json:"received_after,omitempty" doc:"Only receipts received after this instant."`
		ReceivedBefore  *time.Time           `json:"received_before,omitempty" doc:"Only receipts received before this instant."`
		Ref             string               `json:"ref,omitempty" maxLength:"200" doc:"Only the receipts the receipts list's ref filter finds: a receipt id, or a reference whole or its start (3 characters or more), in any case."`
		DryRun          bool                 `json:"dry_run,omitempty" doc:"Count what each replay would do, and write nothing but the batch's progress."`
		IncludeResolved bool                 `json:"include_resolved,omitempty" doc:"Take the receipts a replay already resolved too; without it they are left out."`
		MappingVersion  MappingVersionChoice `json:"mapping_version,omitzero"`
	}
}

// mappingChoice is a request's mapping_version (absent: the current
// mapping).
func mappingChoice(c MappingVersionChoice) domain.MappingChoice { return c.MappingChoice }

// ReplayBatchOutput is a bulk replay and its progress.
type ReplayBatchOutput struct{ Body ReplayBatch }

func (s *Server) registerInboundManagement() {
	s.registerInboundEndpoints()
	huma.Register(s.api, access(managementOp("list-inbound-endpoints", http.MethodGet, "/api/v1/inbound/endpoints", tagInbound,
		"List inbound endpoints", "The organisation's inbound endpoints, newest first, with their receipts of the last 24 hours "+
			"counted by outcome. Never a token or a secret."), domain.ScopeInboundRead, "", managementRead...), s.listInboundEndpoints)
	huma.Register(s.api, access(managementOp("list-inbound-receipts", http.MethodGet, "/api/v1/inbound/receipts", tagInbound,
		"List receipts", "What was posted to the organisation's inbound endpoints, newest first, accepted or refused."),
		domain.ScopeInboundRead, "", managementRead...), s.listInboundReceipts)
	huma.Register(s.api, access(managementOp("get-inbound-receipt", http.MethodGet, "/api/v1/inbound/receipts/{id}", tagInbound,
		"Read a receipt", "A receipt: its body, the headers kept (the signature masked), the answer, the outcome, its replays, its "+
			"workflow (with a link to it in the Temporal Web UI when one is configured) and its trace: the changes its effect made "+
			"(the original post's, for a replay), the events they emitted, and those events' deliveries with where each stands."),
		domain.ScopeInboundRead, "", http.StatusNotFound), s.getInboundReceipt)
	huma.Register(s.api, access(managementOp("replay-inbound-receipt", http.MethodPost, "/api/v1/inbound/receipts/{id}/replay", tagInbound,
		"Replay a receipt", "Runs the receipt's action again on its stored body, as a new receipt pointing at the original, "+
			"through the same workflow as a live post. Effects are keyed by the original post: replaying one that was applied "+
			"changes nothing. The stored body is mapped again with the endpoint's current mapping, or the one mapping_version "+
			"names (422 when that mapping fails, 400 when what it makes is not the action's body, 409 when it answers null). "+
			"With dry_run, answers the mapped body and the changes a replay would make and writes nothing. 409, with the reason, when "+
			"the receipt may not be replayed: refused for its signature (401) or size (413), stored while its endpoint was paused, "+
			"a deleted or paused endpoint, a replay of it still running or parked, or a signature that no longer verifies."),
		domain.ScopeInboundReplay, "", managementWrite...), s.replayInboundReceipt)
	huma.Register(s.api, access(managementOp("cancel-inbound-receipt", http.MethodPost, "/api/v1/inbound/receipts/{id}/cancel", tagInbound,
		"Cancel a parked receipt", "Stops a post parked waiting for the record it names; it ends cancelled and can be replayed "+
			"later. 409 when the receipt is not parked."), domain.ScopeInboundReplay, "", http.StatusNotFound, http.StatusConflict),
		s.cancelInboundReceipt)
	huma.Register(s.api, access(huma.Operation{OperationID: "start-bulk-replay", Method: http.MethodPost, Path: "/api/v1/inbound/replays",
		Tags: []string{tagInbound}, Summary: "Replay receipts in bulk", DefaultStatus: http.StatusAccepted,
		Description: "Replays every original receipt (not replays) the filters select, oldest first, at most 10,000 (400 above: " +
			"narrow the filters), as the workflow replay-batch/<id>. Each receipt is replayed at most once, by the rules of a " +
			"single replay (those it refuses are counted as skipped), its stored body mapped again as mapping_version says, " +
			"a few at a time and paced so a batch never takes more than " +
			"a share of the service. Follow it with GET /api/v1/inbound/replays/{id}."},
		domain.ScopeInboundReplay, "", http.StatusBadRequest), s.startBulkReplay)
	huma.Register(s.api, access(managementOp("get-bulk-replay", http.MethodGet, "/api/v1/inbound/replays/{id}", tagInbound,
		"Read a bulk replay", "A bulk replay's status and counts, readable while it runs."),
		domain.ScopeInboundRead, "", http.StatusNotFound), s.getBulkReplay)
	huma.Register(s.api, access(managementOp("stop-bulk-replay", http.MethodPost, "/api/v1/inbound/replays/{id}/stop", tagInbound,
		"Stop a bulk replay", "Stops a running bulk replay once the receipts under way are done; the others are left as they are. "+
			"409 when it is not running."), domain.ScopeInboundReplay, "", http.StatusNotFound, http.StatusConflict), s.stopBulkReplay)

}

func (s *Server) listInboundEndpoints(ctx context.Context, in *SmallPage) (*ListEndpointsOutput, error) {
	rows, next, err := newestList(ctx, s, "inbound-endpoints", in.Cursor, in.Limit, nil,
		func(p db.Page) ([]integrations.EndpointItem, error) { return s.manage.Endpoints(ctx, orgID(ctx), p) },
		func(e integrations.EndpointItem) (domain.Timestamp, uuid.UUID) { return e.CreatedAt, e.ID })
	if err != nil {
		return nil, err
	}
	out := &ListEndpointsOutput{}
	out.Body.Endpoints, out.Body.NextCursor = Answers(rows, newEndpointItem), next
	return out, nil
}

func (s *Server) listInboundReceipts(ctx context.Context, in *ListReceiptsInput) (*ListReceiptsOutput, error) {
	f := db.OrgReceiptFilter{Ref: strings.TrimSpace(in.Ref)}
	var err error
	if f.EndpointID, err = optionalID("endpoint_id", in.EndpointID); err != nil {
		return nil, s.fail(ctx, err)
	}
	if f.Outcomes, err = domain.ParseOutcomes(in.Outcome); err != nil {
		return nil, s.fail(ctx, err)
	}
	if f.ReceivedAfter, err = optionalTime("received_after", in.ReceivedAfter); err != nil {
		return nil, s.fail(ctx, err)
	}
	if f.ReceivedBefore, err = optionalTime("received_before", in.ReceivedBefore); err != nil {
		return nil, s.fail(ctx, err)
	}
	var def *bool
	if db.FailureOutcomes(f.Outcomes) {
		def = db.Unresolved()
	}
	if f.Resolved, err = db.ParseResolved(in.Resolved, def); err != nil {
		return nil, s.fail(ctx, err)
	}
	rows, next, err := newestList(ctx, s, "inbound-receipts", in.Cursor, in.Limit,
		[]string{"endpoint_id", in.EndpointID, "outcome", in.Outcome, "received_after", in.ReceivedAfter,
			"received_before", in.ReceivedBefore, "ref", f.Ref, "resolved", in.Resolved},
		func(p db.Page) ([]integrations.ReceiptSummary, error) {
			return s.manage.ListReceipts(ctx, orgID(ctx), f, p)
		},
		func(r integrations.ReceiptSummary) (domain.Timestamp, uuid.UUID) { return r.ReceivedAt, r.ID })
	if err != nil {
		return nil, err
	}
	out := &ListReceiptsOutput{}
	out.Body.Receipts, out.Body.NextCursor = Answers(rows, newReceiptSummary), next
	return out, nil
}

func (s *Server) getInboundReceipt(ctx context.Context, in *IDPath) (*ReceiptOutput, error) {
	return readByID[ReceiptOutput](ctx, s, in.ID, "receipt", answered(s.manage.Receipt, newReceiptDetail))
}

func (s *Server) replayInboundReceipt(ctx context.Context, in *ReplayInput) (*ReplayOutput, error) {
	res, err := byID(ctx, s, in.ID, "receipt", func(a integrations.Actor, org, id uuid.UUID) (integrations.ReplayResult, error) {
		return s.manage.ReplayReceipt(ctx, a, org, id, in.Body.DryRun, mappingChoice(in.Body.MappingVersion))
	})
	if err != nil {
		return nil, err
	}
	return &ReplayOutput{Body: NewReplayResult(res)}, nil
}

func (s *Server) cancelInboundReceipt(ctx context.Context, in *IDPath) (*ReceiptOutput, error) {
	r, err := byID(ctx, s, in.ID, "receipt", func(a integrations.Actor, org, id uuid.UUID) (integrations.ReceiptDetail, error) {
		return s.manage.CancelReceipt(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &ReceiptOutput{Body: newReceiptDetail(r)}, nil
}

func (s *Server) startBulkReplay(ctx context.Context, in *BulkReplayInput) (*ReplayBatchOutput, error) {
	outcomes, err := domain.ParseOutcomes(in.Body.Outcome)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	b, err := s.manage.StartBulkReplay(ctx, actor(ctx), db.NewReplayBatch{OrgID: orgID(ctx), EndpointID: in.Body.EndpointID,
		Outcomes: outcomes, ReceivedAfter: in.Body.ReceivedAfter, ReceivedBefore: in.Body.ReceivedBefore, Ref: strings.TrimSpace(in.Body.Ref),
		DryRun: in.Body.DryRun, Mapping: mappingChoice(in.Body.MappingVersion), IncludeResolved: in.Body.IncludeResolved})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &ReplayBatchOutput{Body: newReplayBatch(b)}, nil
}

func (s *Server) getBulkReplay(ctx context.Context, in *IDPath) (*ReplayBatchOutput, error) {
	return readByID[ReplayBatchOutput](ctx, s, in.ID, "replay batch", answered(s.db.GetReplayBatch, newReplayBatch))
}

func (s *Server) stopBulkReplay(ctx context.Context, in *IDPath) (*ReplayBatchOutput, error) {
	b, err := byID(ctx, s, in.ID, "replay batch", func(a integrations.Actor, org, id uuid.UUID) (db.ReplayBatch, error) {
		return s.manage.StopBulkReplay(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &ReplayBatchOutput{Body: newReplayBatch(b)}, nil
}
