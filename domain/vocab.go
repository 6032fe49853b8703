package domain

import "strings"

// NormalizeStatus reads a posted status the way every inbound vocabulary
// does: case-insensitive, surrounding space trimmed, inner spaces and hyphens
// read as underscores.
func NormalizeStatus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, s)
}

var erpOrderStatuses = map[string]OrderStatus{
	"confirmed": OrderConfirmed, "open": OrderConfirmed, "accepted": OrderConfirmed,
	"in_progress": OrderInProgress, "processing": OrderInProgress, "picking": OrderInProgress,
	"packed": OrderInProgress, "shipped": OrderInProgress, "partially_shipped": OrderInProgress,
	"fulfilled": OrderFulfilled, "completed": OrderFulfilled, "complete": OrderFulfilled,
	"delivered": OrderFulfilled, "closed": OrderFulfilled,
	"cancelled": OrderCancelled, "canceled": OrderCancelled, "void": OrderCancelled,
}

// ParseERPOrderStatus maps a status posted by an ERP to an order state.
// A value outside the vocabulary is EUNPROCESSABLE (answered 422).
func ParseERPOrderStatus(s string) (OrderStatus, error) {
	if st, ok := erpOrderStatuses[NormalizeStatus(s)]; ok {
		return st, nil
	}
	return "", Errorf(EUNPROCESSABLE, "unknown order status %q", s)
}

var deliveryAliases = map[string]DeliveryStatus{
	"shipped":            DeliveryDispatched,
	"exception":          DeliveryFailed,
	"failed_attempt":     DeliveryFailed,
	"returned_to_sender": DeliveryReturned,
}

// ParseDeliveryStatus maps a status posted by a carrier to a delivery state:
// the delivery states themselves plus the carriers' common aliases.
// A value outside the vocabulary is EUNPROCESSABLE (answered 422).
func ParseDeliveryStatus(s string) (DeliveryStatus, error) {
	n := NormalizeStatus(s)
	if st := DeliveryStatus(n); DeliveryMachine.Valid(st) {
		return st, nil
	}
	if st, ok := deliveryAliases[n]; ok {
		return st, nil
	}
	return "", Errorf(EUNPROCESSABLE, "unknown delivery status %q", s)
}

// InvoiceStatus is the status of an invoice an ERP reports against an order.
type InvoiceStatus string

// Invoice statuses.
const (
	InvoiceIssued        InvoiceStatus = "issued"
	InvoicePartiallyPaid InvoiceStatus = "partially_paid"
	InvoicePaid          InvoiceStatus = "paid"
	InvoiceOverdue       InvoiceStatus = "overdue"
	InvoiceVoid          InvoiceStatus = "void"
)

// InvoiceStatuses lists the invoice statuses in display order.
var InvoiceStatuses = []InvoiceStatus{InvoiceIssued, InvoicePartiallyPaid, InvoicePaid, InvoiceOverdue, InvoiceVoid}

// ParseInvoiceStatus reads a posted invoice status; unknown values are
// EUNPROCESSABLE (answered 422).
func ParseInvoiceStatus(s string) (InvoiceStatus, error) {
	n := InvoiceStatus(NormalizeStatus(s))
	for _, st := range InvoiceStatuses {
		if st == n {
			return st, nil
		}
	}
	return "", Errorf(EUNPROCESSABLE, "unknown invoice_status %q", s)
}
