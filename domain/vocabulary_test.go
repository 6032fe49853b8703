package domain

import "testing"

func TestERPOrderStatusVocabulary(t *testing.T) {
	cases := map[string]OrderStatus{
		"confirmed": OrderConfirmed, "Open": OrderConfirmed, "ACCEPTED": OrderConfirmed,
		"in_progress": OrderInProgress, "In Progress": OrderInProgress, "in-progress": OrderInProgress,
		"processing": OrderInProgress, "picking": OrderInProgress, "packed": OrderInProgress,
		"shipped": OrderInProgress, "Partially Shipped": OrderInProgress, "partially-shipped": OrderInProgress,
		"fulfilled": OrderFulfilled, "completed": OrderFulfilled, "complete": OrderFulfilled,
		"delivered": OrderFulfilled, " closed ": OrderFulfilled,
		"cancelled": OrderCancelled, "canceled": OrderCancelled, "VOID": OrderCancelled,
	}
	for in, want := range cases {
		got, err := ParseERPOrderStatus(in)
		if err != nil || got != want {
			t.Errorf("ParseERPOrderStatus(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "dispatched", "on hold", "in_progress_x"} {
		if _, err := ParseERPOrderStatus(bad); ErrorCode(err) != EUNPROCESSABLE {
			t.Errorf("ParseERPOrderStatus(%q) error = %v, want EUNPROCESSABLE", bad, err)
		}
	}
}

func TestDeliveryStatusVocabulary(t *testing.T) {
	cases := map[string]DeliveryStatus{
		"pending": DeliveryPending, "Ready": DeliveryReady, "dispatched": DeliveryDispatched,
		"shipped": DeliveryDispatched, "in transit": DeliveryInTransit, "In-Transit": DeliveryInTransit,
		"out for delivery": DeliveryOutForDelivery, "delivered": DeliveryDelivered,
		"failed": DeliveryFailed, "exception": DeliveryFailed, "Failed Attempt": DeliveryFailed,
		"returned": DeliveryReturned, "returned_to_sender": DeliveryReturned, "Returned to Sender": DeliveryReturned,
		"cancelled": DeliveryCancelled,
	}
	for in, want := range cases {
		got, err := ParseDeliveryStatus(in)
		if err != nil || got != want {
			t.Errorf("ParseDeliveryStatus(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lost", "canceled", "fulfilled"} {
		if _, err := ParseDeliveryStatus(bad); ErrorCode(err) != EUNPROCESSABLE {
			t.Errorf("ParseDeliveryStatus(%q) error = %v, want EUNPROCESSABLE", bad, err)
		}
	}
}

func TestInvoiceStatusVocabulary(t *testing.T) {
	for in, want := range map[string]InvoiceStatus{
		"issued": InvoiceIssued, "Partially Paid": InvoicePartiallyPaid, "paid": InvoicePaid,
		"OVERDUE": InvoiceOverdue, "void": InvoiceVoid,
	} {
		if got, err := ParseInvoiceStatus(in); err != nil || got != want {
			t.Errorf("ParseInvoiceStatus(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseInvoiceStatus("refunded"); ErrorCode(err) != EUNPROCESSABLE {
		t.Errorf("unknown invoice status error = %v, want EUNPROCESSABLE", err)
	}
}

func TestParseScopes(t *testing.T) {
	all, err := ParseScopes("all")
	if err != nil || len(all) != 19 {
		t.Fatalf("ParseScopes(all) = %v, %v; want 19 scopes (the REST API's 13 and the management API's 6)", all, err)
	}
	got, err := ParseScopes(" products:read,quotes:read ,products:read")
	if err != nil || len(got) != 2 || got[0] != ScopeProductsRead || got[1] != ScopeQuotesRead {
		t.Fatalf("ParseScopes = %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "products:delete", "all,products:read"} {
		if _, err := ParseScopes(bad); ErrorCode(err) != EINVALID {
			t.Errorf("ParseScopes(%q) error = %v, want EINVALID", bad, err)
		}
	}
}
