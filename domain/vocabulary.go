package domain

import (
	"slices"
	"sort"
	"strings"
)

// ProductStatus is the lifecycle status of a catalogue product.
type ProductStatus string

// Product statuses; active is the default.
const (
	ProductActive   ProductStatus = "active"
	ProductDraft    ProductStatus = "draft"
	ProductArchived ProductStatus = "archived"
)

// ProductStatuses lists the product statuses.
var ProductStatuses = []ProductStatus{ProductActive, ProductDraft, ProductArchived}

// LineType is the kind of a quote or order line.
type LineType string

// Line types. Note lines carry qty 0 and amount 0.
const (
	LineProduct LineType = "product"
	LineService LineType = "service"
	LineFreight LineType = "freight"
	LineNote    LineType = "note"
)

// LineTypes lists the line types.
var LineTypes = []LineType{LineProduct, LineService, LineFreight, LineNote}

// MessageRole is the author role of a request message.
type MessageRole string

// Message roles.
const (
	RoleUser      MessageRole = "user"
	RoleAssistant MessageRole = "assistant"
	RoleSystem    MessageRole = "system"
)

// MessageRoles lists the message roles.
var MessageRoles = []MessageRole{RoleUser, RoleAssistant, RoleSystem}

// UserRole is a person's role in an organisation.
type UserRole string

// User roles. Owners and admins may create inbound endpoints.
const (
	UserOwner  UserRole = "owner"
	UserAdmin  UserRole = "admin"
	UserMember UserRole = "member"
)

// UserRoles lists the user roles.
var UserRoles = []UserRole{UserOwner, UserAdmin, UserMember}

// CanManageEndpoints reports whether the role may create inbound endpoints.
func (r UserRole) CanManageEndpoints() bool { return r == UserOwner || r == UserAdmin }

// Addon is an optional product that gates some routes.
type Addon string

// Add-ons: Stock gates /stock/*, Route gates /deliveries*, Source gates
// /suppliers* and /purchase-orders*.
const (
	AddonStock  Addon = "stock"
	AddonRoute  Addon = "route"
	AddonSource Addon = "source"
)

// Addons lists the add-ons.
var Addons = []Addon{AddonStock, AddonRoute, AddonSource}

// Scope is a permission carried by an API key.
type Scope string

// Scopes, one per route family and direction.
const (
	ScopeProductsRead       Scope = "products:read"
	ScopeProductsWrite      Scope = "products:write"
	ScopeQuotesRead         Scope = "quotes:read"
	ScopeOrdersRead         Scope = "orders:read"
	ScopeStockRead          Scope = "stock:read"
	ScopeStockWrite         Scope = "stock:write"
	ScopeDeliveriesRead     Scope = "deliveries:read"
	ScopeSuppliersRead      Scope = "suppliers:read"
	ScopePurchaseOrdersRead Scope = "purchase_orders:read"
	ScopeCustomersRead      Scope = "customers:read"
	ScopeCustomersWrite     Scope = "customers:write"
	ScopeRequestsRead       Scope = "requests:read"
	ScopeRequestsWrite      Scope = "requests:write"
	// The management API (docs/design.md#the-management-api).
	ScopeInboundRead   Scope = "inbound:read"
	ScopeInboundWrite  Scope = "inbound:write"
	ScopeInboundReplay Scope = "inbound:replay"
	ScopeWebhooksRead  Scope = "webhooks:read"
	ScopeWebhooksWrite Scope = "webhooks:write"
	ScopeEventsRead    Scope = "events:read"
)

// AllScopes lists every scope: the REST API's, in the order its routes are
// documented, then the management API's.
var AllScopes = []Scope{
	ScopeProductsRead, ScopeProductsWrite, ScopeQuotesRead, ScopeOrdersRead,
	ScopeStockRead, ScopeStockWrite, ScopeDeliveriesRead, ScopeSuppliersRead,
	ScopePurchaseOrdersRead, ScopeCustomersRead, ScopeCustomersWrite,
	ScopeRequestsRead, ScopeRequestsWrite,
	ScopeInboundRead, ScopeInboundWrite, ScopeInboundReplay, ScopeWebhooksRead, ScopeWebhooksWrite, ScopeEventsRead,
}

// ParseScopes reads a comma-separated scope list, or "all". Duplicates are
// dropped and the result is sorted; an unknown scope is EINVALID.
func ParseScopes(s string) ([]Scope, error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return slices.Clone(AllScopes), nil
	}
	var out []Scope
	for part := range strings.SplitSeq(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if sc == "" {
			continue
		}
		if !slices.Contains(AllScopes, sc) {
			return nil, Errorf(EINVALID, "unknown scope %q (known: %s, or all)", sc, JoinValues(AllScopes))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, Errorf(EINVALID, "at least one scope is required (or all)")
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// JoinValues lists the values of an enumeration for a message: "a, b, c".
func JoinValues[S ~string](values []S) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}

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
