package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// readRoutes are the read-only resources, each a list and a read by id
// (readRoute); each one's query input and list body are declared beside its
// entry below, and its queries are in db (db/orders.go for orders, ...).
var readRoutes = []readResource{quotesRoute, ordersRoute, stockLinesRoute, deliveriesRoute, suppliersRoute,
	purchaseOrdersRoute, customersRoute, requestsRoute}

func (s *Server) registerReads() {
	for _, r := range readRoutes {
		r.register(s)
	}
}

// ListQuotesInput is the query of GET /api/v1/quotes.
type ListQuotesInput struct {
	Status string `query:"status" enum:"draft,sent,accepted,declined,expired" doc:"Only quotes in this state."`
	SmallPage
	Since
}

// ListQuotesOutputBody is a page of quotes, newest first.
type ListQuotesOutputBody struct {
	Quotes     []domain.Quote `json:"quotes" doc:"Quotes, newest first; with updated_since, oldest change first."`
	NextCursor *string        `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var quotesRoute = readRoute[ListQuotesInput, db.QuoteFilter, domain.Quote, ListQuotesOutputBody, domain.QuoteDetail]{
	path: "/api/v1/quotes", tag: "Quotes", scope: domain.ScopeQuotesRead,
	list: huma.Operation{OperationID: "list-quotes", Summary: "List quotes", Description: "The organisation's quotes, newest first."},
	get: huma.Operation{OperationID: "get-quote", Summary: "Read a quote", Description: "A quote with its subtotal, discount, VAT " +
		"and lines in position order. Use each line's amount_minor as its value: a seller can pin a line total."},
	name: "quotes", what: "quote",
	filter: func(in *ListQuotesInput) (db.QuoteFilter, []string, error) {
		return db.QuoteFilter{Status: domain.QuoteStatus(in.Status)}, []string{"status", in.Status}, nil
	},
	query:   (*db.DB).ListQuotes,
	newest:  func(q domain.Quote) (domain.Timestamp, uuid.UUID) { return q.CreatedAt, q.ID },
	changed: func(q domain.Quote) (domain.Timestamp, uuid.UUID) { return q.UpdatedAt, q.ID },
	body:    func(q []domain.Quote, next *string) ListQuotesOutputBody { return ListQuotesOutputBody{q, next} },
	read:    (*db.DB).Quote,
}

// ListOrdersInput is the query of GET /api/v1/orders.
type ListOrdersInput struct {
	Status string `query:"status" enum:"confirmed,in_progress,fulfilled,cancelled" doc:"Only orders in this state."`
	SmallPage
	Since
}

// ListOrdersOutputBody is a page of orders, newest first.
type ListOrdersOutputBody struct {
	Orders     []domain.Order `json:"orders" doc:"Orders, newest first; with updated_since, oldest change first."`
	NextCursor *string        `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var ordersRoute = readRoute[ListOrdersInput, db.OrderFilter, domain.Order, ListOrdersOutputBody, domain.OrderDetail]{
	path: "/api/v1/orders", tag: "Orders", scope: domain.ScopeOrdersRead,
	list: huma.Operation{OperationID: "list-orders", Summary: "List orders",
		Description: "The organisation's orders, newest first. Orders are read-only here."},
	get: huma.Operation{OperationID: "get-order", Summary: "Read an order", Description: "An order with its subtotal, VAT, lines, " +
		"tracking address and the invoice references recorded against it (the service records invoices; it never issues one)."},
	name: "orders", what: "order",
	filter: func(in *ListOrdersInput) (db.OrderFilter, []string, error) {
		return db.OrderFilter{Status: domain.OrderStatus(in.Status)}, []string{"status", in.Status}, nil
	},
	query:   (*db.DB).ListOrders,
	newest:  func(o domain.Order) (domain.Timestamp, uuid.UUID) { return o.CreatedAt, o.ID },
	changed: func(o domain.Order) (domain.Timestamp, uuid.UUID) { return o.UpdatedAt, o.ID },
	body:    func(o []domain.Order, next *string) ListOrdersOutputBody { return ListOrdersOutputBody{o, next} },
	read:    (*db.DB).Order,
}

// ListStockLinesInput is the query of GET /api/v1/stock/lines.
type ListStockLinesInput struct {
	ProductID  string `query:"product_id" format:"uuid" doc:"Only the stock of this product."`
	LocationID string `query:"location_id" format:"uuid" doc:"Only the stock at this location."`
	SKU        string `query:"sku" maxLength:"64" doc:"Only the stock of the product with this SKU."`
	SmallPage
	Since
}

// ListStockLinesOutputBody is a page of stock lines, newest first.
type ListStockLinesOutputBody struct {
	StockLines []domain.StockLine `json:"stock_lines" doc:"Stock lines, newest first; with updated_since, oldest change first."`
	NextCursor *string            `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var stockLinesRoute = readRoute[ListStockLinesInput, db.StockLineFilter, domain.StockLine, ListStockLinesOutputBody, domain.StockLineDetail]{
	path: "/api/v1/stock/lines", tag: "Stock", scope: domain.ScopeStockRead, addon: domain.AddonStock,
	list: huma.Operation{OperationID: "list-stock-lines", Summary: "List stock lines",
		Description: "The stock of each product at each location, newest line first."},
	get: huma.Operation{OperationID: "get-stock-line", Summary: "Read a stock line",
		Description: "A stock line with its newest movements (at most 100), including transfers into it."},
	name: "stock_lines", what: "stock line",
	filter: func(in *ListStockLinesInput) (db.StockLineFilter, []string, error) {
		bound := []string{"product_id", in.ProductID, "location_id", in.LocationID, "sku", in.SKU}
		product, err := optionalID("product_id", in.ProductID)
		if err != nil {
			return db.StockLineFilter{}, bound, err
		}
		location, err := optionalID("location_id", in.LocationID)
		return db.StockLineFilter{ProductID: product, LocationID: location, SKU: in.SKU}, bound, err
	},
	query:   (*db.DB).ListStockLines,
	newest:  func(l domain.StockLine) (domain.Timestamp, uuid.UUID) { return l.CreatedAt, l.ID },
	changed: func(l domain.StockLine) (domain.Timestamp, uuid.UUID) { return l.UpdatedAt, l.ID },
	body: func(l []domain.StockLine, next *string) ListStockLinesOutputBody {
		return ListStockLinesOutputBody{l, next}
	},
	read: (*db.DB).StockLine,
}

// ListDeliveriesInput is the query of GET /api/v1/deliveries.
type ListDeliveriesInput struct {
	Status  string `query:"status" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled" doc:"Only deliveries in this state."`
	OrderID string `query:"order_id" format:"uuid" doc:"Only deliveries of this order."`
	SmallPage
	Since
}

// ListDeliveriesOutputBody is a page of deliveries, newest first.
type ListDeliveriesOutputBody struct {
	Deliveries []domain.Delivery `json:"deliveries" doc:"Deliveries, newest first; with updated_since, oldest change first."`
	NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var deliveriesRoute = readRoute[ListDeliveriesInput, db.DeliveryFilter, domain.Delivery, ListDeliveriesOutputBody, domain.DeliveryDetail]{
	path: "/api/v1/deliveries", tag: "Deliveries", scope: domain.ScopeDeliveriesRead, addon: domain.AddonRoute,
	list: huma.Operation{OperationID: "list-deliveries", Summary: "List deliveries", Description: "The organisation's deliveries, newest first."},
	get:  huma.Operation{OperationID: "get-delivery", Summary: "Read a delivery", Description: "A delivery with its lines and packages."},
	name: "deliveries", what: "delivery",
	filter: func(in *ListDeliveriesInput) (db.DeliveryFilter, []string, error) {
		order, err := optionalID("order_id", in.OrderID)
		return db.DeliveryFilter{Status: domain.DeliveryStatus(in.Status), OrderID: order},
			[]string{"status", in.Status, "order_id", in.OrderID}, err
	},
	query:   (*db.DB).ListDeliveries,
	newest:  func(d domain.Delivery) (domain.Timestamp, uuid.UUID) { return d.CreatedAt, d.ID },
	changed: func(d domain.Delivery) (domain.Timestamp, uuid.UUID) { return d.UpdatedAt, d.ID },
	body: func(d []domain.Delivery, next *string) ListDeliveriesOutputBody {
		return ListDeliveriesOutputBody{d, next}
	},
	read: (*db.DB).Delivery,
}

// ListSuppliersInput is the query of GET /api/v1/suppliers.
type ListSuppliersInput struct {
	Search string `query:"search" maxLength:"200" doc:"Matches name and email (case-insensitive substring)."`
	SmallPage
	Since
}

// ListSuppliersOutputBody is a page of suppliers, newest first.
type ListSuppliersOutputBody struct {
	Suppliers  []domain.Supplier `json:"suppliers" doc:"Suppliers, newest first; with updated_since, oldest change first."`
	NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var suppliersRoute = readRoute[ListSuppliersInput, db.SupplierFilter, domain.Supplier, ListSuppliersOutputBody, domain.SupplierDetail]{
	path: "/api/v1/suppliers", tag: "Suppliers", scope: domain.ScopeSuppliersRead, addon: domain.AddonSource,
	list: huma.Operation{OperationID: "list-suppliers", Summary: "List suppliers", Description: "The organisation's suppliers, newest first."},
	get: huma.Operation{OperationID: "get-supplier", Summary: "Read a supplier",
		Description: "A supplier with its contacts, the primary contact first."},
	name: "suppliers", what: "supplier",
	filter: func(in *ListSuppliersInput) (db.SupplierFilter, []string, error) {
		return db.SupplierFilter{Search: in.Search}, []string{"search", in.Search}, nil
	},
	query:   (*db.DB).ListSuppliers,
	newest:  func(s domain.Supplier) (domain.Timestamp, uuid.UUID) { return s.CreatedAt, s.ID },
	changed: func(s domain.Supplier) (domain.Timestamp, uuid.UUID) { return s.UpdatedAt, s.ID },
	body: func(s []domain.Supplier, next *string) ListSuppliersOutputBody {
		return ListSuppliersOutputBody{s, next}
	},
	read: (*db.DB).Supplier,
}

// ListPurchaseOrdersInput is the query of GET /api/v1/purchase-orders.
type ListPurchaseOrdersInput struct {
	Status     string `query:"status" enum:"draft,sent,acknowledged,partially_received,received,closed,cancelled" doc:"Only purchase orders in this state."`
	SupplierID string `query:"supplier_id" format:"uuid" doc:"Only purchase orders placed with this supplier."`
	SmallPage
	Since
}

// ListPurchaseOrdersOutputBody is a page of purchase orders, newest first.
type ListPurchaseOrdersOutputBody struct {
	PurchaseOrders []domain.PurchaseOrder `json:"purchase_orders" doc:"Purchase orders, newest first; with updated_since, oldest change first."`
	NextCursor     *string                `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var purchaseOrdersRoute = readRoute[ListPurchaseOrdersInput, db.PurchaseOrderFilter, domain.PurchaseOrder, ListPurchaseOrdersOutputBody,
	domain.PurchaseOrderDetail]{
	path: "/api/v1/purchase-orders", tag: "Purchase orders", scope: domain.ScopePurchaseOrdersRead, addon: domain.AddonSource,
	list: huma.Operation{OperationID: "list-purchase-orders", Summary: "List purchase orders",
		Description: "The organisation's purchase orders, newest first."},
	get: huma.Operation{OperationID: "get-purchase-order", Summary: "Read a purchase order", Description: "A purchase order with its " +
		"lines (and the quantity received of each), its goods receipts, and the supplier invoices matched against it with their variances."},
	name: "purchase_orders", what: "purchase order",
	filter: func(in *ListPurchaseOrdersInput) (db.PurchaseOrderFilter, []string, error) {
		supplier, err := optionalID("supplier_id", in.SupplierID)
		return db.PurchaseOrderFilter{Status: domain.PurchaseOrderStatus(in.Status), SupplierID: supplier},
			[]string{"status", in.Status, "supplier_id", in.SupplierID}, err
	},
	query:   (*db.DB).ListPurchaseOrders,
	newest:  func(po domain.PurchaseOrder) (domain.Timestamp, uuid.UUID) { return po.CreatedAt, po.ID },
	changed: func(po domain.PurchaseOrder) (domain.Timestamp, uuid.UUID) { return po.UpdatedAt, po.ID },
	body: func(po []domain.PurchaseOrder, next *string) ListPurchaseOrdersOutputBody {
		return ListPurchaseOrdersOutputBody{po, next}
	},
	read: (*db.DB).PurchaseOrder,
}

// ListCustomersInput is the query of GET /api/v1/customers.
type ListCustomersInput struct {
	Search string `query:"search" maxLength:"200" doc:"Matches company and email domain (case-insensitive substring)."`
	LargePage
	Since
}

// ListCustomersOutputBody is a page of customers, newest first.
type ListCustomersOutputBody struct {
	Customers  []domain.Customer `json:"customers" doc:"Customers, newest first; with updated_since, oldest change first."`
	NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var customersRoute = readRoute[ListCustomersInput, db.CustomerFilter, domain.Customer, ListCustomersOutputBody, domain.CustomerDetail]{
	path: "/api/v1/customers", tag: "Customers", scope: domain.ScopeCustomersRead,
	list: huma.Operation{OperationID: "list-customers", Summary: "List customers", Description: "The organisation's customers, newest first."},
	get: huma.Operation{OperationID: "get-customer", Summary: "Read a customer",
		Description: "A customer with its contacts, the primary contact first."},
	name: "customers", what: "customer",
	filter: func(in *ListCustomersInput) (db.CustomerFilter, []string, error) {
		return db.CustomerFilter{Search: in.Search}, []string{"search", in.Search}, nil
	},
	query:   (*db.DB).ListCustomers,
	newest:  func(c domain.Customer) (domain.Timestamp, uuid.UUID) { return c.CreatedAt, c.ID },
	changed: func(c domain.Customer) (domain.Timestamp, uuid.UUID) { return c.UpdatedAt, c.ID },
	body: func(c []domain.Customer, next *string) ListCustomersOutputBody {
		return ListCustomersOutputBody{c, next}
	},
	read: (*db.DB).Customer,
}

// ListRequestsInput is the query of GET /api/v1/requests.
type ListRequestsInput struct{ SmallPage }

// ListRequestsOutputBody is a page of request threads, newest first.
type ListRequestsOutputBody struct {
	Requests   []domain.RequestThread `json:"requests" doc:"Request threads, newest first."`
	NextCursor *string                `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
}

var requestsRoute = readRoute[ListRequestsInput, struct{}, domain.RequestThread, ListRequestsOutputBody, domain.RequestDetail]{
	path: "/api/v1/requests", tag: "Requests", scope: domain.ScopeRequestsRead,
	list: huma.Operation{OperationID: "list-requests", Summary: "List requests",
		Description: "The organisation's request threads (enquiries, RFQs), newest first."},
	get: huma.Operation{OperationID: "get-request", Summary: "Read a request", Description: "A request thread with its first 500 " +
		"messages, oldest first; message blocks are returned as they were stored."},
	name: "requests", what: "request",
	query: func(d *db.DB, ctx context.Context, org uuid.UUID, _ struct{}, p db.Page) ([]domain.RequestThread, error) {
		return d.ListRequests(ctx, org, p)
	},
	newest: func(r domain.RequestThread) (domain.Timestamp, uuid.UUID) { return r.CreatedAt, r.ID },
	body: func(r []domain.RequestThread, next *string) ListRequestsOutputBody {
		return ListRequestsOutputBody{r, next}
	},
	read: (*db.DB).Request,
}
