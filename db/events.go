package db

import (
	"context"

	"github.com/google/uuid"
)

// Event types of the outbox (DESIGN.md section 7).
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
)

// EventTypes lists every event type.
var EventTypes = []string{EventCustomerCreated, EventCustomerUpdated, EventProductsUpserted, EventRequestCreated,
	EventStockMovementCreated, EventOrderStatusChanged, EventOrderInvoiceRecorded, EventDeliveryStatusChanged,
	EventPurchaseOrderAcked, EventSupplierInvoiceMatched, EventVarianceRaised, EventInboundReceiptFailed}

// eventsChannel is the LISTEN/NOTIFY channel that wakes the outbox relay.
const eventsChannel = "commerce_events"

// emit writes an event to the outbox in the caller's transaction, so the
// event exists exactly when the change it reports does, and wakes the relay
// when the transaction commits.
func emit(ctx context.Context, q querier, orgID uuid.UUID, eventType string, data any) error {
	_, err := q.Exec(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES ($1, $2, $3, $4))
		SELECT pg_notify('`+eventsChannel+`', '')`, NewID(), orgID, eventType, data)
	return err
}
