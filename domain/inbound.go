package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Inbound limits: a body of at most 1 MB, and per post at most 500
// customers or 1000 products.
const (
	MaxInboundBody      = 1 << 20
	MaxInboundCustomers = 500
	MaxInboundProducts  = 1000
)

// Outcome is where an inbound post stands.
type Outcome string

// Outcomes of an inbound post.
const (
	OutcomePending   Outcome = "pending"   // received, not carried out yet
	OutcomeApplied   Outcome = "applied"   // changes were made
	OutcomeUnchanged Outcome = "unchanged" // understood; nothing needed changing
	OutcomeParked    Outcome = "parked"    // the record it names does not exist yet
	OutcomeUnmatched Outcome = "unmatched" // parked for 7 days without a match
	OutcomeCancelled Outcome = "cancelled" // parked, then cancelled by support
	OutcomeFailed    Outcome = "failed"    // refused (4xx): the post, or a rule, did not allow it
	OutcomeError     Outcome = "error"     // a fault on the service side (5xx)
	OutcomeIgnored   Outcome = "ignored"   // its endpoint's mapping answered null: nothing to do
)

// Outcomes lists the outcomes of an inbound post.
var Outcomes = []Outcome{OutcomePending, OutcomeApplied, OutcomeUnchanged, OutcomeParked,
	OutcomeUnmatched, OutcomeCancelled, OutcomeFailed, OutcomeError, OutcomeIgnored}

// Failed reports whether a post that ends with the outcome did not go
// through: refused, a fault on the service side, or never matched. Such an
// ending emits inbound.receipt.failed.
func (o Outcome) Failed() bool {
	return o == OutcomeFailed || o == OutcomeError || o == OutcomeUnmatched
}

// ParseOutcomes reads a comma-separated list of outcomes.
func ParseOutcomes(s string) ([]Outcome, error) {
	var out []Outcome
	for part := range strings.SplitSeq(s, ",") {
		o := Outcome(strings.ToLower(strings.TrimSpace(part)))
		if o == "" {
			continue
		}
		if !slices.Contains(Outcomes, o) {
			return nil, Errorf(EINVALID, "unknown outcome %q (one of %s)", o, JoinValues(Outcomes))
		}
		out = append(out, o)
	}
	return out, nil
}

// Change is one field an inbound post changed.
type Change struct {
	Entity string `json:"entity" doc:"order, delivery, purchase_order, supplier_invoice, customer, product or request."`
	ID     string `json:"id"`
	Ref    string `json:"ref,omitempty" doc:"The record's number or reference."`
	Field  string `json:"field"`
	From   any    `json:"from"`
	To     any    `json:"to"`
}

// ---- bodies of the eight actions

// CreateRequestBody is the body of create_request.
type CreateRequestBody struct {
	Text     string `json:"text"`
	Title    string `json:"title,omitempty"`
	Customer *struct {
		Company string  `json:"company,omitempty"`
		Email   *string `json:"email,omitempty"`
	} `json:"customer,omitempty"`
	ExternalRef *string `json:"external_ref,omitempty"`
}

// ERPOrderStatusBody is the body of erp_order_status.
type ERPOrderStatusBody struct {
	QuoteRef    *string `json:"quote_ref,omitempty"`
	OrderRef    *string `json:"order_ref,omitempty"`
	Status      string  `json:"status"`
	TrackingURL *string `json:"tracking_url,omitempty"`
}

// OrderInvoiceBody is the body of order_invoice.
type OrderInvoiceBody struct {
	OrderRef      *string `json:"order_ref,omitempty"`
	QuoteRef      *string `json:"quote_ref,omitempty"`
	InvoiceRef    string  `json:"invoice_ref"`
	InvoiceStatus *string `json:"invoice_status,omitempty"`
	AmountMinor   *int64  `json:"amount_minor,omitempty"`
	Currency      *string `json:"currency,omitempty"`
}

// POAckBody is the body of purchase_order_ack.
type POAckBody struct {
	PONumber    string      `json:"po_number"`
	SupplierRef *string     `json:"supplier_ref,omitempty"`
	Lines       []POAckLine `json:"lines,omitempty"`
}

// POAckLine confirms a line's expected date; without a position it applies
// to every line.
type POAckLine struct {
	Position     *int   `json:"position,omitempty"`
	ExpectedDate string `json:"expected_date"`
	// Date is ExpectedDate, parsed.
	Date Date `json:"-"`
}

