package domain

import (
	"reflect"
	"strings"
)

// Action is what an inbound endpoint does with a post.
type Action string

// Inbound actions.
const (
	ActionCreateRequest    Action = "create_request"
	ActionUpsertCustomers  Action = "upsert_customers"
	ActionUpsertProducts   Action = "upsert_products"
	ActionERPOrderStatus   Action = "erp_order_status"
	ActionOrderInvoice     Action = "order_invoice"
	ActionPurchaseOrderAck Action = "purchase_order_ack"
	ActionSupplierInvoice  Action = "supplier_invoice"
	ActionDeliveryStatus   Action = "delivery_status"
)

// InboundBody is a post's body read for its action: one type per action.
type InboundBody interface {
	// ApplyTo carries the post out with the method of a for its action.
	ApplyTo(a ActionApplier) (InboundResult, error)
}

// ActionApplier carries out each action's post, in one transaction
// (package db). A post that names a record that does not exist yet comes
// back parked; a business rejection is an *Error of its kind.
type ActionApplier interface {
	CreateRequest(CreateRequestBody) (InboundResult, error)
	UpsertCustomers(UpsertCustomersBody) (InboundResult, error)
	UpsertProducts(ProductsBody) (InboundResult, error)
	ERPOrderStatus(ERPOrderStatusBody) (InboundResult, error)
	OrderInvoice(OrderInvoiceBody) (InboundResult, error)
	PurchaseOrderAck(POAckBody) (InboundResult, error)
	SupplierInvoice(SupplierInvoiceBody) (InboundResult, error)
	DeliveryStatus(DeliveryStatusBody) (InboundResult, error)
}

// ApplyTo carries out a create_request post (InboundBody).
func (b CreateRequestBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.CreateRequest(b)
}

// ApplyTo carries out a upsert_customers post (InboundBody).
func (b UpsertCustomersBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.UpsertCustomers(b)
}

// ApplyTo carries out a upsert_products post (InboundBody).
func (b ProductsBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.UpsertProducts(b)
}

// ApplyTo carries out a erp_order_status post (InboundBody).
func (b ERPOrderStatusBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.ERPOrderStatus(b)
}

// ApplyTo carries out a order_invoice post (InboundBody).
func (b OrderInvoiceBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.OrderInvoice(b)
}

// ApplyTo carries out a purchase_order_ack post (InboundBody).
func (b POAckBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.PurchaseOrderAck(b)
}

// ApplyTo carries out a supplier_invoice post (InboundBody).
func (b SupplierInvoiceBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.SupplierInvoice(b)
}

// ApplyTo carries out a delivery_status post (InboundBody).
func (b DeliveryStatusBody) ApplyTo(a ActionApplier) (InboundResult, error) {
	return a.DeliveryStatus(b)
}

// ActionDef is one inbound action: everything else about it (the list of
// actions, parsing, the OpenAPI document's body and example) is read from
// its entry in the table below, and it is carried out by its ActionApplier
// method.
type ActionDef struct {
	Action Action
	// Parse reads a post's body and checks its shape.
	Parse func(body []byte) (InboundBody, error)
	// Doc is the type the OpenAPI document describes the body with.
	Doc reflect.Type
	// Answer is the type of the fields the action adds to its 2xx answer
	// (an ActionAnswer of this action), which the OpenAPI document
	// describes its answer with.
	Answer reflect.Type
	// Summary and Example are the documented example post.
	Summary string
	Example map[string]any
}

