package domain

import "github.com/google/uuid"

// The records below are the wire shapes of the API (docs/design.md#records):
// money as integer minor units, nullable fields as pointers
// (null on the wire), timestamps as Timestamp, dates as Date.

// Product is a catalogue product.
type Product struct {
	ID           uuid.UUID     `json:"id" doc:"Product id."`
	SKU          string        `json:"sku" doc:"Stock-keeping unit, unique in the organisation; lists sort by it (byte order)."`
	Title        string        `json:"title"`
	Category     *string       `json:"category"`
	UOM          string        `json:"uom" doc:"Unit of measure, e.g. each, box, m."`
	PriceMinor   *int64        `json:"price_minor" doc:"Price in minor units (pence, cents); null when not priced."`
	Currency     string        `json:"currency" doc:"ISO 4217 code of price_minor."`
	StockQty     *float64      `json:"stock_qty" doc:"Quantity in stock as the catalogue records it; null when not tracked."`
	LeadTimeDays *int          `json:"lead_time_days"`
	Attrs        JSONObject    `json:"attrs" doc:"Free-form attributes."`
	Status       ProductStatus `json:"status" enum:"active,draft,archived" doc:"Catalogue status."`
	ExternalID   *string       `json:"external_id"`
	UpdatedAt    Timestamp     `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// Quote is a quote as listed.
type Quote struct {
	ID         uuid.UUID   `json:"id"`
	Number     string      `json:"number"`
	Status     QuoteStatus `json:"status" enum:"draft,sent,accepted,declined,expired"`
	Currency   string      `json:"currency"`
	TotalMinor int64       `json:"total_minor" doc:"Total including VAT, in minor units."`
	CustomerID *uuid.UUID  `json:"customer_id"`
	ValidUntil *Date       `json:"valid_until" doc:"Last day the quote is valid (YYYY-MM-DD); it expires at the end of that day, UTC."`
	SentAt     *Timestamp  `json:"sent_at"`
	CreatedAt  Timestamp   `json:"created_at"`
	UpdatedAt  Timestamp   `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// QuoteDetail is a quote with its totals and lines.
type QuoteDetail struct {
	Quote
	SubtotalMinor int64       `json:"subtotal_minor" doc:"Sum of the lines' amount_minor."`
	DiscountMinor int64       `json:"discount_minor" doc:"Quote-level discount in minor units."`
	VATMinor      int64       `json:"vat_minor" doc:"VAT on (subtotal - discount), rounded half-up."`
	Lines         []QuoteLine `json:"lines" doc:"Lines in position order."`
}

// QuoteLine is one line of a quote. AmountMinor is the line's net value;
// clients use it rather than recomputing, because a seller can pin it.
type QuoteLine struct {
	Position       int      `json:"position"`
	LineType       LineType `json:"line_type" enum:"product,service,freight,note"`
	Description    string   `json:"description"`
	Qty            float64  `json:"qty"`
	UOM            string   `json:"uom"`
	UnitPriceMinor int64    `json:"unit_price_minor"`
	DiscountPct    *float64 `json:"discount_pct" doc:"Line discount in percent; null for none."`
	LeadTimeDays   *int     `json:"lead_time_days"`
	AmountMinor    int64    `json:"amount_minor" doc:"The line's net value in minor units. Use it as the line value: a seller can pin it, so it need not equal qty x unit price."`
}

// Order is an order as listed.
type Order struct {
	ID            uuid.UUID   `json:"id"`
	Number        string      `json:"number"`
	Status        OrderStatus `json:"status" enum:"confirmed,in_progress,fulfilled,cancelled"`
	Currency      string      `json:"currency"`
	TotalMinor    int64       `json:"total_minor" doc:"Total including VAT, in minor units."`
	CustomerID    *uuid.UUID  `json:"customer_id"`
	CustomerPORef *string     `json:"customer_po_ref" doc:"The customer's purchase order reference."`
	CreatedAt     Timestamp   `json:"created_at"`
	UpdatedAt     Timestamp   `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// OrderDetail is an order with its totals, lines, tracking address and the
// invoice references recorded against it.
type OrderDetail struct {
	Order
	SubtotalMinor int64          `json:"subtotal_minor"`
	VATMinor      int64          `json:"vat_minor"`
	TrackingURL   *string        `json:"tracking_url" doc:"Tracking address an ERP or carrier reported."`
	Lines         []OrderLine    `json:"lines"`
	Invoices      []OrderInvoice `json:"invoices" doc:"Invoice references recorded against the order (the service never issues invoices)."`
}

// OrderLine is one line of an order.
type OrderLine struct {
	Position       int        `json:"position"`
	LineType       LineType   `json:"line_type" enum:"product,service,freight,note"`
	Description    string     `json:"description"`
	AttrsSnapshot  JSONObject `json:"attrs_snapshot" doc:"The product's attributes when the order was placed."`
	Qty            float64    `json:"qty"`
	UOM            string     `json:"uom"`
	UnitPriceMinor int64      `json:"unit_price_minor"`
}

// OrderInvoice is an invoice reference an ERP recorded against an order.
type OrderInvoice struct {
	InvoiceRef    string        `json:"invoice_ref"`
	InvoiceStatus InvoiceStatus `json:"invoice_status" enum:"issued,partially_paid,paid,overdue,void"`
	AmountMinor   *int64        `json:"amount_minor"`
	Currency      *string       `json:"currency"`
	RecordedAt    Timestamp     `json:"recorded_at"`
}

// Customer is a customer company.
type Customer struct {
	ID           uuid.UUID  `json:"id"`
	Company      string     `json:"company"`
	Website      *string    `json:"website"`
	EmailDomain  *string    `json:"email_domain" doc:"Lower-case domain used to match contacts' emails."`
	VATNumber    *string    `json:"vat_number"`
	PaymentTerms *string    `json:"payment_terms"`
	Currency     string     `json:"currency"`
	ExternalRefs JSONObject `json:"external_refs" doc:"References in other systems, e.g. {\"external_id\": \"CUST-42\"}."`
	CreatedAt    Timestamp  `json:"created_at"`
	UpdatedAt    Timestamp  `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// Reads of one record bound the records they carry, so that a read costs
// the same however many were loaded: a customer's or supplier's contacts
// (the primary one first, then oldest first) and a request thread's
// messages (its first ones). The doc tags below state them.
const (
	ContactsPerRecord  = 100
	MessagesPerRequest = 500
)

// CustomerDetail is a customer with its contacts.
type CustomerDetail struct {
	Customer
	Contacts []Contact `json:"contacts" doc:"At most 100 contacts: the primary one first, then oldest first."`
}

// Contact is a person at a customer or supplier.
type Contact struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Email     *string   `json:"email"`
	Phone     *string   `json:"phone"`
	IsPrimary bool      `json:"is_primary"`
}

// RequestThread is a request (enquiry, RFQ) as listed.
type RequestThread struct {
	ID            uuid.UUID     `json:"id"`
	Title         string        `json:"title"`
	Status        RequestStatus `json:"status" enum:"active,archived"`
	LastMessageAt Timestamp     `json:"last_message_at"`
	CreatedAt     Timestamp     `json:"created_at"`
}

// RequestDetail is a request thread with its messages.
type RequestDetail struct {
	RequestThread
	Messages []RequestMessage `json:"messages" doc:"The thread's first 500 messages, oldest first."`
}

// RequestMessage is one message of a request thread; blocks are stored and
// returned unchanged.
type RequestMessage struct {
	ID        uuid.UUID   `json:"id"`
	Role      MessageRole `json:"role" enum:"user,assistant,system"`
	Blocks    JSONArray   `json:"blocks" doc:"Message blocks, stored and returned unchanged."`
	CreatedAt Timestamp   `json:"created_at"`
}

// StockLocation is a place stock is kept.
type StockLocation struct {
	ID        uuid.UUID `json:"id"`
	Code      string    `json:"code"`
	Name      string    `json:"name"`
	IsDefault bool      `json:"is_default" doc:"The organisation has exactly one default location."`
	CreatedAt Timestamp `json:"created_at"`
}

// StockLine is the stock of one product at one location.
type StockLine struct {
	ID            uuid.UUID `json:"id"`
	ProductID     uuid.UUID `json:"product_id"`
	SKU           string    `json:"sku" doc:"The product's SKU."`
	LocationID    uuid.UUID `json:"location_id"`
	QtyOnHand     float64   `json:"qty_on_hand" doc:"Quantity on hand; never below zero."`
	UnitCostMinor *int64    `json:"unit_cost_minor"`
	Currency      string    `json:"currency"`
	CreatedAt     Timestamp `json:"created_at"`
	UpdatedAt     Timestamp `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// StockLineDetail is a stock line with its newest movements.
type StockLineDetail struct {
	StockLine
	Movements []StockMovement `json:"movements"`
}

// MovementKind is the kind of a stock movement.
type MovementKind string

// Stock movement kinds a person writes by hand.
const (
	MoveAdjustment MovementKind = "adjustment"
	MoveTransfer   MovementKind = "transfer"
	MoveScrap      MovementKind = "scrap"
	MoveReturn     MovementKind = "return"
	MoveReceipt    MovementKind = "receipt"
)

// MovementKinds lists the movement kinds.
var MovementKinds = []MovementKind{MoveAdjustment, MoveTransfer, MoveScrap, MoveReturn, MoveReceipt}

// StockMovement is one change to a stock line.
type StockMovement struct {
	ID             uuid.UUID    `json:"id"`
	LineID         uuid.UUID    `json:"line_id"`
	ProductID      uuid.UUID    `json:"product_id"`
	LocationID     uuid.UUID    `json:"location_id"`
	ToLocationID   *uuid.UUID   `json:"to_location_id" doc:"Destination of a transfer."`
	Kind           MovementKind `json:"kind" enum:"adjustment,transfer,scrap,return,receipt"`
	Qty            float64      `json:"qty" doc:"Quantity moved: signed for adjustments, positive otherwise."`
	UnitCostMinor  *int64       `json:"unit_cost_minor"`
	BalanceAfter   float64      `json:"balance_after" doc:"Quantity on hand of line_id right after this movement."`
	IdempotencyKey *string      `json:"idempotency_key"`
	Reference      *string      `json:"reference"`
	CreatedAt      Timestamp    `json:"created_at"`
}

// Delivery is a shipment to a customer.
type Delivery struct {
	ID             uuid.UUID      `json:"id"`
	Number         string         `json:"number"`
	Status         DeliveryStatus `json:"status" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled"`
	OrderID        *uuid.UUID     `json:"order_id"`
	CustomerID     *uuid.UUID     `json:"customer_id"`
	Carrier        *string        `json:"carrier"`
	ConsignmentRef *string        `json:"consignment_ref"`
	TrackingURL    *string        `json:"tracking_url"`
	ShipTo         JSONObject     `json:"ship_to" doc:"Delivery address."`
	DispatchedAt   *Timestamp     `json:"dispatched_at"`
	DeliveredAt    *Timestamp     `json:"delivered_at"`
	CreatedAt      Timestamp      `json:"created_at"`
	UpdatedAt      Timestamp      `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// DeliveryDetail is a delivery with its lines and packages.
type DeliveryDetail struct {
	Delivery
	Lines    []DeliveryLine `json:"lines"`
	Packages []Package      `json:"packages"`
}

// DeliveryLine is one line of a delivery.
type DeliveryLine struct {
	Position          int     `json:"position"`
	Description       string  `json:"description"`
	Qty               float64 `json:"qty"`
	OrderLinePosition *int    `json:"order_line_position" doc:"Position of the order line this line delivers."`
}

// Package is one parcel of a delivery.
type Package struct {
	ID          uuid.UUID `json:"id"`
	Reference   string    `json:"reference"`
	WeightGrams *int      `json:"weight_grams"`
	TrackingURL *string   `json:"tracking_url"`
}

// Supplier is a company the organisation buys from.
type Supplier struct {
	ID           uuid.UUID  `json:"id"`
	Name         string     `json:"name"`
	Email        *string    `json:"email"`
	Phone        *string    `json:"phone"`
	Currency     string     `json:"currency"`
	PaymentTerms *string    `json:"payment_terms"`
	ExternalRefs JSONObject `json:"external_refs"`
	CreatedAt    Timestamp  `json:"created_at"`
	UpdatedAt    Timestamp  `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// SupplierDetail is a supplier with its contacts.
type SupplierDetail struct {
	Supplier
	Contacts []Contact `json:"contacts" doc:"At most 100 contacts: the primary one first, then oldest first."`
}

// PurchaseOrder is an order placed with a supplier.
type PurchaseOrder struct {
	ID           uuid.UUID           `json:"id"`
	Number       string              `json:"number"`
	Status       PurchaseOrderStatus `json:"status" enum:"draft,sent,acknowledged,partially_received,received,closed,cancelled"`
	SupplierID   uuid.UUID           `json:"supplier_id"`
	Currency     string              `json:"currency"`
	TotalMinor   int64               `json:"total_minor"`
	SupplierRef  *string             `json:"supplier_ref" doc:"The supplier's reference, recorded on acknowledgement."`
	ExpectedDate *Date               `json:"expected_date"`
	CreatedAt    Timestamp           `json:"created_at"`
	UpdatedAt    Timestamp           `json:"updated_at" doc:"When the record last changed (set when it is created, and by every change to it); lists walk the records changed since a time with updated_since."`
}

// PurchaseOrderDetail is a purchase order with its lines, receipts and the
// supplier invoices matched against it.
type PurchaseOrderDetail struct {
	PurchaseOrder
	Lines    []PurchaseOrderLine `json:"lines"`
	Receipts []POReceipt         `json:"receipts"`
	Invoices []SupplierInvoice   `json:"invoices"`
}

// PurchaseOrderLine is one line of a purchase order.
type PurchaseOrderLine struct {
	Position       int     `json:"position"`
	SKU            *string `json:"sku"`
	Description    string  `json:"description"`
	Qty            float64 `json:"qty"`
	UOM            string  `json:"uom"`
	UnitPriceMinor int64   `json:"unit_price_minor"`
	ExpectedDate   *Date   `json:"expected_date"`
	QtyReceived    float64 `json:"qty_received" doc:"Quantity received so far, over all receipts."`
}

// POReceipt is goods received against a purchase order.
type POReceipt struct {
	ID         uuid.UUID       `json:"id"`
	ReceivedAt Timestamp       `json:"received_at"`
	Lines      []POReceiptLine `json:"lines"`
}

// POReceiptLine is the quantity received of one purchase order line.
type POReceiptLine struct {
	Position int     `json:"position"`
	Qty      float64 `json:"qty"`
}

// MatchStatus is where a supplier invoice's three-way match stands.
type MatchStatus string

// Match statuses.
const (
	MatchAwaitingReceipt MatchStatus = "awaiting_receipt"
	MatchMatched         MatchStatus = "matched"
	MatchVariance        MatchStatus = "variance"
)

// SupplierInvoice is a supplier's invoice against a purchase order.
type SupplierInvoice struct {
	InvoiceRef  string      `json:"invoice_ref"`
	AmountMinor *int64      `json:"amount_minor"`
	Currency    string      `json:"currency"`
	MatchStatus MatchStatus `json:"match_status" enum:"awaiting_receipt,matched,variance" doc:"Where the three-way match stands."`
	Variances   []Variance  `json:"variances"`
}

// VarianceKind is why an invoice does not agree with what was received.
type VarianceKind string

// Variance kinds.
const (
	VarianceQuantity  VarianceKind = "quantity"
	VarianceAmount    VarianceKind = "amount"
	VarianceNoReceipt VarianceKind = "no_receipt"
)

// Variance is one disagreement found by the three-way match.
type Variance struct {
	Kind     VarianceKind `json:"kind" enum:"quantity,amount,no_receipt"`
	Position *int         `json:"position"`
	Expected *float64     `json:"expected"`
	Actual   *float64     `json:"actual"`
}