// SupplierInvoiceBody is the body of supplier_invoice.
type SupplierInvoiceBody struct {
	PONumber    string          `json:"po_number"`
	InvoiceRef  string          `json:"invoice_ref"`
	AmountMinor *int64          `json:"amount_minor,omitempty"`
	Currency    *string         `json:"currency,omitempty"`
	InvoicedQty json.RawMessage `json:"invoiced_qty,omitempty"`
	// Qty is InvoicedQty, read.
	Qty *InvoicedQty `json:"-"`
}

// FitsOrder refuses (422) an invoice that does not fit the order it is
// recorded on: in another currency, or for more than the order's total.
func (b OrderInvoiceBody) FitsOrder(number, currency string, totalMinor int64) error {
	if b.Currency != nil && *b.Currency != currency {
		return Errorf(EUNPROCESSABLE, "the invoice is in %s but order %s is in %s", *b.Currency, number, currency)
	}
	if b.AmountMinor != nil && *b.AmountMinor > totalMinor {
		return Errorf(EUNPROCESSABLE, "the invoice amount %d is above order %s's total of %d", *b.AmountMinor, number, totalMinor)
	}
	return nil
}

// FitsPurchaseOrder refuses an invoice of a cancelled purchase order (409)
// or in another currency than the order's (422).
func (b SupplierInvoiceBody) FitsPurchaseOrder(number string, status PurchaseOrderStatus, currency string) error {
	if status == POCancelled {
		return Errorf(ECONFLICT, "purchase order %s is cancelled", number)
	}
	if b.Currency != nil && *b.Currency != currency {
		return Errorf(EUNPROCESSABLE, "the invoice is in %s but purchase order %s is in %s", *b.Currency, number, currency)
	}
	return nil
}

// SameAmountAs refuses (422) the same invoice again with another amount
// than the one it was received with first (nil: none).
func (b SupplierInvoiceBody) SameAmountAs(first *int64) error {
	if (first == nil) != (b.AmountMinor == nil) || (first != nil && *first != *b.AmountMinor) {
		return Errorf(EUNPROCESSABLE, "invoice %s was received before with another amount", b.InvoiceRef)
	}
	return nil
}

// InvoicedQty is what a supplier invoices: a total across lines, or a
// quantity per line.
type InvoicedQty struct {
	Total  *float64        `json:"total,omitempty"`
	ByLine []POReceiptLine `json:"by_line,omitempty"`
}

// DeliveryStatusBody is the body of delivery_status.
type DeliveryStatusBody struct {
	DeliveryRef    *string `json:"delivery_ref,omitempty"`
	ConsignmentRef *string `json:"consignment_ref,omitempty"`
	OrderRef       *string `json:"order_ref,omitempty"`
	Status         string  `json:"status"`
	TrackingURL    *string `json:"tracking_url,omitempty"`
}

// strictJSON decodes a JSON object, naming an unknown field or a field of
// the wrong type.
func strictJSON(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Errorf(EINVALID, "the body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(EINVALID, "%s", jsonProblem(err))
	}
	if dec.More() {
		return Errorf(EINVALID, "the body must be one JSON object")
	}
	return nil
}

// MaxTrackingURL is the longest tracking address a post may give, in
// characters.
const MaxTrackingURL = 2048

// CheckTrackingURL refuses a tracking address (nil: none given) that is not
// an absolute http or https URL of at most MaxTrackingURL characters: it is
// stored on the order or delivery, shown to people as a link and sent out
// in webhooks, where a javascript: or data: address would run in a
// browser.
func CheckTrackingURL(raw *string) error {
	if raw == nil {
		return nil
	}
	if utf8.RuneCountInString(*raw) > MaxTrackingURL {
		return Errorf(EINVALID, "tracking_url is longer than %d characters", MaxTrackingURL)
	}
	u, err := url.Parse(*raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return Errorf(EINVALID, "tracking_url must be an absolute http:// or https:// URL")
	}
	return nil
}

// refs checks reference fields: no NUL characters, at most 500 characters.
func refs(values ...*string) error {
	for _, v := range values {
		if v == nil {
			continue
		}
		if err := noNUL("a reference", v); err != nil {
			return err
		}
		if utf8.RuneCountInString(*v) > 500 {
			return Errorf(EINVALID, "a reference is longer than 500 characters")
		}
	}
	return nil
}

// ParseInvoicedQty reads invoiced_qty: a number (the total across lines)
// or [{position, qty}].
func ParseInvoicedQty(raw json.RawMessage) (*InvoicedQty, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var total float64
	if err := json.Unmarshal(raw, &total); err == nil {
		if total < 0 {
			return nil, Errorf(EINVALID, "invoiced_qty must be zero or more")
		}
		return &InvoicedQty{Total: &total}, nil
	}
	var lines []POReceiptLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lines); err != nil {
		return nil, Errorf(EINVALID, "invoiced_qty must be a number or [{position, qty}]")
	}
	seen := map[int]bool{}
	for i, l := range lines {
		if l.Position < 1 || seen[l.Position] || l.Qty < 0 {
			return nil, Errorf(EINVALID, "invoiced_qty[%d]: position must be a new line number and qty zero or more", i)
		}
		seen[l.Position] = true
	}
	return &InvoicedQty{ByLine: lines}, nil
}

