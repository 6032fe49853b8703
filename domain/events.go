package domain

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Event types of the outbox: every change an integrator could care about
// writes one, in the transaction that makes the change.
const (
	EventCustomerCreated        = "customer.created"
	EventCustomerUpdated        = "customer.updated"
	EventProductsUpserted       = "products.upserted"
	EventRequestCreated         = "request.created"
	EventStockMovementCreated   = "stock.movement.created"
	EventOrderStatusChanged     = "order.status_changed"
	EventOrderInvoiceRecorded   = "order.invoice_recorded"
	EventDeliveryStatusChanged  = "delivery.status_changed"
	EventPurchaseOrderAcked     = "purchase_order.acknowledged"
	EventSupplierInvoiceMatched = "supplier_invoice.matched"
	EventVarianceRaised         = "supplier_invoice.variance_raised"
	EventInboundReceiptFailed   = "inbound.receipt.failed"

	// Operational events (docs/webhooks.md#operational-events): about the
	// integration itself, delivered only to subscriptions that name them.
	EventSubscriptionFailing   = "webhook.subscription.failing"
	EventSubscriptionRecovered = "webhook.subscription.recovered"
	EventDeliveryExhausted     = "webhook.delivery.exhausted"
	EventEndpointFailing       = "inbound.endpoint.failing"
	EventEndpointRecovered     = "inbound.endpoint.recovered"
)

// OperationalEventTypes are the event types about the integration itself.
// A subscription to every event type does not get them; one that names
// them does, except those about itself (their data's subscription_id).
var OperationalEventTypes = []string{EventSubscriptionFailing, EventSubscriptionRecovered, EventDeliveryExhausted,
	EventEndpointFailing, EventEndpointRecovered}

// Thresholds of the operational events.
const (
	// SubscriptionFailingAfter consecutive failed attempts make a
	// subscription failing.
	SubscriptionFailingAfter = 5
	// EndpointWindow is the window an endpoint's posts are judged over: at
	// least EndpointWindowPosts posts, more than half failed or error.
	EndpointWindow      = 15 * time.Minute
	EndpointWindowPosts = 10
)

// Event is an event to write to the outbox: its type and its data, made by
// the EventKind of the type, so that the data is always the type's own.
type Event struct {
	Type string
	Data any
	// Entity is what the event is about (its data's Entity).
	Entity Entity
}

// EventKind is an event type whose data is a D.
type EventKind[D any] struct {
	Type string
	// When says, for the catalogue, what makes the event.
	When string
}

// New is an event of this kind with data d.
func (k EventKind[D]) New(d D) Event {
	e := Event{Type: k.Type, Data: d}
	if n, ok := any(d).(entityNamer); ok {
		e.Entity = n.Entity()
	}
	return e
}

// Doc is the kind's entry in the catalogue.
func (k EventKind[D]) Doc() EventDoc {
	return EventDoc{Type: k.Type, When: k.When, Data: reflect.TypeFor[D]()}
}

// EventDoc is an event type as the catalogue documents it: the OpenAPI
// document's webhooks and the table of docs/webhooks.md are made from it.
type EventDoc struct {
	Type string
	When string
	Data reflect.Type
}

// The event kinds: each type's data is a named struct of this package.
var (
	CustomerCreated       = EventKind[CustomerEventData]{EventCustomerCreated, "A customer is created (REST or inbound)."}
	CustomerUpdated       = EventKind[CustomerEventData]{EventCustomerUpdated, "A customer is matched and updated."}
	ProductsUpserted      = EventKind[ProductsUpsertedData]{EventProductsUpserted, "A products upsert (REST bulk or inbound) ran: one event per batch."}
	RequestCreated        = EventKind[RequestCreatedData]{EventRequestCreated, "A request is opened."}
	StockMovementCreated  = EventKind[StockMovement]{EventStockMovementCreated, "A stock movement is recorded; data is the movement as POST /api/v1/stock/movements answers it."}
	OrderStatusChanged    = EventKind[OrderStatusChangedData]{EventOrderStatusChanged, "An order moves (an ERP status, or following its deliveries)."}
	OrderInvoiceRecorded  = EventKind[OrderInvoiceRecordedData]{EventOrderInvoiceRecorded, "An ERP invoice is recorded on an order, or its status changes."}
	DeliveryStatusChanged = EventKind[DeliveryStatusChangedData]{EventDeliveryStatusChanged, "A delivery moves."}
	PurchaseOrderAcked    = EventKind[PurchaseOrderAcknowledgedData]{EventPurchaseOrderAcked, "A supplier acknowledges a purchase order."}
	InvoiceMatched        = EventKind[SupplierInvoiceMatchData]{EventSupplierInvoiceMatched, "A supplier invoice passes its three-way match."}
	VarianceRaised        = EventKind[SupplierInvoiceMatchData]{EventVarianceRaised, "A supplier invoice's match finds variances, or no goods arrive within 14 days."}
	InboundReceiptFailed  = EventKind[InboundReceiptFailedData]{EventInboundReceiptFailed, "An inbound post is refused (4xx), fails, or waits 7 days for its record in vain."}

	SubscriptionFailing = EventKind[SubscriptionFailingData]{EventSubscriptionFailing,
		"A subscription's deliveries failed 5 attempts in a row (operational: only to subscriptions that name it, never to the subscription it concerns)."}
	SubscriptionRecovered = EventKind[SubscriptionRecoveredData]{EventSubscriptionRecovered,
		"A failing subscription's delivery succeeded (operational)."}
	DeliveryExhausted = EventKind[DeliveryExhaustedData]{EventDeliveryExhausted,
		"A delivery's last attempt failed: it will not be tried again unless support resends it (operational)."}
	EndpointFailing = EventKind[EndpointHealthData]{EventEndpointFailing,
		"Over the last 15 minutes an inbound endpoint had at least 10 posts and more than half failed or error (operational)."}
	EndpointRecovered = EventKind[EndpointHealthData]{EventEndpointRecovered,
		"A failing inbound endpoint's last 15 minutes no longer are (operational)."}
)

