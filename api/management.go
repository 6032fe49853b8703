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

// The management API (DESIGN.md section 12): inbound endpoints, receipts,
// replays, webhook subscriptions and deliveries, and the event feed, for
// support staff and integrators. Every handler calls Manager, the code the
// CLI's receipts and webhook commands call too.

const (
	tagInbound  = "Inbound management"
	tagWebhooks = "Webhooks"
	tagEvents   = "Events"
)

// actor is the audit log's name for the key a request is made with.
func actor(ctx context.Context) integrations.Actor {
	return integrations.KeyActor(keyAuth(ctx).Principal.KeyID)
}

// optionalTime reads an optional RFC 3339 filter.
func optionalTime(name, raw string) (*time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "%s is not an RFC 3339 timestamp", name)
	}
	return &t, nil
}

// ---- inbound endpoints

// ListEndpointsOutput is a page of inbound endpoints, newest first.
type ListEndpointsOutput struct {
	Body struct {
		Endpoints  []integrations.EndpointItem `json:"endpoints"`
		NextCursor *string                     `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// ---- receipts

// ListReceiptsInput is the query of GET /api/v1/inbound/receipts.
type ListReceiptsInput struct {
	EndpointID     string `query:"endpoint_id" format:"uuid" doc:"Only receipts of this endpoint."`
	Outcome        string `query:"outcome" doc:"Only receipts with these outcomes, comma-separated: pending, applied, unchanged, parked, unmatched, cancelled, failed, error." example:"failed,parked"`
	ReceivedAfter  string `query:"received_after" format:"date-time" doc:"Only receipts received after this instant (RFC 3339)."`
	ReceivedBefore string `query:"received_before" format:"date-time" doc:"Only receipts received before this instant (RFC 3339)."`
	Ref            string `query:"ref" maxLength:"200" doc:"Only receipts whose body contains this text: an order number, a delivery, invoice or PO reference."`
	SmallPage
}

// ListReceiptsOutput is a page of receipts, newest first.
type ListReceiptsOutput struct {
	Body struct {
		Receipts   []integrations.ReceiptSummary `json:"receipts"`
		NextCursor *string                       `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// ReceiptOutput is a receipt with its body, answer and trace.
type ReceiptOutput struct{ Body integrations.ReceiptDetail }

// ReplayInput is POST /api/v1/inbound/receipts/{id}/replay.
type ReplayInput struct {
	IDPath
	Body struct {
		DryRun bool `json:"dry_run,omitempty" doc:"Work out the changes a replay would make, and write nothing: no receipt, no event, no workflow."`
	} `required:"false"`
}

// ReplayOutput is what a replay did.
type ReplayOutput struct{ Body integrations.ReplayResult }

// BulkReplayInput is POST /api/v1/inbound/replays.
type BulkReplayInput struct {
	Body struct {
		EndpointID     *uuid.UUID `json:"endpoint_id,omitempty" doc:"Only receipts of this endpoint."`
		Outcome        string     `json:"outcome" minLength:"1" doc:"The outcomes of the receipts to replay, comma-separated (failed, error, parked, unmatched, cancelled, ...)." example:"failed,unmatched"`
		ReceivedAfter  *time.Time `json:"received_after,omitempty" doc:"Only receipts received after this instant."`
		ReceivedBefore *time.Time `json:"received_before,omitempty" doc:"Only receipts received before this instant."`
		DryRun         bool       `json:"dry_run,omitempty" doc:"Count what each replay would do, and write nothing but the batch's progress."`
	}
}

// ReplayBatchOutput is a bulk replay and its progress.
type ReplayBatchOutput struct{ Body db.ReplayBatch }

// ---- webhooks

// ListSubscriptionsOutput is a page of subscriptions, newest first.
type ListSubscriptionsOutput struct {
	Body struct {
		Subscriptions []db.Subscription `json:"subscriptions"`
		NextCursor    *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// CreateSubscriptionInput is POST /api/v1/webhooks/subscriptions.
type CreateSubscriptionInput struct {
	Body struct {
		URL    string   `json:"url" minLength:"1" maxLength:"2000" format:"uri" doc:"The receiver's http(s) URL. Private, loopback and link-local addresses are refused."`
		Events []string `json:"events,omitempty" doc:"The event types to deliver; empty or absent for every type."`
	}
}

// SubscriptionSecretOutput is a subscription with its secret, shown once.
type SubscriptionSecretOutput struct {
	Body struct {
		db.Subscription
		Secret string `json:"secret" doc:"The signing secret: shown this once, kept sealed."`
	}
}

// SubscriptionOutput is a subscription.
type SubscriptionOutput struct{ Body db.Subscription }

// UpdateSubscriptionInput is PATCH /api/v1/webhooks/subscriptions/{id}.
type UpdateSubscriptionInput struct {
	IDPath
	Body struct {
		URL    *string   `json:"url,omitempty" maxLength:"2000" doc:"A new URL."`
		Events *[]string `json:"events,omitempty" doc:"New event types; empty for every type."`
		Active *bool     `json:"active,omitempty" doc:"false stops new deliveries (and retries waiting); true starts them again."`
	}
}

// RotateSecretOutput is a subscription's new secret.
type RotateSecretOutput struct {
	Body struct {
		db.Subscription
		Secret            string           `json:"secret" doc:"The new signing secret: shown this once."`
		PreviousExpiresAt domain.Timestamp `json:"previous_secret_expires_at" doc:"Until then deliveries carry a second v1, made with the secret replaced."`
	}
}

// RecoverInput is POST /api/v1/webhooks/subscriptions/{id}/recover.
type RecoverInput struct {
	IDPath
	Body struct {
		Since time.Time `json:"since" doc:"Resend the failed and exhausted deliveries created since this instant."`
	}
}

// RecoverOutput counts the deliveries resent.
type RecoverOutput struct {
	Body struct {
		Resent int `json:"resent" doc:"How many deliveries were sent again."`
	}
}

// ListWebhookDeliveriesInput is the query of GET /api/v1/webhooks/deliveries.
type ListWebhookDeliveriesInput struct {
	SubscriptionID string `query:"subscription_id" format:"uuid" doc:"Only deliveries to this subscription."`
	Status         string `query:"status" enum:"pending,succeeded,failed,exhausted" doc:"Only deliveries in this state."`
	EventType      string `query:"event_type" maxLength:"100" doc:"Only deliveries of this event type."`
	SmallPage
}

// ListWebhookDeliveriesOutput is a page of deliveries, newest first.
type ListWebhookDeliveriesOutput struct {
	Body struct {
		Deliveries []db.WebhookDelivery `json:"deliveries"`
		NextCursor *string              `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// WebhookDeliveryOutput is a delivery with its attempts.
type WebhookDeliveryOutput struct{ Body db.WebhookDelivery }

// ---- events

// ListEventsInput is the query of GET /api/v1/events.
type ListEventsInput struct {
	Type         string `query:"type" maxLength:"100" doc:"Only events of this type." example:"order.status_changed"`
	CreatedAfter string `query:"created_after" format:"date-time" doc:"Only events created after this instant (RFC 3339)."`
	SmallPage
}

// ListEventsOutput is a page of events, newest first.
type ListEventsOutput struct {
	Body struct {
		Events     []db.Event `json:"events"`
		NextCursor *string    `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// EventOutput is one event.
type EventOutput struct{ Body db.Event }

// NoContent is an answer without a body.
type NoContent struct{}

func (s *Server) registerManagement() {
	read, write := []int{http.StatusBadRequest, http.StatusNotFound}, []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict}
	op := func(id, method, path, tag, summary, desc string) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Tags: []string{tag}, Summary: summary, Description: desc}
	}
	huma.Register(s.api, access(op("list-inbound-endpoints", http.MethodGet, "/api/v1/inbound/endpoints", tagInbound,
		"List inbound endpoints", "The organisation's inbound endpoints, newest first, with their receipts of the last 24 hours "+
			"counted by outcome. Never a token or a secret."), domain.ScopeInboundRead, "", read...), s.listInboundEndpoints)
	huma.Register(s.api, access(op("list-inbound-receipts", http.MethodGet, "/api/v1/inbound/receipts", tagInbound,
		"List receipts", "What was posted to the organisation's inbound endpoints, newest first, accepted or refused."),
		domain.ScopeInboundRead, "", read...), s.listInboundReceipts)
	huma.Register(s.api, access(op("get-inbound-receipt", http.MethodGet, "/api/v1/inbound/receipts/{id}", tagInbound,
		"Read a receipt", "A receipt: its body, the headers kept (the signature masked), the answer, the outcome, its replays, its "+
			"workflow (with a link to it in the Temporal Web UI when one is configured) and its trace: the changes its effect made "+
			"(the original post's, for a replay), the events they emitted, and those events' deliveries with where each stands."),
		domain.ScopeInboundRead, "", http.StatusNotFound), s.getInboundReceipt)
	huma.Register(s.api, access(op("replay-inbound-receipt", http.MethodPost, "/api/v1/inbound/receipts/{id}/replay", tagInbound,
		"Replay a receipt", "Runs the receipt's action again on its stored body, as a new receipt pointing at the original, "+
			"through the same workflow as a live post. Effects are keyed by the original post: replaying one that was applied "+
			"changes nothing. With dry_run, answers the changes a replay would make and writes nothing. 409, with the reason, when "+
			"the receipt may not be replayed: refused for its signature (401) or size (413), stored while its endpoint was paused, "+
			"a deleted or paused endpoint, a replay of it still running or parked, or a signature that no longer verifies."),
		domain.ScopeInboundReplay, "", write...), s.replayInboundReceipt)
	huma.Register(s.api, access(op("cancel-inbound-receipt", http.MethodPost, "/api/v1/inbound/receipts/{id}/cancel", tagInbound,
		"Cancel a parked receipt", "Stops a post parked waiting for the record it names; it ends cancelled and can be replayed "+
			"later. 409 when the receipt is not parked."), domain.ScopeInboundReplay, "", http.StatusNotFound, http.StatusConflict),
		s.cancelInboundReceipt)
	huma.Register(s.api, access(huma.Operation{OperationID: "start-bulk-replay", Method: http.MethodPost, Path: "/api/v1/inbound/replays",
		Tags: []string{tagInbound}, Summary: "Replay receipts in bulk", DefaultStatus: http.StatusAccepted,
		Description: "Replays every original receipt (not replays) the filters select, oldest first, at most 10,000 (400 above: " +
			"narrow the filters), as the workflow replay-batch/<id>. Each receipt is replayed at most once, by the rules of a " +
			"single replay (those it refuses are counted as skipped), a few at a time and paced so a batch never takes more than " +
			"a share of the service. Follow it with GET /api/v1/inbound/replays/{id}."},
		domain.ScopeInboundReplay, "", http.StatusBadRequest), s.startBulkReplay)
	huma.Register(s.api, access(op("get-bulk-replay", http.MethodGet, "/api/v1/inbound/replays/{id}", tagInbound,
		"Read a bulk replay", "A bulk replay's status and counts, readable while it runs."),
		domain.ScopeInboundRead, "", http.StatusNotFound), s.getBulkReplay)
	huma.Register(s.api, access(op("stop-bulk-replay", http.MethodPost, "/api/v1/inbound/replays/{id}/stop", tagInbound,
		"Stop a bulk replay", "Stops a running bulk replay once the receipts under way are done; the others are left as they are. "+
			"409 when it is not running."), domain.ScopeInboundReplay, "", http.StatusNotFound, http.StatusConflict), s.stopBulkReplay)

	huma.Register(s.api, access(op("list-webhook-subscriptions", http.MethodGet, "/api/v1/webhooks/subscriptions", tagWebhooks,
		"List webhook subscriptions", "The organisation's subscriptions, newest first; never their secrets."),
		domain.ScopeWebhooksRead, "", read...), s.listSubscriptions)
	huma.Register(s.api, access(huma.Operation{OperationID: "create-webhook-subscription", Method: http.MethodPost,
		Path: "/api/v1/webhooks/subscriptions", Tags: []string{tagWebhooks}, Summary: "Subscribe to events", DefaultStatus: http.StatusCreated,
		Description: "Subscribes a URL to the organisation's events. The answer carries the signing secret, shown this once: " +
			"every delivery is signed with it (X-Service-Signature, see docs/webhooks.md)."},
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest), s.createSubscription)
	huma.Register(s.api, access(op("get-webhook-subscription", http.MethodGet, "/api/v1/webhooks/subscriptions/{id}", tagWebhooks,
		"Read a webhook subscription", "One subscription; never its secret."), domain.ScopeWebhooksRead, "", http.StatusNotFound), s.getSubscription)
	huma.Register(s.api, access(op("update-webhook-subscription", http.MethodPatch, "/api/v1/webhooks/subscriptions/{id}", tagWebhooks,
		"Change a webhook subscription", "Changes the URL, the event types or the active flag; fields left out stay as they are."),
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest, http.StatusNotFound), s.updateSubscription)
	huma.Register(s.api, access(huma.Operation{OperationID: "delete-webhook-subscription", Method: http.MethodDelete,
		Path: "/api/v1/webhooks/subscriptions/{id}", Tags: []string{tagWebhooks}, Summary: "Delete a webhook subscription",
		DefaultStatus: http.StatusNoContent, Description: "Removes the subscription with its deliveries and their attempts."},
		domain.ScopeWebhooksWrite, "", http.StatusNotFound), s.deleteSubscription)
	huma.Register(s.api, access(op("rotate-webhook-secret", http.MethodPost, "/api/v1/webhooks/subscriptions/{id}/rotate-secret", tagWebhooks,
		"Rotate a subscription's secret", "Gives the subscription a new signing secret, answered this once. For 24 hours the "+
			"secret it replaces signs too: deliveries carry two v1 values in X-Service-Signature, so a receiver can switch "+
			"secrets without missing one. A second rotation within the 24 hours drops the oldest secret."),
		domain.ScopeWebhooksWrite, "", http.StatusNotFound), s.rotateSecret)
	huma.Register(s.api, access(huma.Operation{OperationID: "recover-webhook-deliveries", Method: http.MethodPost,
		Path: "/api/v1/webhooks/subscriptions/{id}/recover", Tags: []string{tagWebhooks}, Summary: "Resend what a receiver missed",
		DefaultStatus: http.StatusAccepted, Description: "Sends again, now, every delivery of the subscription created since " +
			"`since` that failed or was exhausted: what a receiver that was down missed. Each resend is one attempt more."},
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest, http.StatusNotFound), s.recoverDeliveries)
	huma.Register(s.api, access(op("list-webhook-deliveries", http.MethodGet, "/api/v1/webhooks/deliveries", tagWebhooks,
		"List webhook deliveries", "Deliveries of events to subscriptions, newest first: pending, succeeded, failed (waiting for "+
			"the nightly retry at next_attempt_at) or exhausted."), domain.ScopeWebhooksRead, "", read...), s.listWebhookDeliveries)
	huma.Register(s.api, access(op("get-webhook-delivery", http.MethodGet, "/api/v1/webhooks/deliveries/{id}", tagWebhooks,
		"Read a webhook delivery", "A delivery with every attempt: status code, duration, error and the first 1 KB of the answer."),
		domain.ScopeWebhooksRead, "", http.StatusNotFound), s.getWebhookDelivery)
	huma.Register(s.api, access(huma.Operation{OperationID: "resend-webhook-delivery", Method: http.MethodPost,
		Path: "/api/v1/webhooks/deliveries/{id}/resend", Tags: []string{tagWebhooks}, Summary: "Resend a webhook delivery",
		DefaultStatus: http.StatusAccepted, Description: "Makes an attempt of the delivery now, with the same delivery id. A " +
			"delivery waiting for its nightly retry keeps its remaining retries if this attempt fails; one that had succeeded or " +
			"was exhausted gets this one attempt more. The answer is the delivery as it stood when the attempt was asked for."},
		domain.ScopeWebhooksWrite, "", http.StatusNotFound), s.resendWebhookDelivery)

	huma.Register(s.api, access(op("list-events", http.MethodGet, "/api/v1/events", tagEvents, "List events",
		"The outbox as a feed, newest first: every event of the organisation of the last 30 days, delivered to subscriptions or "+
			"not. A receiver that missed deliveries catches up with created_after."), domain.ScopeEventsRead, "", read...), s.listEvents)
	huma.Register(s.api, access(op("get-event", http.MethodGet, "/api/v1/events/{id}", tagEvents, "Read an event",
		"One event, as its deliveries carry it."), domain.ScopeEventsRead, "", http.StatusNotFound), s.getEvent)
}

func (s *Server) listInboundEndpoints(ctx context.Context, in *SmallPage) (*ListEndpointsOutput, error) {
	out := &ListEndpointsOutput{}
	var err error
	out.Body.Endpoints, out.Body.NextCursor, err = newestList(ctx, s, "inbound-endpoints", in.Cursor, in.Limit, nil,
		func(p db.Page) ([]integrations.EndpointItem, error) { return s.manage.Endpoints(ctx, orgID(ctx), p) },
		func(e integrations.EndpointItem) (domain.Timestamp, uuid.UUID) { return e.CreatedAt, e.ID })
	if err != nil {
		return nil, err
	}
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
	out := &ListReceiptsOutput{}
	out.Body.Receipts, out.Body.NextCursor, err = newestList(ctx, s, "inbound-receipts", in.Cursor, in.Limit,
		[]string{"endpoint_id", in.EndpointID, "outcome", in.Outcome, "received_after", in.ReceivedAfter,
			"received_before", in.ReceivedBefore, "ref", f.Ref},
		func(p db.Page) ([]integrations.ReceiptSummary, error) {
			return s.manage.ListReceipts(ctx, orgID(ctx), f, p)
		},
		func(r integrations.ReceiptSummary) (domain.Timestamp, uuid.UUID) { return r.ReceivedAt, r.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getInboundReceipt(ctx context.Context, in *IDPath) (*ReceiptOutput, error) {
	return readByID[ReceiptOutput](ctx, s, in.ID, "receipt", s.manage.Receipt)
}

// byID runs a write on one record named in the path (404 when the id is
// not a UUID), as the caller's key.
func byID[T any](ctx context.Context, s *Server, raw, what string, fn func(integrations.Actor, uuid.UUID, uuid.UUID) (T, error)) (T, error) {
	var zero T
	id, err := pathID(raw, what)
	if err != nil {
		return zero, s.fail(ctx, err)
	}
	v, err := fn(actor(ctx), orgID(ctx), id)
	if err != nil {
		return zero, s.fail(ctx, err)
	}
	return v, nil
}

func (s *Server) replayInboundReceipt(ctx context.Context, in *ReplayInput) (*ReplayOutput, error) {
	res, err := byID(ctx, s, in.ID, "receipt", func(a integrations.Actor, org, id uuid.UUID) (integrations.ReplayResult, error) {
		return s.manage.ReplayReceipt(ctx, a, org, id, in.Body.DryRun)
	})
	if err != nil {
		return nil, err
	}
	return &ReplayOutput{Body: res}, nil
}

func (s *Server) cancelInboundReceipt(ctx context.Context, in *IDPath) (*ReceiptOutput, error) {
	r, err := byID(ctx, s, in.ID, "receipt", func(a integrations.Actor, org, id uuid.UUID) (integrations.ReceiptDetail, error) {
		return s.manage.CancelReceipt(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &ReceiptOutput{Body: r}, nil
}

func (s *Server) startBulkReplay(ctx context.Context, in *BulkReplayInput) (*ReplayBatchOutput, error) {
	outcomes, err := domain.ParseOutcomes(in.Body.Outcome)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	b, err := s.manage.StartBulkReplay(ctx, actor(ctx), db.NewReplayBatch{OrgID: orgID(ctx), EndpointID: in.Body.EndpointID,
		Outcomes: outcomes, ReceivedAfter: in.Body.ReceivedAfter, ReceivedBefore: in.Body.ReceivedBefore, DryRun: in.Body.DryRun})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &ReplayBatchOutput{Body: b}, nil
}

func (s *Server) getBulkReplay(ctx context.Context, in *IDPath) (*ReplayBatchOutput, error) {
	return readByID[ReplayBatchOutput](ctx, s, in.ID, "replay batch", s.db.GetReplayBatch)
}

func (s *Server) stopBulkReplay(ctx context.Context, in *IDPath) (*ReplayBatchOutput, error) {
	b, err := byID(ctx, s, in.ID, "replay batch", func(a integrations.Actor, org, id uuid.UUID) (db.ReplayBatch, error) {
		return s.manage.StopBulkReplay(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &ReplayBatchOutput{Body: b}, nil
}

func (s *Server) listSubscriptions(ctx context.Context, in *SmallPage) (*ListSubscriptionsOutput, error) {
	out := &ListSubscriptionsOutput{}
	var err error
	out.Body.Subscriptions, out.Body.NextCursor, err = newestList(ctx, s, "webhook-subscriptions", in.Cursor, in.Limit, nil,
		func(p db.Page) ([]db.Subscription, error) { return s.db.ListSubscriptionsPage(ctx, orgID(ctx), p) },
		func(x db.Subscription) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) createSubscription(ctx context.Context, in *CreateSubscriptionInput) (*SubscriptionSecretOutput, error) {
	events := in.Body.Events
	if err := checkEvents(events); err != nil {
		return nil, s.fail(ctx, err)
	}
	created, err := s.manage.CreateSubscription(ctx, actor(ctx), orgID(ctx), in.Body.URL, events)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &SubscriptionSecretOutput{}
	out.Body.Subscription, out.Body.Secret = created.Subscription, created.Secret
	return out, nil
}

// checkEvents refuses unknown event types.
func checkEvents(types []string) error {
	_, err := domain.ParseEventTypes(strings.Join(types, ","))
	return err
}

func (s *Server) getSubscription(ctx context.Context, in *IDPath) (*SubscriptionOutput, error) {
	return readByID[SubscriptionOutput](ctx, s, in.ID, "subscription", s.db.GetSubscription)
}

func (s *Server) updateSubscription(ctx context.Context, in *UpdateSubscriptionInput) (*SubscriptionOutput, error) {
	if in.Body.Events != nil {
		if err := checkEvents(*in.Body.Events); err != nil {
			return nil, s.fail(ctx, err)
		}
	}
	x, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (db.Subscription, error) {
		return s.manage.UpdateSubscription(ctx, a, org, id, db.SubscriptionChange{URL: in.Body.URL, EventTypes: in.Body.Events, Active: in.Body.Active})
	})
	if err != nil {
		return nil, err
	}
	return &SubscriptionOutput{Body: x}, nil
}

func (s *Server) deleteSubscription(ctx context.Context, in *IDPath) (*NoContent, error) {
	_, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (struct{}, error) {
		return struct{}{}, s.manage.DeleteSubscription(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &NoContent{}, nil
}

func (s *Server) rotateSecret(ctx context.Context, in *IDPath) (*RotateSecretOutput, error) {
	r, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (db.RotatedSecret, error) {
		return s.manage.RotateSecret(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	out := &RotateSecretOutput{}
	out.Body.Subscription, out.Body.Secret, out.Body.PreviousExpiresAt = r.Subscription, r.Secret, r.PreviousExpiresAt
	return out, nil
}

func (s *Server) recoverDeliveries(ctx context.Context, in *RecoverInput) (*RecoverOutput, error) {
	n, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (int, error) {
		return s.manage.Recover(ctx, a, org, id, in.Body.Since)
	})
	if err != nil {
		return nil, err
	}
	out := &RecoverOutput{}
	out.Body.Resent = n
	return out, nil
}

func (s *Server) listWebhookDeliveries(ctx context.Context, in *ListWebhookDeliveriesInput) (*ListWebhookDeliveriesOutput, error) {
	f := db.DeliveryListFilter{Status: domain.WebhookStatus(in.Status), EventType: in.EventType}
	var err error
	if f.SubscriptionID, err = optionalID("subscription_id", in.SubscriptionID); err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &ListWebhookDeliveriesOutput{}
	out.Body.Deliveries, out.Body.NextCursor, err = newestList(ctx, s, "webhook-deliveries", in.Cursor, in.Limit,
		[]string{"subscription_id", in.SubscriptionID, "status", in.Status, "event_type", in.EventType},
		func(p db.Page) ([]db.WebhookDelivery, error) {
			return s.db.ListWebhookDeliveriesPage(ctx, orgID(ctx), f, p)
		},
		func(x db.WebhookDelivery) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getWebhookDelivery(ctx context.Context, in *IDPath) (*WebhookDeliveryOutput, error) {
	return readByID[WebhookDeliveryOutput](ctx, s, in.ID, "delivery", s.db.GetWebhookDelivery)
}

func (s *Server) resendWebhookDelivery(ctx context.Context, in *IDPath) (*WebhookDeliveryOutput, error) {
	x, err := byID(ctx, s, in.ID, "delivery", func(a integrations.Actor, org, id uuid.UUID) (db.WebhookDelivery, error) {
		return s.manage.Resend(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &WebhookDeliveryOutput{Body: x}, nil
}

func (s *Server) listEvents(ctx context.Context, in *ListEventsInput) (*ListEventsOutput, error) {
	after, err := optionalTime("created_after", in.CreatedAfter)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &ListEventsOutput{}
	out.Body.Events, out.Body.NextCursor, err = newestList(ctx, s, "events", in.Cursor, in.Limit,
		[]string{"type", in.Type, "created_after", in.CreatedAfter},
		func(p db.Page) ([]db.Event, error) {
			return s.db.ListEvents(ctx, orgID(ctx), db.EventFilter{Type: in.Type, CreatedAfter: after}, p)
		},
		func(e db.Event) (domain.Timestamp, uuid.UUID) { return e.CreatedAt, e.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getEvent(ctx context.Context, in *IDPath) (*EventOutput, error) {
	return readByID[EventOutput](ctx, s, in.ID, "event", s.db.GetEvent)
}