// ---- three-way match

// MatchLine is one purchase order line as the three-way match sees it.
type MatchLine struct {
	Position       int
	UnitPriceMinor int64
	QtyReceived    float64
}

// Tolerances are an organisation's three-way match tolerances.
type Tolerances struct {
	// Qty is how many units an invoiced quantity may differ by.
	Qty float64
	// AmountPct and AmountMinor: an amount may differ by the larger of
	// AmountPct percent of the expected amount and AmountMinor.
	AmountPct   float64
	AmountMinor int64
}

// DefaultTolerances: quantities must agree; amounts within the larger of 1%
// and 100 minor units.
var DefaultTolerances = Tolerances{Qty: 0, AmountPct: 1, AmountMinor: 100}

// MatchInvoice compares a supplier invoice with what was received:
// expected quantity is the quantity received on the purchase order's
// receipts, expected amount the received quantities at their unit prices.
// It returns the variances beyond tolerance (none means matched), or
// received=false when nothing has been received yet.
func MatchInvoice(lines []MatchLine, amount *int64, qty *InvoicedQty, tol Tolerances) (variances []Variance, received bool) {
	var totalReceived float64
	expected := new(big.Rat)
	for _, l := range lines {
		totalReceived += l.QtyReceived
		expected.Add(expected, new(big.Rat).Mul(Decimal(l.QtyReceived), new(big.Rat).SetInt64(l.UnitPriceMinor)))
	}
	if totalReceived == 0 {
		return nil, false
	}
	variances = []Variance{}
	qtyVariance := func(pos *int, want, got float64) {
		if diff := got - want; diff > tol.Qty || -diff > tol.Qty {
			w, g := want, got
			variances = append(variances, Variance{Kind: VarianceQuantity, Position: pos, Expected: &w, Actual: &g})
		}
	}
	if qty != nil {
		if qty.Total != nil {
			qtyVariance(nil, totalReceived, *qty.Total)
		}
		for _, il := range qty.ByLine {
			var received float64
			for _, l := range lines {
				if l.Position == il.Position {
					received = l.QtyReceived
				}
			}
			pos := il.Position
			qtyVariance(&pos, received, il.Qty)
		}
	}
	if amount != nil {
		want := mustMinor(expected)
		allowed := mustMinor(new(big.Rat).Mul(new(big.Rat).SetInt64(want), new(big.Rat).Quo(Decimal(tol.AmountPct), big.NewRat(100, 1))))
		allowed = max(allowed, tol.AmountMinor)
		if diff := *amount - want; diff > allowed || -diff > allowed {
			w, g := float64(want), float64(*amount)
			variances = append(variances, Variance{Kind: VarianceAmount, Expected: &w, Actual: &g})
		}
	}
	return variances, true
}

// ---- answers

// InboundAnswer is what an inbound post answers with 2xx:
// {receipt_id, action, outcome, changes, ...extras}.
type InboundAnswer struct {
	ReceiptID uuid.UUID `json:"receipt_id"`
	Action    Action    `json:"action"`
	Outcome   Outcome   `json:"outcome" enum:"applied,unchanged,parked"`
	Changes   []Change  `json:"changes"`
	// WaitingFor names the record a parked post is waiting for.
	WaitingFor string `json:"waiting_for,omitempty"`
	// Extras of the action (counts, the request opened, the match result).
	Extras map[string]any `json:"-"`
}

// MarshalJSON flattens the extras into the answer object.
func (a InboundAnswer) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range a.Extras {
		m[k] = v
	}
	m["receipt_id"], m["action"], m["outcome"] = a.ReceiptID, a.Action, a.Outcome
	changes := a.Changes
	if changes == nil {
		changes = []Change{}
	}
	m["changes"] = changes
	if a.WaitingFor != "" {
		m["waiting_for"] = a.WaitingFor
	}
	return json.Marshal(m)
}

// Describe names a record for a waiting_for or an error message.
func Describe(entity string, refs ...*string) string {
	var parts []string
	for _, r := range refs {
		if r != nil {
			parts = append(parts, fmt.Sprintf("%q", *r))
		}
	}
	return entity + " " + strings.Join(parts, " / ")
}
