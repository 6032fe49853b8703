package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// BulkResendInput is POST /api/v1/webhooks/resends.
type BulkResendInput struct {
	Body struct {
		SubscriptionID *uuid.UUID `json:"subscription_id,omitempty" doc:"Only deliveries to this subscription."`
		Statuses       []string   `json:"statuses,omitempty" maxItems:"2" doc:"The statuses of the deliveries to resend: failed, exhausted or both (the default)." example:"[\"exhausted\"]"`
		EventType      string     `json:"event_type,omitempty" maxLength:"100" doc:"Only deliveries of this event type."`
		CreatedAfter   *time.Time `json:"created_after,omitempty" doc:"Only deliveries created after this instant."`
		CreatedBefore  *time.Time `json:"created_before,omitempty" doc:"Only deliveries created before this instant."`
	}
}

// ResendBatch is a bulk resend and its report.
type ResendBatch struct {
	ID             uuid.UUID         `json:"id"`
	SubscriptionID *uuid.UUID        `json:"subscription_id" doc:"The subscription it was narrowed to; null for every one."`
	Statuses       []string          `json:"statuses" doc:"The statuses of the deliveries it took."`
	EventType      *string           `json:"event_type" doc:"The event type it was narrowed to; null for every one."`
	CreatedAfter   *domain.Timestamp `json:"created_after"`
	CreatedBefore  *domain.Timestamp `json:"created_before"`
	CreatedBy      string            `json:"created_by" doc:"Who started it: key:<id>, cli:<user> or console:<email>."`
	StartedAt      domain.Timestamp  `json:"started_at"`
	FinishedAt     *domain.Timestamp `json:"finished_at" doc:"When every delivery it took had been resent (or found not to need it)."`
	Total          int               `json:"total" doc:"How many deliveries the filters selected."`
	Resent         int               `json:"resent" doc:"How many were resent: an attempt of each was asked for."`
	NotResent      int               `json:"not_resent" doc:"How many were not: no longer failed or exhausted when their turn came, or their attempt could not be started (problems say which)."`
	Delivered      int               `json:"delivered" doc:"Of those resent, how many have been delivered since."`
	Failing        int               `json:"failing" doc:"Of those resent, how many failed or were exhausted again."`
	Waiting        int               `json:"waiting" doc:"Of those resent, how many wait for their attempt's answer."`
	Problems       []ResendProblem   `json:"problems" doc:"The deliveries not resent, or resent and failing again, in the batch's order (at most 100)."`
}

// ResendProblem is a delivery a bulk resend did not resend, or that failed
// again.
type ResendProblem struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
	EventType  string    `json:"event_type"`
	Status     *string   `json:"status" doc:"Where the delivery stands now; null when it was deleted since."`
	Reason     *string   `json:"reason" doc:"Why it was not resent, else the last attempt's error."`
}

func newResendBatch(b db.ResendBatch) ResendBatch {
	out := ResendBatch{ID: b.ID, SubscriptionID: b.SubscriptionID, Statuses: b.Statuses, EventType: b.EventType, CreatedAfter: b.CreatedAfter,
		CreatedBefore: b.CreatedBefore, CreatedBy: b.CreatedBy, StartedAt: b.StartedAt, FinishedAt: b.FinishedAt, Total: b.Total,
		Resent: b.Resent, NotResent: b.NotResent, Delivered: b.Delivered, Failing: b.Failing, Waiting: b.Waiting,
		Problems: make([]ResendProblem, len(b.Problems))}
	for i, p := range b.Problems {
		out.Problems[i] = ResendProblem{DeliveryID: p.DeliveryID, EventType: p.EventType, Reason: p.Reason}
		if p.Status != nil {
			s := string(*p.Status)
			out.Problems[i].Status = &s
		}
	}
	return out
}

// ResendBatchOutput is a bulk resend.
type ResendBatchOutput struct{ Body ResendBatch }

func (s *Server) registerResends() {
	huma.Register(s.api, access(huma.Operation{OperationID: "start-bulk-resend", Method: http.MethodPost, Path: "/api/v1/webhooks/resends",
		Tags: []string{tagWebhooks}, Summary: "Resend deliveries in bulk", DefaultStatus: http.StatusAccepted,
		Description: "Resends every failed or exhausted delivery the filters select, oldest first, at most 1,000 (400 above: " +
			"narrow the filters), each as a single resend does. The answer is the batch with its report once every attempt has been " +
			"asked for; GET /api/v1/webhooks/resends/{id} follows the deliveries as they are delivered. A delivery it resends that " +
			"is then delivered reads resolved by it (resolution.by bulk_resend)."},
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest), s.startBulkResend)
	huma.Register(s.api, access(managementOp("get-bulk-resend", http.MethodGet, "/api/v1/webhooks/resends/{id}", tagWebhooks,
		"Read a bulk resend", "A bulk resend's report: how many it resent, how many of those were delivered since or failed "+
			"again, and the deliveries it did not resend or that failed again."),
		domain.ScopeWebhooksRead, "", http.StatusNotFound), s.getBulkResend)
}

func (s *Server) startBulkResend(ctx context.Context, in *BulkResendInput) (*ResendBatchOutput, error) {
	req := db.NewResendBatch{OrgID: orgID(ctx), SubscriptionID: in.Body.SubscriptionID, EventType: in.Body.EventType,
		CreatedAfter: in.Body.CreatedAfter, CreatedBefore: in.Body.CreatedBefore}
	for _, st := range in.Body.Statuses {
		req.Statuses = append(req.Statuses, domain.WebhookStatus(st))
	}
	b, err := s.manage.StartBulkResend(ctx, actor(ctx), req)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &ResendBatchOutput{Body: newResendBatch(b)}, nil
}

func (s *Server) getBulkResend(ctx context.Context, in *IDPath) (*ResendBatchOutput, error) {
	return readByID[ResendBatchOutput](ctx, s, in.ID, "bulk resend", answered(s.db.GetResendBatch, newResendBatch))
}
