package domain

import "testing"

// The rules an invoice must meet against the record it names, each with
// its kind: an ERP invoice and its order, a supplier invoice and its
// purchase order (and the same invoice posted again).
func TestInvoicesThatDoNotFitTheirRecordAreRefusedWithTheirKind(t *testing.T) {
	str := func(s string) *string { return &s }
	amount := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		name string
		err  error
		want Code
	}{
		{"order invoice in the order's currency, within its total", OrderInvoiceBody{Currency: str("GBP"), AmountMinor: amount(100)}.FitsOrder("SO-1", "GBP", 100), ""},
		{"order invoice without currency or amount", OrderInvoiceBody{}.FitsOrder("SO-1", "GBP", 0), ""},
		{"order invoice in another currency", OrderInvoiceBody{Currency: str("EUR")}.FitsOrder("SO-1", "GBP", 100), EUNPROCESSABLE},
		{"order invoice above the order's total", OrderInvoiceBody{AmountMinor: amount(101)}.FitsOrder("SO-1", "GBP", 100), EUNPROCESSABLE},
		{"supplier invoice of an open purchase order", SupplierInvoiceBody{Currency: str("GBP")}.FitsPurchaseOrder("PO-1", POSent, "GBP"), ""},
		{"supplier invoice of a cancelled purchase order", SupplierInvoiceBody{}.FitsPurchaseOrder("PO-1", POCancelled, "GBP"), ECONFLICT},
		{"supplier invoice in another currency", SupplierInvoiceBody{Currency: str("USD")}.FitsPurchaseOrder("PO-1", POSent, "GBP"), EUNPROCESSABLE},
		{"the same invoice again with its amount", SupplierInvoiceBody{AmountMinor: amount(5)}.SameAmountAs(amount(5)), ""},
		{"the same invoice again, neither with an amount", SupplierInvoiceBody{}.SameAmountAs(nil), ""},
		{"the same invoice again with another amount", SupplierInvoiceBody{AmountMinor: amount(6)}.SameAmountAs(amount(5)), EUNPROCESSABLE},
		{"the same invoice again, now with an amount", SupplierInvoiceBody{AmountMinor: amount(6)}.SameAmountAs(nil), EUNPROCESSABLE},
	} {
		if got := ErrorCode(c.err); got != c.want {
			t.Errorf("%s: %v (%q), want %q", c.name, c.err, got, c.want)
		}
	}
}