// EventCatalogue lists every event type, in the order the documentation
// gives them.
var EventCatalogue = []EventDoc{CustomerCreated.Doc(), CustomerUpdated.Doc(), ProductsUpserted.Doc(), RequestCreated.Doc(),
	StockMovementCreated.Doc(), OrderStatusChanged.Doc(), OrderInvoiceRecorded.Doc(), DeliveryStatusChanged.Doc(),
	PurchaseOrderAcked.Doc(), InvoiceMatched.Doc(), VarianceRaised.Doc(), InboundReceiptFailed.Doc(),
	SubscriptionFailing.Doc(), SubscriptionRecovered.Doc(), DeliveryExhausted.Doc(), EndpointFailing.Doc(), EndpointRecovered.Doc()}

// EventTypes lists every event type, in the catalogue's order.
var EventTypes = func() []string {
	out := make([]string, len(EventCatalogue))
	for i, e := range EventCatalogue {
		out[i] = e.Type
	}
	return out
}()

// The data of each event type. Their field docs are the catalogue's.
type (
	// CustomerEventData is the data of customer.created and customer.updated.
	CustomerEventData struct {
		ID         uuid.UUID `json:"id"`
		Company    string    `json:"company"`
		Email      *string   `json:"email" doc:"The contact email sent with the customer."`
		ExternalID *string   `json:"external_id" doc:"The customer's id in the sending system."`
	}
	// ProductsUpsertedData is the data of products.upserted: one per batch.
	ProductsUpsertedData struct {
		Created   int      `json:"created"`
		Updated   int      `json:"updated"`
		Unchanged int      `json:"unchanged"`
		SKUs      []string `json:"skus" doc:"The SKUs created or changed."`
	}
	// RequestCreatedData is the data of request.created.
	RequestCreatedData struct {
		ID    uuid.UUID `json:"id"`
		Title string    `json:"title"`
	}
	// OrderStatusChangedData is the data of order.status_changed.
	OrderStatusChangedData struct {
		ID     uuid.UUID   `json:"id"`
		Number string      `json:"number"`
		From   OrderStatus `json:"from" enum:"confirmed,in_progress,fulfilled,cancelled"`
		To     OrderStatus `json:"to" enum:"confirmed,in_progress,fulfilled,cancelled"`
		Cause  string      `json:"cause" enum:"erp,deliveries" doc:"erp: an erp_order_status post; deliveries: the order followed its deliveries."`
	}
	// OrderInvoiceRecordedData is the data of order.invoice_recorded.
	OrderInvoiceRecordedData struct {
		OrderID       uuid.UUID     `json:"order_id"`
		OrderNumber   string        `json:"order_number"`
		InvoiceRef    string        `json:"invoice_ref"`
		InvoiceStatus InvoiceStatus `json:"invoice_status" enum:"issued,partially_paid,paid,overdue,void"`
		AmountMinor   *int64        `json:"amount_minor"`
		Currency      *string       `json:"currency"`
	}
	// DeliveryStatusChangedData is the data of delivery.status_changed.
	DeliveryStatusChangedData struct {
		ID          uuid.UUID      `json:"id"`
		Number      string         `json:"number"`
		From        DeliveryStatus `json:"from" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled"`
		To          DeliveryStatus `json:"to" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled"`
		OrderID     *uuid.UUID     `json:"order_id"`
		TrackingURL *string        `json:"tracking_url" doc:"The tracking address sent with the status, if any."`
	}
	// PurchaseOrderAcknowledgedData is the data of purchase_order.acknowledged.
	PurchaseOrderAcknowledgedData struct {
		ID          uuid.UUID `json:"id"`
		Number      string    `json:"number"`
		SupplierRef *string   `json:"supplier_ref"`
		Changes     []Change  `json:"changes" doc:"What the acknowledgement changed: status, supplier_ref, line dates."`
	}
	// SupplierInvoiceMatchData is the data of supplier_invoice.matched and
	// supplier_invoice.variance_raised.
	SupplierInvoiceMatchData struct {
		InvoiceID   uuid.UUID   `json:"invoice_id"`
		InvoiceRef  string      `json:"invoice_ref"`
		MatchStatus MatchStatus `json:"match_status" enum:"matched,variance"`
		Variances   []Variance  `json:"variances" doc:"Empty when matched."`
	}
	// InboundReceiptFailedData is the data of inbound.receipt.failed.
	InboundReceiptFailedData struct {
		ReceiptID  uuid.UUID `json:"receipt_id"`
		EndpointID uuid.UUID `json:"endpoint_id"`
		Action     Action    `json:"action"`
		Outcome    Outcome   `json:"outcome" enum:"failed,error,unmatched"`
		Error      *string   `json:"error" doc:"Why; a fault on the service side reads only in general terms."`
	}
	// SubscriptionFailingData is the data of webhook.subscription.failing.
	SubscriptionFailingData struct {
		SubscriptionID      uuid.UUID `json:"subscription_id"`
		URL                 string    `json:"url" doc:"The subscription's origin (scheme://host[:port]); never its path or query, which can hold the receiver's credentials."`
		ConsecutiveFailures int       `json:"consecutive_failures" doc:"Failed attempts in a row, across the subscription's deliveries."`
		LastStatus          *int      `json:"last_status" doc:"The HTTP status of the last failed attempt; null when no answer came."`
		LastError           *string   `json:"last_error" doc:"What went wrong with the last attempt."`
		Since               Timestamp `json:"since" doc:"When the subscription became failing."`
	}
	// SubscriptionRecoveredData is the data of webhook.subscription.recovered.
	SubscriptionRecoveredData struct {
		SubscriptionID uuid.UUID `json:"subscription_id"`
		URL            string    `json:"url" doc:"The subscription's origin (scheme://host[:port]); never its path or query, which can hold the receiver's credentials."`
		FailingSince   Timestamp `json:"failing_since"`
		HeldDeliveries int       `json:"held_deliveries" doc:"The subscription's deliveries still waiting: held while it was failing, or failed and waiting for a retry. They go now, at its rate."`
	}
	// DeliveryExhaustedData is the data of webhook.delivery.exhausted.
	DeliveryExhaustedData struct {
		DeliveryID     uuid.UUID `json:"delivery_id"`
		EventID        uuid.UUID `json:"event_id"`
		EventType      string    `json:"event_type"`
		SubscriptionID uuid.UUID `json:"subscription_id"`
		Attempts       int       `json:"attempts"`
	}
	// EndpointHealthData is the data of inbound.endpoint.failing and
	// inbound.endpoint.recovered.
	EndpointHealthData struct {
		EndpointID  uuid.UUID `json:"endpoint_id"`
		Name        string    `json:"name"`
		Action      Action    `json:"action"`
		WindowPosts int       `json:"window_posts" doc:"The endpoint's posts of the last 15 minutes."`
		FailedPosts int       `json:"failed_posts" doc:"How many of them failed or ended in error."`
	}
)

