package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// SeedFile is the content of a `commerce seed` file: every section
// optional, records named by natural keys (SKU, number, supplier name,
// location code, customer company). ParseSeed reads one and Validate checks
// it and computes what the file leaves out (totals, defaults).
type SeedFile struct {
	Locations      []SeedLocation      `json:"locations"`
	Customers      []SeedCustomer      `json:"customers"`
	Products       []ProductInput      `json:"products"`
	Quotes         []SeedQuote         `json:"quotes"`
	Orders         []SeedOrder         `json:"orders"`
	Suppliers      []SeedSupplier      `json:"suppliers"`
	PurchaseOrders []SeedPurchaseOrder `json:"purchase_orders"`
	Deliveries     []SeedDelivery      `json:"deliveries"`
	Stock          []SeedStock         `json:"stock"`
	GoodsReceipts  []SeedGoodsReceipt  `json:"goods_receipts"`
}

// SeedGoodsReceipt records goods received against a purchase order of the
// file or of the organisation, moving the order to partially_received or
// received.
type SeedGoodsReceipt struct {
	PONumber   string          `json:"po_number"`
	ReceivedAt *Timestamp      `json:"received_at"`
	Lines      []POReceiptLine `json:"lines"`
}

// SeedLocation is a stock location.
type SeedLocation struct {
	Code      string `json:"code"`
	Name      string `json:"name"`
	IsDefault bool   `json:"is_default"`
}

// SeedContact is a person at a customer or supplier.
type SeedContact struct {
	Name      string  `json:"name"`
	Email     *string `json:"email"`
	Phone     *string `json:"phone"`
	IsPrimary bool    `json:"is_primary"`
}

// SeedCustomer is a customer with its contacts.
type SeedCustomer struct {
	Company      string         `json:"company"`
	EmailDomain  *string        `json:"email_domain"`
	Website      *string        `json:"website"`
	VATNumber    *string        `json:"vat_number"`
	PaymentTerms *string        `json:"payment_terms"`
	Currency     string         `json:"currency"`
	ExternalRefs map[string]any `json:"external_refs"`
	Contacts     []SeedContact  `json:"contacts"`
}

// SeedQuote is a quote with its lines. Totals, when all three are given,
// are kept if they obey total = subtotal − discount + vat; otherwise they
// are computed from the lines.
type SeedQuote struct {
	Number        string          `json:"number"`
	Status        QuoteStatus     `json:"status"`
	Currency      string          `json:"currency"`
	Customer      *string         `json:"customer"`
	ValidUntil    *Date           `json:"valid_until"`
	SentAt        *Timestamp      `json:"sent_at"`
	CreatedAt     *Timestamp      `json:"created_at"`
	DiscountMinor int64           `json:"discount_minor"`
	VATPct        *float64        `json:"vat_pct"`
	SubtotalMinor *int64          `json:"subtotal_minor"`
	VATMinor      *int64          `json:"vat_minor"`
	TotalMinor    *int64          `json:"total_minor"`
	Lines         []SeedQuoteLine `json:"lines"`
	// Totals is filled in by Validate.
	Totals Totals `json:"-"`
}

// SeedQuoteLine is one line of a seeded quote.
type SeedQuoteLine struct {
	Position            int      `json:"position"`
	LineType            LineType `json:"line_type"`
	Description         string   `json:"description"`
	Qty                 float64  `json:"qty"`
	UOM                 string   `json:"uom"`
	UnitPriceMinor      int64    `json:"unit_price_minor"`
	DiscountPct         *float64 `json:"discount_pct"`
	LeadTimeDays        *int     `json:"lead_time_days"`
	AmountOverrideMinor *int64   `json:"amount_override_minor"`
	// AmountMinor is filled in by Validate.
	AmountMinor int64 `json:"-"`
}

// SeedOrder is an order with its lines.
type SeedOrder struct {
	Number        string          `json:"number"`
	Status        OrderStatus     `json:"status"`
	Currency      string          `json:"currency"`
	Customer      *string         `json:"customer"`
	CustomerPORef *string         `json:"customer_po_ref"`
	QuoteNumber   *string         `json:"quote_number"`
	CreatedAt     *Timestamp      `json:"created_at"`
	VATPct        *float64        `json:"vat_pct"`
	SubtotalMinor *int64          `json:"subtotal_minor"`
	VATMinor      *int64          `json:"vat_minor"`
	TotalMinor    *int64          `json:"total_minor"`
	Lines         []SeedOrderLine `json:"lines"`
	// Totals is filled in by Validate.
	Totals Totals `json:"-"`
}

// SeedOrderLine is one line of a seeded order.
type SeedOrderLine struct {
	Position       int            `json:"position"`
	LineType       LineType       `json:"line_type"`
	Description    string         `json:"description"`
	AttrsSnapshot  map[string]any `json:"attrs_snapshot"`
	Qty            float64        `json:"qty"`
	UOM            string         `json:"uom"`
	UnitPriceMinor int64          `json:"unit_price_minor"`
}

// SeedSupplier is a supplier with its contacts.
type SeedSupplier struct {
	Name         string        `json:"name"`
	Email        *string       `json:"email"`
	Phone        *string       `json:"phone"`
	Currency     string        `json:"currency"`
	PaymentTerms *string       `json:"payment_terms"`
	CreatedAt    *Timestamp    `json:"created_at"`
	Contacts     []SeedContact `json:"contacts"`
}

