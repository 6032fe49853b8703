package api

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// The data of each event type, as db writes it to the outbox; these types
// document it in the OpenAPI document's webhooks.
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
		ID     uuid.UUID          `json:"id"`
		Number string             `json:"number"`
		From   domain.OrderStatus `json:"from" enum:"confirmed,in_progress,fulfilled,cancelled"`
		To     domain.OrderStatus `json:"to" enum:"confirmed,in_progress,fulfilled,cancelled"`
		Cause  string             `json:"cause" enum:"erp,deliveries" doc:"erp: an erp_order_status post; deliveries: the order followed its deliveries."`
	}
	// OrderInvoiceRecordedData is the data of order.invoice_recorded.
	OrderInvoiceRecordedData struct {
		OrderID       uuid.UUID            `json:"order_id"`
		OrderNumber   string               `json:"order_number"`
		InvoiceRef    string               `json:"invoice_ref"`
		InvoiceStatus domain.InvoiceStatus `json:"invoice_status" enum:"issued,partially_paid,paid,overdue,void"`
		AmountMinor   *int64               `json:"amount_minor"`
		Currency      *string              `json:"currency"`
	}
	// DeliveryStatusChangedData is the data of delivery.status_changed.
	DeliveryStatusChangedData struct {
		ID          uuid.UUID             `json:"id"`
		Number      string                `json:"number"`
		From        domain.DeliveryStatus `json:"from" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled"`
		To          domain.DeliveryStatus `json:"to" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled"`
		OrderID     *uuid.UUID            `json:"order_id"`
		TrackingURL *string               `json:"tracking_url" doc:"The tracking address sent with the status, if any."`
	}
	// PurchaseOrderAcknowledgedData is the data of purchase_order.acknowledged.
	PurchaseOrderAcknowledgedData struct {
		ID          uuid.UUID       `json:"id"`
		Number      string          `json:"number"`
		SupplierRef *string         `json:"supplier_ref"`
		Changes     []domain.Change `json:"changes" doc:"What the acknowledgement changed: status, supplier_ref, line dates."`
	}
	// SupplierInvoiceMatchData is the data of supplier_invoice.matched and
	// supplier_invoice.variance_raised.
	SupplierInvoiceMatchData struct {
		InvoiceID   uuid.UUID          `json:"invoice_id"`
		InvoiceRef  string             `json:"invoice_ref"`
		MatchStatus domain.MatchStatus `json:"match_status" enum:"matched,variance"`
		Variances   []domain.Variance  `json:"variances" doc:"Empty when matched."`
	}
	// InboundReceiptFailedData is the data of inbound.receipt.failed.
	InboundReceiptFailedData struct {
		ReceiptID  uuid.UUID      `json:"receipt_id"`
		EndpointID uuid.UUID      `json:"endpoint_id"`
		Action     domain.Action  `json:"action" enum:"create_request,upsert_customers,upsert_products,erp_order_status,order_invoice,purchase_order_ack,supplier_invoice,delivery_status"`
		Outcome    domain.Outcome `json:"outcome" enum:"failed,error,unmatched"`
		Error      *string        `json:"error" doc:"Why; a fault on the service side reads only in general terms."`
	}
)

// eventData is the data type and a description of each event type of
// domain.EventTypes.
var eventData = map[string]struct {
	Data reflect.Type
	When string
}{
	domain.EventCustomerCreated:        {reflect.TypeFor[CustomerEventData](), "A customer is created (REST or inbound)."},
	domain.EventCustomerUpdated:        {reflect.TypeFor[CustomerEventData](), "A customer is matched and updated."},
	domain.EventProductsUpserted:       {reflect.TypeFor[ProductsUpsertedData](), "A products upsert (REST bulk or inbound) ran: one event per batch."},
	domain.EventRequestCreated:         {reflect.TypeFor[RequestCreatedData](), "A request is opened."},
	domain.EventStockMovementCreated:   {reflect.TypeFor[domain.StockMovement](), "A stock movement is recorded; data is the movement as POST /api/v1/stock/movements answers it."},
	domain.EventOrderStatusChanged:     {reflect.TypeFor[OrderStatusChangedData](), "An order moves (an ERP status, or following its deliveries)."},
	domain.EventOrderInvoiceRecorded:   {reflect.TypeFor[OrderInvoiceRecordedData](), "An ERP invoice is recorded on an order, or its status changes."},
	domain.EventDeliveryStatusChanged:  {reflect.TypeFor[DeliveryStatusChangedData](), "A delivery moves."},
	domain.EventPurchaseOrderAcked:     {reflect.TypeFor[PurchaseOrderAcknowledgedData](), "A supplier acknowledges a purchase order."},
	domain.EventSupplierInvoiceMatched: {reflect.TypeFor[SupplierInvoiceMatchData](), "A supplier invoice passes its three-way match."},
	domain.EventVarianceRaised:         {reflect.TypeFor[SupplierInvoiceMatchData](), "A supplier invoice's match finds variances, or no goods arrive within 14 days."},
	domain.EventInboundReceiptFailed:   {reflect.TypeFor[InboundReceiptFailedData](), "An inbound post is refused (4xx), fails, or waits 7 days for its record in vain."},
}