// ParseEventTypes reads a comma-separated list of event types; "all" or
// nothing means every type (an empty list).
func ParseEventTypes(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "all") {
		return []string{}, nil
	}
	out := []string{}
	for part := range strings.SplitSeq(s, ",") {
		t := strings.TrimSpace(part)
		if t == "" {
			continue
		}
		if !slices.Contains(EventTypes, t) {
			return nil, Errorf(EINVALID, "unknown event type %q (one of %s, or all)", t, strings.Join(EventTypes, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// EventCatalogueTable is the catalogue as the Markdown table of
// docs/webhooks.md: a test holds the file to it (`go test ./domain -run
// TestDocsListTheEventCatalogue -update` writes it).
func EventCatalogueTable() string {
	var b strings.Builder
	b.WriteString("| Type | When | `data` |\n|---|---|---|\n")
	for _, e := range EventCatalogue {
		b.WriteString("| `" + e.Type + "` | " + e.When + " | " + jsonFields(e.Data) + " |\n")
	}
	return b.String()
}

// jsonFields names the JSON fields of a struct type, with the values of
// those that take a few and the fields of the structs its slices hold:
// `a`, `b` (x, y), `c [{d, e}]`.
func jsonFields(t reflect.Type) string {
	var parts []string
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		part := "`" + name
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			part += " [{" + strings.ReplaceAll(jsonFields(f.Type.Elem()), "`", "") + "}]"
		}
		part += "`"
		if enum := f.Tag.Get("enum"); enum != "" && f.Type.Kind() == reflect.String {
			part += " (" + strings.ReplaceAll(enum, ",", ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
