package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// ---- webhooks

// ListSubscriptionsOutput is a page of subscriptions, newest first.
type ListSubscriptionsOutput struct {
	Body struct {
		Subscriptions []Subscription `json:"subscriptions"`
		NextCursor    *string        `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// CreateSubscriptionInput is POST /api/v1/webhooks/subscriptions.
type CreateSubscriptionInput struct {
	Body struct {
		URL                string   `json:"url" minLength:"1" maxLength:"2000" format:"uri" doc:"The receiver's http(s) URL. Private, loopback and link-local addresses are refused."`
		Events             []string `json:"events,omitempty" doc:"The event types to deliver; empty or absent for every type."`
		RateLimitPerSecond *int     `json:"rate_limit_per_second,omitempty" minimum:"1" maximum:"1000" doc:"At most this many attempts start in any one second; absent or null for no limit."`
		MaxInFlight        *int     `json:"max_in_flight,omitempty" minimum:"1" maximum:"100" doc:"At most this many attempts at once; 10 when absent."`
		Ordering           *string  `json:"ordering,omitempty" enum:"none,per_entity" doc:"per_entity: one entity's deliveries one at a time, in event order; none (the default): no order."`
	}
}

// SubscriptionSecretOutput is a subscription with its secret, shown once.
type SubscriptionSecretOutput struct {
	Body struct {
		Subscription
		Secret *string `json:"secret" doc:"The signing secret: shown this once, kept sealed; null in the answer to a retry with the same Idempotency-Key."`
	}
}

// SubscriptionOutput is a subscription.
type SubscriptionOutput struct{ Body Subscription }

// UpdateSubscriptionInput is PATCH /api/v1/webhooks/subscriptions/{id}.
type UpdateSubscriptionInput struct {
	IDPath
	Body struct {
		URL                *string      `json:"url,omitempty" maxLength:"2000" doc:"A new URL."`
		Events             *[]string    `json:"events,omitempty" doc:"New event types; empty for every type."`
		Active             *bool        `json:"active,omitempty" doc:"false stops new deliveries (and retries waiting); true starts them again."`
		RateLimitPerSecond OptionalRate `json:"rate_limit_per_second,omitzero" doc:"A new rate limit, 1 to 1000 attempts a second; null for no limit; absent leaves it."`
		MaxInFlight        *int         `json:"max_in_flight,omitempty" minimum:"1" maximum:"100" doc:"A new cap on attempts at once."`
		Ordering           *string      `json:"ordering,omitempty" enum:"none,per_entity" doc:"A new ordering."`
	}
}

// OptionalRate is rate_limit_per_second in a PATCH, where null (no limit)
// and absent (no change) differ.
type OptionalRate struct {
	Set   bool
	Value *int
}

// UnmarshalJSON is called only for a field that is present.
func (o *OptionalRate) UnmarshalJSON(b []byte) error {
	o.Set = true
	return json.Unmarshal(b, &o.Value)
}

// IsZero makes an absent field absent when written.
func (o OptionalRate) IsZero() bool { return !o.Set }

// Schema documents the field as a nullable integer of 1 to 1000.
func (OptionalRate) Schema(huma.Registry) *huma.Schema {
	lo, hi := 1.0, 1000.0
	return &huma.Schema{Type: huma.TypeInteger, Nullable: true, Minimum: &lo, Maximum: &hi}
}

// RotateSecretOutput is a subscription's new secret.
type RotateSecretOutput struct {
	Body struct {
		Subscription
		Secret            *string          `json:"secret" doc:"The new signing secret: shown this once; null in the answer to a retry with the same Idempotency-Key."`
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
	Status         string `query:"status" enum:"pending,succeeded,failed,exhausted,held,skipped" doc:"Only deliveries in this state."`
	EventType      string `query:"event_type" maxLength:"100" doc:"Only deliveries of this event type."`
	EventID        string `query:"event_id" format:"uuid" doc:"Only the deliveries of this event (one per subscription it went to)."`
	ID             string `query:"id" format:"uuid" doc:"Only the delivery with this id (as X-Service-Delivery-Id gave it to the receiver)."`
	Ref            string `query:"ref" maxLength:"200" doc:"Only the deliveries of the events a receipt applied, the receipt found as the receipt list's ref finds it: a receipt id, or a reference its body names, whole or the start of one (3 characters or more), in any case." example:"SO-2026-0202"`
	CreatedAfter   string `query:"created_after" format:"date-time" doc:"Only deliveries created after this instant (RFC 3339)."`
	CreatedBefore  string `query:"created_before" format:"date-time" doc:"Only deliveries created before this instant (RFC 3339); a 400 when it is not later than created_after."`
	Resolved       string `query:"resolved" doc:"By resolution: true (only deliveries a resend, recover or bulk resend delivered after they failed), false (only the others) or any (the default). A resolved delivery has succeeded, so a list of failed or exhausted deliveries never holds one."`
	SmallPage
}

// ListWebhookDeliveriesOutput is a page of deliveries, newest first.
type ListWebhookDeliveriesOutput struct {
	Body struct {
		Deliveries []WebhookDelivery `json:"deliveries"`
		NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// WebhookDeliveryOutput is a delivery with its attempts.
type WebhookDeliveryOutput struct{ Body WebhookDelivery }

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
		Events     []Event `json:"events"`
		NextCursor *string `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// EventOutput is one event.
type EventOutput struct{ Body Event }

func (s *Server) registerWebhookManagement() {
	huma.Register(s.api, access(managementOp("list-webhook-subscriptions", http.MethodGet, "/api/v1/webhooks/subscriptions", tagWebhooks,
		"List webhook subscriptions", "The organisation's subscriptions, newest first; never their secrets."),
		domain.ScopeWebhooksRead, "", managementRead...), s.listSubscriptions)
	huma.Register(s.api, answersSecret(access(huma.Operation{OperationID: "create-webhook-subscription", Method: http.MethodPost,
		Path: "/api/v1/webhooks/subscriptions", Tags: []string{tagWebhooks}, Summary: "Subscribe to events", DefaultStatus: http.StatusCreated,
		Description: "Subscribes a URL to the organisation's events. The answer carries the signing secret, shown this once: " +
			"every delivery is signed with it (X-Service-Signature, see docs/webhooks.md). An organisation holds at most " +
			strconv.Itoa(db.DefaultSubscriptionCap) + " subscriptions unless an operator sets another cap (`commerce org " +
			"subscription-cap`): one more is answered 422, the message naming the cap."},
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest, http.StatusUnprocessableEntity)), s.createSubscription)
	huma.Register(s.api, access(managementOp("get-webhook-subscription", http.MethodGet, "/api/v1/webhooks/subscriptions/{id}", tagWebhooks,
		"Read a webhook subscription", "One subscription; never its secret."), domain.ScopeWebhooksRead, "", http.StatusNotFound), s.getSubscription)
	huma.Register(s.api, access(managementOp("update-webhook-subscription", http.MethodPatch, "/api/v1/webhooks/subscriptions/{id}", tagWebhooks,
		"Change a webhook subscription", "Changes the URL, the event types or the active flag; fields left out stay as they are."),
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest, http.StatusNotFound), s.updateSubscription)
	huma.Register(s.api, access(huma.Operation{OperationID: "delete-webhook-subscription", Method: http.MethodDelete,
		Path: "/api/v1/webhooks/subscriptions/{id}", Tags: []string{tagWebhooks}, Summary: "Delete a webhook subscription",
		DefaultStatus: http.StatusNoContent, Description: "Removes the subscription with its deliveries and their attempts."},
		domain.ScopeWebhooksWrite, "", http.StatusNotFound), s.deleteSubscription)
	huma.Register(s.api, answersSecret(access(managementOp("rotate-webhook-secret", http.MethodPost, "/api/v1/webhooks/subscriptions/{id}/rotate-secret", tagWebhooks,
		"Rotate a subscription's secret", "Gives the subscription a new signing secret, answered this once. For 24 hours the "+
			"secret it replaces signs too: deliveries carry two v1 values in X-Service-Signature, so a receiver can switch "+
			"secrets without missing one. A second rotation within the 24 hours drops the oldest secret."),
		domain.ScopeWebhooksWrite, "", http.StatusNotFound)), s.rotateSecret)
	huma.Register(s.api, access(huma.Operation{OperationID: "recover-webhook-deliveries", Method: http.MethodPost,
		Path: "/api/v1/webhooks/subscriptions/{id}/recover", Tags: []string{tagWebhooks}, Summary: "Resend what a receiver missed",
		DefaultStatus: http.StatusAccepted, Description: "Sends again, now, every delivery of the subscription created since " +
			"`since` that failed or was exhausted: what a receiver that was down missed. Each resend is one attempt more."},
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest, http.StatusNotFound), s.recoverDeliveries)
	huma.Register(s.api, access(managementOp("list-webhook-deliveries", http.MethodGet, "/api/v1/webhooks/deliveries", tagWebhooks,
		"List webhook deliveries", "Deliveries of events to subscriptions, newest first: pending, succeeded, failed (waiting for "+
			"the nightly retry at next_attempt_at), exhausted, held (while the subscription is failing, with no attempt spent) or skipped."), domain.ScopeWebhooksRead, "", managementRead...), s.listWebhookDeliveries)
	huma.Register(s.api, access(managementOp("get-webhook-delivery", http.MethodGet, "/api/v1/webhooks/deliveries/{id}", tagWebhooks,
		"Read a webhook delivery", "A delivery with every attempt: status code, duration, error and the first 1 KB of the answer."),
		domain.ScopeWebhooksRead, "", http.StatusNotFound), s.getWebhookDelivery)
	huma.Register(s.api, access(huma.Operation{OperationID: "resend-webhook-delivery", Method: http.MethodPost,
		Path: "/api/v1/webhooks/deliveries/{id}/resend", Tags: []string{tagWebhooks}, Summary: "Resend a webhook delivery",
		DefaultStatus: http.StatusAccepted, Description: "Makes an attempt of the delivery now, with the same delivery id. A " +
			"delivery waiting for its nightly retry keeps its remaining retries if this attempt fails; one that had succeeded or " +
			"was exhausted gets this one attempt more. The answer is the delivery as it stood when the attempt was asked for."},
		domain.ScopeWebhooksWrite, "", http.StatusNotFound), s.resendWebhookDelivery)
	huma.Register(s.api, access(huma.Operation{OperationID: "skip-webhook-delivery", Method: http.MethodPost,
		Path: "/api/v1/webhooks/deliveries/{id}/skip", Tags: []string{tagWebhooks}, Summary: "Skip a webhook delivery",
		Description: "Ends a delivery not delivered yet (pending, failed or held) without another attempt: its status becomes " +
			"skipped. With per_entity ordering, the entity's later deliveries, which waited for it, go on. A resend still sends it. " +
			"Answers 409 for a delivery already succeeded, exhausted or skipped."},
		domain.ScopeWebhooksWrite, "", http.StatusNotFound, http.StatusConflict), s.skipWebhookDelivery)

	huma.Register(s.api, access(managementOp("list-events", http.MethodGet, "/api/v1/events", tagEvents, "List events",
		"The outbox as a feed, newest first: every event of the organisation of the last 30 days, delivered to subscriptions or "+
			"not. A receiver that missed deliveries catches up with created_after."), domain.ScopeEventsRead, "", managementRead...), s.listEvents)
	huma.Register(s.api, access(managementOp("get-event", http.MethodGet, "/api/v1/events/{id}", tagEvents, "Read an event",
		"One event, as its deliveries carry it."), domain.ScopeEventsRead, "", http.StatusNotFound), s.getEvent)
}

func (s *Server) listSubscriptions(ctx context.Context, in *SmallPage) (*ListSubscriptionsOutput, error) {
	rows, next, err := newestList(ctx, s, "webhook-subscriptions", in.Cursor, in.Limit, nil,
		func(p db.Page) ([]db.Subscription, error) { return s.db.ListSubscriptionsPage(ctx, orgID(ctx), p) },
		func(x db.Subscription) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	if err != nil {
		return nil, err
	}
	out := &ListSubscriptionsOutput{}
	out.Body.Subscriptions, out.Body.NextCursor = Answers(rows, NewSubscription), next
	return out, nil
}

func (s *Server) createSubscription(ctx context.Context, in *CreateSubscriptionInput) (*SubscriptionSecretOutput, error) {
	events := in.Body.Events
	if err := checkEvents(events); err != nil {
		return nil, s.fail(ctx, err)
	}
	created, err := s.manage.CreateSubscription(ctx, actor(ctx), db.NewSubscription{OrgID: orgID(ctx), URL: in.Body.URL, EventTypes: events,
		RateLimit: in.Body.RateLimitPerSecond, MaxInFlight: in.Body.MaxInFlight, Ordering: in.Body.Ordering})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &SubscriptionSecretOutput{}
	out.Body.Subscription, out.Body.Secret = NewSubscription(created.Subscription), &created.Secret
	return out, nil
}

// checkEvents refuses unknown event types.
func checkEvents(types []string) error {
	_, err := domain.ParseEventTypes(strings.Join(types, ","))
	return err
}

func (s *Server) getSubscription(ctx context.Context, in *IDPath) (*SubscriptionOutput, error) {
	return readByID[SubscriptionOutput](ctx, s, in.ID, "subscription", answered(s.db.GetSubscription, NewSubscription))
}

func (s *Server) updateSubscription(ctx context.Context, in *UpdateSubscriptionInput) (*SubscriptionOutput, error) {
	if in.Body.Events != nil {
		if err := checkEvents(*in.Body.Events); err != nil {
			return nil, s.fail(ctx, err)
		}
	}
	x, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (db.Subscription, error) {
		return s.manage.UpdateSubscription(ctx, a, org, id, db.SubscriptionChange{URL: in.Body.URL, EventTypes: in.Body.Events, Active: in.Body.Active,
			RateLimitSet: in.Body.RateLimitPerSecond.Set, RateLimit: in.Body.RateLimitPerSecond.Value,
			MaxInFlight: in.Body.MaxInFlight, Ordering: in.Body.Ordering})
	})
	if err != nil {
		return nil, err
	}
	return &SubscriptionOutput{Body: NewSubscription(x)}, nil
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
	out.Body.Subscription, out.Body.Secret, out.Body.PreviousExpiresAt = NewSubscription(r.Subscription), &r.Secret, r.PreviousExpiresAt
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
	f, err := deliveryListFilter(in)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	if f.Resolved, err = db.ParseResolved(in.Resolved, nil); err != nil {
		return nil, s.fail(ctx, err)
	}
	rows, next, err := newestList(ctx, s, "webhook-deliveries", in.Cursor, in.Limit,
		[]string{"subscription_id", in.SubscriptionID, "status", in.Status, "event_type", in.EventType, "event_id", in.EventID,
			"id", in.ID, "ref", f.Ref, "created_after", in.CreatedAfter, "created_before", in.CreatedBefore, "resolved", in.Resolved},
		func(p db.Page) ([]db.WebhookDelivery, error) {
			return s.db.ListWebhookDeliveriesPage(ctx, orgID(ctx), f, p)
		},
		func(x db.WebhookDelivery) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	if err != nil {
		return nil, err
	}
	out := &ListWebhookDeliveriesOutput{}
	out.Body.Deliveries, out.Body.NextCursor = Answers(rows, NewWebhookDelivery), next
	return out, nil
}

// deliveryListFilter reads the delivery list's query; a filter that no
// delivery can match is refused, naming it.
func deliveryListFilter(in *ListWebhookDeliveriesInput) (db.DeliveryListFilter, error) {
	f := db.DeliveryListFilter{Status: domain.WebhookStatus(in.Status), EventType: in.EventType, Ref: strings.TrimSpace(in.Ref)}
	var err error
	if f.SubscriptionID, err = optionalID("subscription_id", in.SubscriptionID); err != nil {
		return f, err
	}
	if f.EventID, err = optionalID("event_id", in.EventID); err != nil {
		return f, err
	}
	if f.ID, err = optionalID("id", in.ID); err != nil {
		return f, err
	}
	if f.CreatedAfter, err = optionalTime("created_after", in.CreatedAfter); err != nil {
		return f, err
	}
	if f.CreatedBefore, err = optionalTime("created_before", in.CreatedBefore); err != nil {
		return f, err
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && !f.CreatedBefore.After(*f.CreatedAfter) {
		return f, domain.Errorf(domain.EINVALID, "created_before (%s) is not later than created_after (%s): no delivery can match",
			in.CreatedBefore, in.CreatedAfter)
	}
	return f, nil
}

func (s *Server) getWebhookDelivery(ctx context.Context, in *IDPath) (*WebhookDeliveryOutput, error) {
	return readByID[WebhookDeliveryOutput](ctx, s, in.ID, "delivery", answered(s.db.GetWebhookDelivery, NewWebhookDelivery))
}

func (s *Server) resendWebhookDelivery(ctx context.Context, in *IDPath) (*WebhookDeliveryOutput, error) {
	x, err := byID(ctx, s, in.ID, "delivery", func(a integrations.Actor, org, id uuid.UUID) (db.WebhookDelivery, error) {
		return s.manage.Resend(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &WebhookDeliveryOutput{Body: NewWebhookDelivery(x)}, nil
}

func (s *Server) skipWebhookDelivery(ctx context.Context, in *IDPath) (*WebhookDeliveryOutput, error) {
	x, err := byID(ctx, s, in.ID, "delivery", func(a integrations.Actor, org, id uuid.UUID) (db.WebhookDelivery, error) {
		return s.manage.Skip(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &WebhookDeliveryOutput{Body: NewWebhookDelivery(x)}, nil
}

func (s *Server) listEvents(ctx context.Context, in *ListEventsInput) (*ListEventsOutput, error) {
	after, err := optionalTime("created_after", in.CreatedAfter)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	rows, next, err := newestList(ctx, s, "events", in.Cursor, in.Limit,
		[]string{"type", in.Type, "created_after", in.CreatedAfter},
		func(p db.Page) ([]db.Event, error) {
			return s.db.ListEvents(ctx, orgID(ctx), db.EventFilter{Type: in.Type, CreatedAfter: after}, p)
		},
		func(e db.Event) (domain.Timestamp, uuid.UUID) { return e.CreatedAt, e.ID })
	if err != nil {
		return nil, err
	}
	out := &ListEventsOutput{}
	out.Body.Events, out.Body.NextCursor = Answers(rows, newEvent), next
	return out, nil
}

func (s *Server) getEvent(ctx context.Context, in *IDPath) (*EventOutput, error) {
	return readByID[EventOutput](ctx, s, in.ID, "event", answered(s.db.GetEvent, newEvent))
}