// webhookDeliveryDescription is said of every webhook.
const webhookDeliveryDescription = "Posted to every active subscription to this event type, as one delivery with its " +
	"own id. A 2xx answer within 10 seconds is success; anything else is a failed attempt, tried again at the nightly " +
	"run, at most 5 attempts in all. Every attempt carries the same body and delivery id. Verify the signature over " +
	"the raw body before parsing it (X-Service-Signature, or the Standard Webhooks headers); deliveries are not " +
	"ordered and may rarely repeat, so keep the event ids processed."

// documentWebhooks describes the event catalogue under the document's
// top-level webhooks: one entry per event type, its body the event envelope
// with that type's data, and the delivery headers.
func (s *Server) documentWebhooks() {
	doc := s.api.OpenAPI()
	reg := doc.Components.Schemas
	str := func(format string) *huma.Schema { return &huma.Schema{Type: huma.TypeString, Format: format} }
	header := func(name, desc string, schema *huma.Schema, example any) *huma.Param {
		return &huma.Param{Name: name, In: "header", Required: true, Description: desc, Schema: schema, Example: example}
	}
	doc.Webhooks = map[string]*huma.PathItem{}
	for _, eventType := range domain.EventTypes {
		d := eventData[eventType]
		envelope := &huma.Schema{
			Type:                 huma.TypeObject,
			Description:          "The event: its id, type, when it happened, and its data.",
			Required:             []string{"id", "type", "created_at", "data"},
			AdditionalProperties: false,
			Properties: map[string]*huma.Schema{
				"id":         {Type: huma.TypeString, Format: "uuid", Description: "The event's id; the same on every delivery and attempt of the event."},
				"type":       {Type: huma.TypeString, Enum: []any{eventType}},
				"created_at": {Type: huma.TypeString, Format: "date-time", Description: "When the change happened (RFC 3339 UTC, milliseconds)."},
				"data":       reg.Schema(d.Data, true, ""),
			},
		}
		doc.Webhooks[eventType] = &huma.PathItem{Post: &huma.Operation{
			OperationID: "event-" + operationIDPart(eventType),
			Summary:     eventType,
			Description: d.When + "\n\n" + webhookDeliveryDescription,
			Tags:        []string{"Webhooks"},
			// The signature headers, not a security scheme, authenticate a delivery.
			Security: []map[string][]string{},
			Parameters: []*huma.Param{
				header("X-Service-Event-Id", "The event's id.", str("uuid"), nil),
				header("X-Service-Event-Type", "The event's type.", &huma.Schema{Type: huma.TypeString, Enum: []any{eventType}}, eventType),
				header("X-Service-Delivery-Id", "The delivery's id: the same on every attempt of the delivery.", str("uuid"), nil),
				header("X-Service-Attempt", "The attempt's number, from 1 to 5.", &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(1), Maximum: floatPtr(5)}, 1),
				header(signature.Header, "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\" keyed with the subscription's "+
					"secret, the whole whsec_ string as UTF-8>; while a secret is rotated, one v1 per secret. Refuse a t more than "+
					"five minutes from your clock. The construction Stripe uses.", str(""),
					"t=1795340000,v1=5f2b8c0e1d4a7b9c3e6f8a1b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d"),
				header("webhook-id", "Standard Webhooks (standardwebhooks.com): the event's id.", str(""), nil),
				header("webhook-timestamp", "Standard Webhooks: when the attempt was signed, in unix seconds.", str(""), "1795340000"),
				header("webhook-signature", "Standard Webhooks: v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<raw body>\" "+
					"keyed with the base64-decoded part of the secret after whsec_>; space separated, one per secret, while a secret is "+
					"rotated. Standard Webhooks libraries verify it.", str(""), nil),
			},
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
				"application/json": {Schema: envelope},
			}},
			Responses: map[string]*huma.Response{
				"2XX":     {Description: "Received: the delivery succeeded. The answer's body is ignored (support sees its first 1 KB)."},
				"default": {Description: "Any other answer, or none within 10 seconds: the attempt failed and is tried again at the nightly run."},
			},
		}}
	}
}

func floatPtr(f float64) *float64 { return &f }