// parser adapts an action's parse function to ActionDef.Parse.
func parser[B InboundBody](parse func([]byte) (B, error)) func([]byte) (InboundBody, error) {
	return func(body []byte) (InboundBody, error) {
		b, err := parse(body)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

// actionTable holds the inbound actions, in the order they are listed.
var actionTable = []ActionDef{
	{ActionCreateRequest, parser(parseCreateRequest), reflect.TypeFor[CreateRequestBody](), reflect.TypeFor[CreateRequestAnswer](),
		"create_request: open a request", map[string]any{
			"text": "Please quote 500 M8 washers delivered to Leeds by March.", "title": "M8 washers",
			"customer": map[string]any{"company": "Buyer Ltd", "email": "ann@buyer.example"}, "external_ref": "CRM-4411"}},
	{ActionUpsertCustomers, parser(parseUpsertCustomers), reflect.TypeFor[InboundCustomersBody](), reflect.TypeFor[UpsertCustomersAnswer](),
		"upsert_customers: create or update customers", map[string]any{
			"customers": []any{map[string]any{"company": "Buyer Ltd", "email": "ann@buyer.example", "external_id": "C-100"}}}},
	{ActionUpsertProducts, parser(parseUpsertProducts), reflect.TypeFor[InboundProductsBody](), reflect.TypeFor[UpsertProductsAnswer](),
		"upsert_products: create or update products by SKU", map[string]any{
			"products": []any{map[string]any{"sku": "A-1", "title": "Washer M8", "price_minor": 12, "uom": "each"}}}},
	{ActionERPOrderStatus, parser(parseERPOrderStatus), reflect.TypeFor[ERPOrderStatusBody](), reflect.TypeFor[ERPOrderStatusAnswer](),
		"erp_order_status: an ERP moves an order", map[string]any{
			"order_ref": "SO-1001", "status": "shipped"}},
	{ActionOrderInvoice, parser(parseOrderInvoice), reflect.TypeFor[OrderInvoiceBody](), reflect.TypeFor[OrderInvoiceAnswer](),
		"order_invoice: an ERP records its invoice on an order", map[string]any{
			"order_ref": "SO-1001", "invoice_ref": "INV-2001", "invoice_status": "issued", "amount_minor": 125000, "currency": "GBP"}},
	{ActionPurchaseOrderAck, parser(parsePOAck), reflect.TypeFor[POAckBody](), reflect.TypeFor[PurchaseOrderAckAnswer](),
		"purchase_order_ack: a supplier acknowledges a purchase order", map[string]any{
			"po_number": "PO-3001", "supplier_ref": "SUP-77", "lines": []any{map[string]any{"position": 1, "expected_date": "2026-12-15"}}}},
	{ActionSupplierInvoice, parser(parseSupplierInvoice), reflect.TypeFor[SupplierInvoiceBody](), reflect.TypeFor[SupplierInvoiceAnswer](),
		"supplier_invoice: a supplier invoices a purchase order", map[string]any{
			"po_number": "PO-3001", "invoice_ref": "SI-501", "amount_minor": 48000, "currency": "GBP",
			"invoiced_qty": []any{map[string]any{"position": 1, "qty": 40}}}},
	{ActionDeliveryStatus, parser(parseDeliveryStatus), reflect.TypeFor[DeliveryStatusBody](), reflect.TypeFor[DeliveryStatusAnswer](),
		"delivery_status: a carrier moves a delivery", map[string]any{
			"delivery_ref": "DL-1001", "status": "dispatched", "tracking_url": "https://track.example/DL-1001"}},
}

// ActionDefs lists every inbound action's entry.
func ActionDefs() []ActionDef { return actionTable }

// Actions lists the inbound actions.
var Actions = func() []Action {
	out := make([]Action, len(actionTable))
	for i, d := range actionTable {
		out[i] = d.Action
	}
	return out
}()

// Def returns the action's entry; ok is false for an unknown action.
func (a Action) Def() (d ActionDef, ok bool) {
	for _, d := range actionTable {
		if d.Action == a {
			return d, true
		}
	}
	return ActionDef{}, false
}

// Valid reports whether a is a known action.
func (a Action) Valid() bool {
	_, ok := a.Def()
	return ok
}

// ActionList is the actions' names, comma-separated, for messages and
// documentation.
func ActionList() string { return JoinValues(Actions) }

// ParseInbound reads a post's body for its action and checks its shape:
// EINVALID naming the field when it is not JSON or not the action's shape,
// ETOOLARGE when it carries more customers or products than a post may.
func ParseInbound(action Action, body []byte) (InboundBody, error) {
	d, ok := action.Def()
	if !ok {
		return nil, Errorf(EINVALID, "unknown action %q", action)
	}
	return d.Parse(body)
}

// InboundProductsBody documents the body of an upsert_products endpoint:
// the body of POST /api/v1/products/bulk with the inbound limit
// (MaxInboundProducts).
type InboundProductsBody struct {
	Products []ProductInput `json:"products" doc:"At most 1000 products (413 above), upserted by SKU with the rules of POST /api/v1/products/bulk."`
	SchemaID *string        `json:"schema_id,omitempty" format:"uuid" doc:"A catalogue schema of the organisation: each product's attrs are coerced to its declared types."`
}

// InboundCustomersBody documents the body of an upsert_customers endpoint,
// with the inbound limit (MaxInboundCustomers).
type InboundCustomersBody struct {
	Customers []CustomerInput `json:"customers" doc:"At most 500 customers (413 above), matched and upserted as by POST /api/v1/customers."`
}

// ---- each action's parse

func parseUpsertProducts(body []byte) (ProductsBody, error) {
	return DecodeProductsBody(body, MaxInboundProducts)
}

func parseUpsertCustomers(body []byte) (UpsertCustomersBody, error) {
	b, err := DecodeCustomersBody(body, MaxInboundCustomers)
	if err != nil {
		return b, err
	}
	return b, NormalizeCustomers(b.Customers)
}

func parseCreateRequest(body []byte) (CreateRequestBody, error) {
	var b CreateRequestBody
	if err := strictJSON(body, &b); err != nil {
		return b, err
	}
	r := NewRequest{Text: b.Text, Title: b.Title}
	if err := r.Normalize(); err != nil {
		return b, err
	}
	b.Text, b.Title = r.Text, r.Title
	if b.Customer != nil {
		if err := noNUL("customer", &b.Customer.Company, b.Customer.Email); err != nil {
			return b, err
		}
		if b.Customer.Email != nil && !strings.Contains(*b.Customer.Email, "@") {
			return b, Errorf(EINVALID, "customer.email %s is not an email address", quoted(*b.Customer.Email))
		}
	}
	b.ExternalRef = trimmedOrNil(b.ExternalRef)
	return b, refs(b.ExternalRef)
}

func parseERPOrderStatus(body []byte) (ERPOrderStatusBody, error) {
	var b ERPOrderStatusBody
	if err := strictJSON(body, &b); err != nil {
		return b, err
	}
	b.OrderRef, b.QuoteRef, b.TrackingURL = trimmedOrNil(b.OrderRef), trimmedOrNil(b.QuoteRef), trimmedOrNil(b.TrackingURL)
	switch {
	case b.OrderRef == nil && b.QuoteRef == nil:
		return b, Errorf(EINVALID, "order_ref or quote_ref is required")
	case strings.TrimSpace(b.Status) == "":
		return b, Errorf(EINVALID, "status is required")
	}
	if err := CheckTrackingURL(b.TrackingURL); err != nil {
		return b, err
	}
	return b, refs(b.OrderRef, b.QuoteRef, &b.Status)
}

func parseOrderInvoice(body []byte) (OrderInvoiceBody, error) {
	var b OrderInvoiceBody
	if err := strictJSON(body, &b); err != nil {
		return b, err
	}
	b.OrderRef, b.QuoteRef = trimmedOrNil(b.OrderRef), trimmedOrNil(b.QuoteRef)
	b.InvoiceRef = strings.TrimSpace(b.InvoiceRef)
	switch {
	case b.OrderRef == nil && b.QuoteRef == nil:
		return b, Errorf(EINVALID, "order_ref or quote_ref is required")
	case b.InvoiceRef == "":
		return b, Errorf(EINVALID, "invoice_ref is required")
	case b.AmountMinor != nil && *b.AmountMinor < 0:
		return b, Errorf(EINVALID, "amount_minor must be zero or more")
	}
	return b, refs(b.OrderRef, b.QuoteRef, &b.InvoiceRef, b.InvoiceStatus, b.Currency)
}

func parsePOAck(body []byte) (POAckBody, error) {
	var b POAckBody
	if err := strictJSON(body, &b); err != nil {
		return b, err
	}
	b.PONumber = strings.TrimSpace(b.PONumber)
	b.SupplierRef = trimmedOrNil(b.SupplierRef)
	if b.PONumber == "" {
		return b, Errorf(EINVALID, "po_number is required")
	}
	for i := range b.Lines {
		d, err := ParseDate(b.Lines[i].ExpectedDate)
		if err != nil {
			return b, Errorf(EINVALID, "lines[%d].expected_date: %s", i, ErrorMessage(err))
		}
		b.Lines[i].Date = d
	}
	return b, refs(&b.PONumber, b.SupplierRef)
}

func parseSupplierInvoice(body []byte) (SupplierInvoiceBody, error) {
	var b SupplierInvoiceBody
	if err := strictJSON(body, &b); err != nil {
		return b, err
	}
	b.PONumber, b.InvoiceRef = strings.TrimSpace(b.PONumber), strings.TrimSpace(b.InvoiceRef)
	switch {
	case b.PONumber == "":
		return b, Errorf(EINVALID, "po_number is required")
	case b.InvoiceRef == "":
		return b, Errorf(EINVALID, "invoice_ref is required")
	case b.AmountMinor != nil && *b.AmountMinor < 0:
		return b, Errorf(EINVALID, "amount_minor must be zero or more")
	}
	q, err := ParseInvoicedQty(b.InvoicedQty)
	if err != nil {
		return b, err
	}
	b.Qty = q
	return b, refs(&b.PONumber, &b.InvoiceRef, b.Currency)
}

func parseDeliveryStatus(body []byte) (DeliveryStatusBody, error) {
	var b DeliveryStatusBody
	if err := strictJSON(body, &b); err != nil {
		return b, err
	}
	b.DeliveryRef, b.ConsignmentRef, b.OrderRef = trimmedOrNil(b.DeliveryRef), trimmedOrNil(b.ConsignmentRef), trimmedOrNil(b.OrderRef)
	b.TrackingURL = trimmedOrNil(b.TrackingURL)
	switch {
	case b.DeliveryRef == nil && b.ConsignmentRef == nil && b.OrderRef == nil:
		return b, Errorf(EINVALID, "delivery_ref, consignment_ref or order_ref is required")
	case strings.TrimSpace(b.Status) == "":
		return b, Errorf(EINVALID, "status is required")
	}
	if err := CheckTrackingURL(b.TrackingURL); err != nil {
		return b, err
	}
	return b, refs(b.DeliveryRef, b.ConsignmentRef, b.OrderRef, &b.Status)
}