// SeedPurchaseOrder is a purchase order with its lines and receipts.
type SeedPurchaseOrder struct {
	Number    string              `json:"number"`
	Supplier  string              `json:"supplier"`
	Status    PurchaseOrderStatus `json:"status"`
	Currency  string              `json:"currency"`
	CreatedAt *Timestamp          `json:"created_at"`
	Lines     []SeedPOLine        `json:"lines"`
	Receipts  []SeedReceipt       `json:"receipts"`
	// TotalMinor is filled in by Validate.
	TotalMinor int64 `json:"-"`
}

// SeedPOLine is one line of a seeded purchase order.
type SeedPOLine struct {
	Position       int     `json:"position"`
	SKU            *string `json:"sku"`
	Description    string  `json:"description"`
	Qty            float64 `json:"qty"`
	UOM            string  `json:"uom"`
	UnitPriceMinor int64   `json:"unit_price_minor"`
	ExpectedDate   *Date   `json:"expected_date"`
}

// SeedReceipt is goods received against a seeded purchase order.
type SeedReceipt struct {
	ReceivedAt *Timestamp      `json:"received_at"`
	Lines      []POReceiptLine `json:"lines"`
}

// SeedDelivery is a delivery with its lines and packages.
type SeedDelivery struct {
	Number         string             `json:"number"`
	Status         DeliveryStatus     `json:"status"`
	OrderNumber    *string            `json:"order_number"`
	ConsignmentRef *string            `json:"consignment_ref"`
	Carrier        *string            `json:"carrier"`
	TrackingURL    *string            `json:"tracking_url"`
	ShipTo         map[string]any     `json:"ship_to"`
	CreatedAt      *Timestamp         `json:"created_at"`
	Lines          []SeedDeliveryLine `json:"lines"`
	Packages       []SeedPackage      `json:"packages"`
}

// SeedDeliveryLine is one line of a seeded delivery.
type SeedDeliveryLine struct {
	Position          int     `json:"position"`
	Description       string  `json:"description"`
	Qty               float64 `json:"qty"`
	OrderLinePosition *int    `json:"order_line_position"`
}

// SeedPackage is one parcel of a seeded delivery.
type SeedPackage struct {
	Reference   string  `json:"reference"`
	WeightGrams *int    `json:"weight_grams"`
	TrackingURL *string `json:"tracking_url"`
}

// SeedStock is the stock of one product at one location.
type SeedStock struct {
	SKU           string  `json:"sku"`
	Location      *string `json:"location"`
	QtyOnHand     float64 `json:"qty_on_hand"`
	UnitCostMinor *int64  `json:"unit_cost_minor"`
}

// SeedProblems collects what is wrong with a seed file, each named by its
// section and index. It is an EINVALID error.
type SeedProblems struct{ p Problems }

// maxSeedProblems bounds the report; a file this broken needs no more.
const maxSeedProblems = 50

func (p *SeedProblems) add(section string, index int, format string, args ...any) {
	p.note(fmt.Sprintf("%s[%d]: %s", section, index, fmt.Sprintf(format, args...)))
}

// note records a problem of the file or of a whole section.
func (p *SeedProblems) note(problem string) {
	p.p.Max = maxSeedProblems
	p.p.Add(problem)
}

// Problems returns the problems found, in file order.
func (p *SeedProblems) Problems() []string { return slices.Clone(p.p.List()) }

func (p *SeedProblems) err() error {
	if p.p.Len() == 0 {
		return nil
	}
	return &Error{Code: EINVALID, Message: "seed file rejected: " + p.p.String()}
}

var seedSections = []string{"locations", "customers", "products", "quotes", "orders", "suppliers",
	"purchase_orders", "deliveries", "stock", "goods_receipts"}

// ParseSeed reads a seed file. Each record is decoded on its own, so a type
// error or an unknown field is reported with its section and index.
func ParseSeed(data []byte) (*SeedFile, error) {
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(data, &sections); err != nil {
		return nil, Errorf(EINVALID, "seed file is not a JSON object: %s", jsonProblem(err))
	}
	var f SeedFile
	var probs SeedProblems
	for name := range sections {
		if !slices.Contains(seedSections, name) {
			probs.note(fmt.Sprintf("unknown section %s (known: %s)", quoted(name), strings.Join(seedSections, ", ")))
		}
	}
	decodeSection(sections, "locations", &f.Locations, &probs)
	decodeSection(sections, "customers", &f.Customers, &probs)
	decodeSection(sections, "products", &f.Products, &probs)
	decodeSection(sections, "quotes", &f.Quotes, &probs)
	decodeSection(sections, "orders", &f.Orders, &probs)
	decodeSection(sections, "suppliers", &f.Suppliers, &probs)
	decodeSection(sections, "purchase_orders", &f.PurchaseOrders, &probs)
	decodeSection(sections, "deliveries", &f.Deliveries, &probs)
	decodeSection(sections, "stock", &f.Stock, &probs)
	decodeSection(sections, "goods_receipts", &f.GoodsReceipts, &probs)
	if err := probs.err(); err != nil {
		return nil, err
	}
	return &f, nil
}

// decodeSection reads the records of one section, each on its own, so that
// every bad record is reported by its index.
func decodeSection[T any](sections map[string]json.RawMessage, name string, out *[]T, probs *SeedProblems) {
	raw, ok := sections[name]
	if !ok || string(raw) == "null" {
		return
	}
	var records []json.RawMessage
	if err := json.Unmarshal(raw, &records); err != nil {
		probs.note(name + ": must be an array of objects")
		return
	}
	*out = make([]T, len(records))
	for i, rec := range records {
		if err := decodeStrict(rec, &(*out)[i]); err != nil {
			probs.add(name, i, "%s", jsonProblem(err))
		}
	}
}
