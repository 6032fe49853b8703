package db

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// References compare ignoring case, as search does (docs/decisions.md,
// "References ignore case"): a post naming so-2026-0202 finds the order
// SO-2026-0202. When records of the organisation differ only by case, the
// one spelt exactly as the post wins; with no exact match and several that
// differ only by case, the post is refused as ambiguous.

// Queries selecting how the organisation spells a reference ($2), by kind
// of record: every distinct spelling that matches it ignoring case. Each is
// served by an index on lower(...) (migration 026).
const (
	orderSpellings = `SELECT number FROM orders WHERE org_id = $1 AND lower(number) = lower($2)
		UNION SELECT customer_po_ref FROM orders WHERE org_id = $1 AND lower(customer_po_ref) = lower($2)`
	quoteSpellings       = `SELECT number FROM quotes WHERE org_id = $1 AND lower(number) = lower($2)`
	deliverySpellings    = `SELECT number FROM deliveries WHERE org_id = $1 AND lower(number) = lower($2)`
	consignmentSpellings = `SELECT DISTINCT consignment_ref FROM deliveries WHERE org_id = $1 AND lower(consignment_ref) = lower($2)`
	poSpellings          = `SELECT number FROM purchase_orders WHERE org_id = $1 AND lower(number) = lower($2)`
	requestSpellings     = `SELECT external_ref FROM request_threads WHERE org_id = $1 AND lower(external_ref) = lower($2)`
	// The invoice references of one record ($3): an order's or a purchase
	// order's.
	orderInvoiceSpellings    = `SELECT invoice_ref FROM order_invoices WHERE org_id = $1 AND lower(invoice_ref) = lower($2) AND order_id = $3`
	supplierInvoiceSpellings = `SELECT invoice_ref FROM supplier_invoices WHERE org_id = $1 AND lower(invoice_ref) = lower($2) AND po_id = $3`
)

// spelling is ref as the organisation spells it (query: one of the
// spellings queries above, with extra arguments after the reference): ref
// itself when nil, when a record spells it exactly so or when none matches
// (a parked post waits for it as posted); the one spelling of the records
// that match it ignoring case; else a refusal naming them (what names the
// kind of record for people).
func (a *actor) spelling(what string, ref *string, query string, args ...any) (*string, error) {
	if ref == nil {
		return nil, nil
	}
	rows, err := a.tx.Query(a.ctx, query+` LIMIT 11`, append([]any{a.org, *ref}, args...)...)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	switch {
	case len(found) == 0 || slices.Contains(found, *ref):
		return ref, nil
	case len(found) == 1:
		return &found[0], nil
	}
	slices.Sort(found)
	if len(found) > 10 {
		found = append(found[:10], "…")
	}
	return nil, domain.Errorf(domain.EUNPROCESSABLE,
		"%s reference %q is ambiguous: it matches %s, which differ only by case; send the reference exactly as the record spells it",
		what, *ref, strings.Join(found, ", "))
}
