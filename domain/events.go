package domain

import (
	"slices"
	"strings"
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
)

// EventTypes lists every event type.
var EventTypes = []string{EventCustomerCreated, EventCustomerUpdated, EventProductsUpserted, EventRequestCreated,
	EventStockMovementCreated, EventOrderStatusChanged, EventOrderInvoiceRecorded, EventDeliveryStatusChanged,
	EventPurchaseOrderAcked, EventSupplierInvoiceMatched, EventVarianceRaised, EventInboundReceiptFailed}

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
