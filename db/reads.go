package db

import (
	"context"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// detail runs a record's query and its children's queries in one round
// trip. The first query must return the record (none: not found); fill
// scans each further query's rows in order.
func (d *DB) detail(ctx context.Context, what string, first func(pgx.Row) error, queries []string, args []any, fill ...func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	for _, q := range queries {
		b.Queue(q, args...)
	}
	br := d.pool.SendBatch(ctx, b)
	defer br.Close()
	if err := first(br.QueryRow()); err != nil {
		return notFound(err, what)
	}
	for _, f := range fill {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if err := f(rows); err != nil {
			return err
		}
	}
	return br.Close()
}

// collect scans every row into *dst (an empty slice, never nil).
func collect[T any](dst *[]T, scan func(pgx.Row) (T, error)) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
		*dst = out
		return err
	}
}

// ----- quotes

// QuoteFilter narrows a quote list.
type QuoteFilter struct{ Status domain.QuoteStatus }

const quoteColumns = `q.id, q.number, q.status, q.currency, q.total_minor, q.customer_id, q.valid_until, q.sent_at, q.created_at`

func scanQuote(r pgx.Row) (domain.Quote, error) {
	var q domain.Quote
	err := r.Scan(&q.ID, &q.Number, &q.Status, &q.Currency, &q.TotalMinor, &q.CustomerID, &q.ValidUntil, &q.SentAt, &q.CreatedAt)
	return q, err
}

// ListQuotes lists the organisation's quotes, newest first.
func (d *DB) ListQuotes(ctx context.Context, orgID uuid.UUID, f QuoteFilter, p Page) ([]domain.Quote, error) {
	c := newConds()
	c.add("q.org_id = ?", orgID)
	c.addIf(f.Status != "", "q.status = ?", f.Status)
	return listNewest(ctx, d.pool, `SELECT `+quoteColumns+` FROM quotes q`, "q", c, p, scanQuote)
}

// Quote returns one of the organisation's quotes with its lines.
func (d *DB) Quote(ctx context.Context, orgID, id uuid.UUID) (domain.QuoteDetail, error) {
	var q domain.QuoteDetail
	err := d.detail(ctx, "quote",
		func(r pgx.Row) error {
			return r.Scan(&q.ID, &q.Number, &q.Status, &q.Currency, &q.TotalMinor, &q.CustomerID, &q.ValidUntil, &q.SentAt,
				&q.CreatedAt, &q.SubtotalMinor, &q.DiscountMinor, &q.VATMinor)
		},
		[]string{
			`SELECT ` + quoteColumns + `, q.subtotal_minor, q.discount_minor, q.vat_minor FROM quotes q WHERE q.org_id = $1 AND q.id = $2`,
			`SELECT position, line_type, description, qty, uom, unit_price_minor, discount_pct, lead_time_days, amount_minor
			 FROM quote_lines WHERE org_id = $1 AND quote_id = $2 ORDER BY position`,
		}, []any{orgID, id},
		collect(&q.Lines, func(r pgx.Row) (domain.QuoteLine, error) {
			var l domain.QuoteLine
			err := r.Scan(&l.Position, &l.LineType, &l.Description, &l.Qty, &l.UOM, &l.UnitPriceMinor, &l.DiscountPct, &l.LeadTimeDays, &l.AmountMinor)
			return l, err
		}))
	return q, err
}

// ----- orders

// OrderFilter narrows an order list.
type OrderFilter struct{ Status domain.OrderStatus }

const orderColumns = `o.id, o.number, o.status, o.currency, o.total_minor, o.customer_id, o.customer_po_ref, o.created_at`

func scanOrder(r pgx.Row) (domain.Order, error) {
	var o domain.Order
	err := r.Scan(&o.ID, &o.Number, &o.Status, &o.Currency, &o.TotalMinor, &o.CustomerID, &o.CustomerPORef, &o.CreatedAt)
	return o, err
}

// ListOrders lists the organisation's orders, newest first.
func (d *DB) ListOrders(ctx context.Context, orgID uuid.UUID, f OrderFilter, p Page) ([]domain.Order, error) {
	c := newConds()
	c.add("o.org_id = ?", orgID)
	c.addIf(f.Status != "", "o.status = ?", f.Status)
	return listNewest(ctx, d.pool, `SELECT `+orderColumns+` FROM orders o`, "o", c, p, scanOrder)
}

// Order returns one of the organisation's orders with its lines and the
// invoice references recorded against it.
func (d *DB) Order(ctx context.Context, orgID, id uuid.UUID) (domain.OrderDetail, error) {
	var o domain.OrderDetail
	err := d.detail(ctx, "order",
		func(r pgx.Row) error {
			return r.Scan(&o.ID, &o.Number, &o.Status, &o.Currency, &o.TotalMinor, &o.CustomerID, &o.CustomerPORef, &o.CreatedAt,
				&o.SubtotalMinor, &o.VATMinor, &o.TrackingURL)
		},
		[]string{
			`SELECT ` + orderColumns + `, o.subtotal_minor, o.vat_minor, o.tracking_url FROM orders o WHERE o.org_id = $1 AND o.id = $2`,
			`SELECT position, line_type, description, attrs_snapshot, qty, uom, unit_price_minor
			 FROM order_lines WHERE org_id = $1 AND order_id = $2 ORDER BY position`,
			`SELECT invoice_ref, invoice_status, amount_minor, currency, recorded_at
			 FROM order_invoices WHERE org_id = $1 AND order_id = $2 ORDER BY recorded_at, invoice_ref`,
		}, []any{orgID, id},
		collect(&o.Lines, func(r pgx.Row) (domain.OrderLine, error) {
			var l domain.OrderLine
			err := r.Scan(&l.Position, &l.LineType, &l.Description, &l.AttrsSnapshot, &l.Qty, &l.UOM, &l.UnitPriceMinor)
			return l, err
		}),
		collect(&o.Invoices, func(r pgx.Row) (domain.OrderInvoice, error) {
			var i domain.OrderInvoice
			err := r.Scan(&i.InvoiceRef, &i.InvoiceStatus, &i.AmountMinor, &i.Currency, &i.RecordedAt)
			return i, err
		}))
	return o, err
}

// ----- customers

// CustomerFilter narrows a customer list: Search matches company and email
// domain (case-insensitive substring).
type CustomerFilter struct{ Search string }

const customerColumns = `c.id, c.company, c.website, c.email_domain, c.vat_number, c.payment_terms, c.currency, c.external_refs, c.created_at`

func scanCustomer(r pgx.Row) (domain.Customer, error) {
	var c domain.Customer
	err := r.Scan(&c.ID, &c.Company, &c.Website, &c.EmailDomain, &c.VATNumber, &c.PaymentTerms, &c.Currency, &c.ExternalRefs, &c.CreatedAt)
	return c, err
}

// ListCustomers lists the organisation's customers, newest first.
func (d *DB) ListCustomers(ctx context.Context, orgID uuid.UUID, f CustomerFilter, p Page) ([]domain.Customer, error) {
	c := newConds()
	c.add("c.org_id = ?", orgID)
	c.addIf(f.Search != "", "(c.company || chr(31) || coalesce(c.email_domain, '')) ILIKE ?", searchPattern(f.Search))
	return listNewest(ctx, d.pool, `SELECT `+customerColumns+` FROM customers c`, "c", c, p, scanCustomer)
}

func scanContact(r pgx.Row) (domain.Contact, error) {
	var c domain.Contact
	err := r.Scan(&c.ID, &c.Name, &c.Email, &c.Phone, &c.IsPrimary)
	return c, err
}

// Customer returns one of the organisation's customers with its contacts,
// the primary one first.
func (d *DB) Customer(ctx context.Context, orgID, id uuid.UUID) (domain.CustomerDetail, error) {
	var c domain.CustomerDetail
	err := d.detail(ctx, "customer",
		func(r pgx.Row) error {
			return r.Scan(&c.ID, &c.Company, &c.Website, &c.EmailDomain, &c.VATNumber, &c.PaymentTerms, &c.Currency, &c.ExternalRefs, &c.CreatedAt)
		},
		[]string{
			`SELECT ` + customerColumns + ` FROM customers c WHERE c.org_id = $1 AND c.id = $2`,
			`SELECT id, name, email, phone, is_primary FROM customer_contacts
			 WHERE org_id = $1 AND customer_id = $2 ORDER BY is_primary DESC, created_at, id`,
		}, []any{orgID, id},
		collect(&c.Contacts, scanContact))
	return c, err
}

// ----- requests

const requestColumns = `r.id, r.title, r.status, r.last_message_at, r.created_at`

func scanRequest(r pgx.Row) (domain.RequestThread, error) {
	var t domain.RequestThread
	err := r.Scan(&t.ID, &t.Title, &t.Status, &t.LastMessageAt, &t.CreatedAt)
	return t, err
}

// ListRequests lists the organisation's request threads, newest first.
func (d *DB) ListRequests(ctx context.Context, orgID uuid.UUID, p Page) ([]domain.RequestThread, error) {
	c := newConds()
	c.add("r.org_id = ?", orgID)
	return listNewest(ctx, d.pool, `SELECT `+requestColumns+` FROM request_threads r`, "r", c, p, scanRequest)
}

// Request returns one of the organisation's request threads with its
// messages, oldest first.
func (d *DB) Request(ctx context.Context, orgID, id uuid.UUID) (domain.RequestDetail, error) {
	var t domain.RequestDetail
	err := d.detail(ctx, "request",
		func(r pgx.Row) error { return r.Scan(&t.ID, &t.Title, &t.Status, &t.LastMessageAt, &t.CreatedAt) },
		[]string{
			`SELECT ` + requestColumns + ` FROM request_threads r WHERE r.org_id = $1 AND r.id = $2`,
			`SELECT id, role, blocks, created_at FROM request_messages
			 WHERE org_id = $1 AND thread_id = $2 ORDER BY created_at, id`,
		}, []any{orgID, id},
		collect(&t.Messages, func(r pgx.Row) (domain.RequestMessage, error) {
			var m domain.RequestMessage
			err := r.Scan(&m.ID, &m.Role, &m.Blocks, &m.CreatedAt)
			return m, err
		}))
	return t, err
}

// ----- stock

// StockLocations lists every stock location, the default first, then by code.
func (d *DB) StockLocations(ctx context.Context, orgID uuid.UUID) ([]domain.StockLocation, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT id, code, name, is_default, created_at FROM stock_locations
		WHERE org_id = $1 ORDER BY is_default DESC, code`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.StockLocation, error) {
		var l domain.StockLocation
		err := r.Scan(&l.ID, &l.Code, &l.Name, &l.IsDefault, &l.CreatedAt)
		return l, err
	})
}

// StockLineFilter narrows a stock line list.
type StockLineFilter struct {
	ProductID  *uuid.UUID
	LocationID *uuid.UUID
	SKU        string
}

const stockLineSelect = `SELECT s.id, s.product_id, p.sku, s.location_id, s.qty_on_hand, s.unit_cost_minor, s.currency,
	s.created_at, s.updated_at FROM stock_lines s JOIN products p ON p.org_id = s.org_id AND p.id = s.product_id`

func scanStockLine(r pgx.Row) (domain.StockLine, error) {
	var s domain.StockLine
	err := r.Scan(&s.ID, &s.ProductID, &s.SKU, &s.LocationID, &s.QtyOnHand, &s.UnitCostMinor, &s.Currency, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// ListStockLines lists the organisation's stock lines, newest first.
func (d *DB) ListStockLines(ctx context.Context, orgID uuid.UUID, f StockLineFilter, p Page) ([]domain.StockLine, error) {
	c := newConds()
	c.add("s.org_id = ?", orgID)
	c.addIf(f.ProductID != nil, "s.product_id = ?", f.ProductID)
	c.addIf(f.LocationID != nil, "s.location_id = ?", f.LocationID)
	c.addIf(f.SKU != "", "p.sku = ?", f.SKU)
	return listNewest(ctx, d.pool, stockLineSelect, "s", c, p, scanStockLine)
}

// movementsPerLine is how many of a stock line's newest movements its
// detail carries.
const movementsPerLine = 100

const movementColumns = `m.id, m.line_id, m.product_id, m.location_id, m.to_location_id, m.kind, m.qty, m.unit_cost_minor,
	m.balance_after, m.idempotency_key, m.reference, m.created_at`

func scanMovement(r pgx.Row) (domain.StockMovement, error) {
	var m domain.StockMovement
	err := r.Scan(&m.ID, &m.LineID, &m.ProductID, &m.LocationID, &m.ToLocationID, &m.Kind, &m.Qty, &m.UnitCostMinor,
		&m.BalanceAfter, &m.IdempotencyKey, &m.Reference, &m.CreatedAt)
	return m, err
}

// StockLine returns one of the organisation's stock lines with its newest
// movements (at most 100), including transfers into it.
func (d *DB) StockLine(ctx context.Context, orgID, id uuid.UUID) (domain.StockLineDetail, error) {
	var s domain.StockLineDetail
	err := d.detail(ctx, "stock line",
		func(r pgx.Row) error {
			return r.Scan(&s.ID, &s.ProductID, &s.SKU, &s.LocationID, &s.QtyOnHand, &s.UnitCostMinor, &s.Currency, &s.CreatedAt, &s.UpdatedAt)
		},
		[]string{
			stockLineSelect + ` WHERE s.org_id = $1 AND s.id = $2`,
			`SELECT ` + movementColumns + ` FROM stock_movements m
			 WHERE m.org_id = $1 AND (m.line_id = $2 OR m.to_line_id = $2)
			 ORDER BY m.created_at DESC, m.id DESC LIMIT ` + strconv.Itoa(movementsPerLine),
		}, []any{orgID, id},
		collect(&s.Movements, scanMovement))
	return s, err
}

// MovementFilter narrows a stock movement list. LineID matches movements
// out of and (transfers) into the line.
type MovementFilter struct {
	LineID    *uuid.UUID
	ProductID *uuid.UUID
	Kind      domain.MovementKind
}

// ListMovements lists the organisation's stock movements, newest first.
func (d *DB) ListMovements(ctx context.Context, orgID uuid.UUID, f MovementFilter, p Page) ([]domain.StockMovement, error) {
	c := newConds()
	c.add("m.org_id = ?", orgID)
	c.addIf(f.LineID != nil, "(m.line_id = ? OR m.to_line_id = ?)", f.LineID)
	c.addIf(f.ProductID != nil, "m.product_id = ?", f.ProductID)
	c.addIf(f.Kind != "", "m.kind = ?", f.Kind)
	return listNewest(ctx, d.pool, `SELECT `+movementColumns+` FROM stock_movements m`, "m", c, p, scanMovement)
}

// ----- deliveries

// DeliveryFilter narrows a delivery list.
type DeliveryFilter struct {
	Status  domain.DeliveryStatus
	OrderID *uuid.UUID
}

const deliveryColumns = `d.id, d.number, d.status, d.order_id, d.customer_id, d.carrier, d.consignment_ref, d.tracking_url,
	d.ship_to, d.dispatched_at, d.delivered_at, d.created_at`

func scanDelivery(r pgx.Row) (domain.Delivery, error) {
	var d domain.Delivery
	err := r.Scan(&d.ID, &d.Number, &d.Status, &d.OrderID, &d.CustomerID, &d.Carrier, &d.ConsignmentRef, &d.TrackingURL,
		&d.ShipTo, &d.DispatchedAt, &d.DeliveredAt, &d.CreatedAt)
	return d, err
}

// ListDeliveries lists the organisation's deliveries, newest first.
func (d *DB) ListDeliveries(ctx context.Context, orgID uuid.UUID, f DeliveryFilter, p Page) ([]domain.Delivery, error) {
	c := newConds()
	c.add("d.org_id = ?", orgID)
	c.addIf(f.Status != "", "d.status = ?", f.Status)
	c.addIf(f.OrderID != nil, "d.order_id = ?", f.OrderID)
	return listNewest(ctx, d.pool, `SELECT `+deliveryColumns+` FROM deliveries d`, "d", c, p, scanDelivery)
}

// Delivery returns one of the organisation's deliveries with its lines and
// packages.
func (d *DB) Delivery(ctx context.Context, orgID, id uuid.UUID) (domain.DeliveryDetail, error) {
	var dl domain.DeliveryDetail
	err := d.detail(ctx, "delivery",
		func(r pgx.Row) error {
			return r.Scan(&dl.ID, &dl.Number, &dl.Status, &dl.OrderID, &dl.CustomerID, &dl.Carrier, &dl.ConsignmentRef, &dl.TrackingURL,
				&dl.ShipTo, &dl.DispatchedAt, &dl.DeliveredAt, &dl.CreatedAt)
		},
		[]string{
			`SELECT ` + deliveryColumns + ` FROM deliveries d WHERE d.org_id = $1 AND d.id = $2`,
			`SELECT position, description, qty, order_line_position FROM delivery_lines
			 WHERE org_id = $1 AND delivery_id = $2 ORDER BY position`,
			`SELECT id, reference, weight_grams, tracking_url FROM delivery_packages
			 WHERE org_id = $1 AND delivery_id = $2 ORDER BY created_at, id`,
		}, []any{orgID, id},
		collect(&dl.Lines, func(r pgx.Row) (domain.DeliveryLine, error) {
			var l domain.DeliveryLine
			err := r.Scan(&l.Position, &l.Description, &l.Qty, &l.OrderLinePosition)
			return l, err
		}),
		collect(&dl.Packages, func(r pgx.Row) (domain.Package, error) {
			var p domain.Package
			err := r.Scan(&p.ID, &p.Reference, &p.WeightGrams, &p.TrackingURL)
			return p, err
		}))
	return dl, err
}

// ----- suppliers

// SupplierFilter narrows a supplier list: Search matches name and email
// (case-insensitive substring).
type SupplierFilter struct{ Search string }

const supplierColumns = `s.id, s.name, s.email, s.phone, s.currency, s.payment_terms, s.external_refs, s.created_at`

func scanSupplier(r pgx.Row) (domain.Supplier, error) {
	var s domain.Supplier
	err := r.Scan(&s.ID, &s.Name, &s.Email, &s.Phone, &s.Currency, &s.PaymentTerms, &s.ExternalRefs, &s.CreatedAt)
	return s, err
}

// ListSuppliers lists the organisation's suppliers, newest first.
func (d *DB) ListSuppliers(ctx context.Context, orgID uuid.UUID, f SupplierFilter, p Page) ([]domain.Supplier, error) {
	c := newConds()
	c.add("s.org_id = ?", orgID)
	c.addIf(f.Search != "", "(s.name || chr(31) || coalesce(s.email, '')) ILIKE ?", searchPattern(f.Search))
	return listNewest(ctx, d.pool, `SELECT `+supplierColumns+` FROM suppliers s`, "s", c, p, scanSupplier)
}

// Supplier returns one of the organisation's suppliers with its contacts.
func (d *DB) Supplier(ctx context.Context, orgID, id uuid.UUID) (domain.SupplierDetail, error) {
	var s domain.SupplierDetail
	err := d.detail(ctx, "supplier",
		func(r pgx.Row) error {
			return r.Scan(&s.ID, &s.Name, &s.Email, &s.Phone, &s.Currency, &s.PaymentTerms, &s.ExternalRefs, &s.CreatedAt)
		},
		[]string{
			`SELECT ` + supplierColumns + ` FROM suppliers s WHERE s.org_id = $1 AND s.id = $2`,
			`SELECT id, name, email, phone, is_primary FROM supplier_contacts
			 WHERE org_id = $1 AND supplier_id = $2 ORDER BY is_primary DESC, created_at, id`,
		}, []any{orgID, id},
		collect(&s.Contacts, scanContact))
	return s, err
}

// ----- purchase orders

// PurchaseOrderFilter narrows a purchase order list.
type PurchaseOrderFilter struct {
	Status     domain.PurchaseOrderStatus
	SupplierID *uuid.UUID
}

const purchaseOrderColumns = `po.id, po.number, po.status, po.supplier_id, po.currency, po.total_minor, po.supplier_ref,
	po.expected_date, po.created_at`

func scanPurchaseOrder(r pgx.Row) (domain.PurchaseOrder, error) {
	var p domain.PurchaseOrder
	err := r.Scan(&p.ID, &p.Number, &p.Status, &p.SupplierID, &p.Currency, &p.TotalMinor, &p.SupplierRef, &p.ExpectedDate, &p.CreatedAt)
	return p, err
}

// ListPurchaseOrders lists the organisation's purchase orders, newest first.
func (d *DB) ListPurchaseOrders(ctx context.Context, orgID uuid.UUID, f PurchaseOrderFilter, p Page) ([]domain.PurchaseOrder, error) {
	c := newConds()
	c.add("po.org_id = ?", orgID)
	c.addIf(f.Status != "", "po.status = ?", f.Status)
	c.addIf(f.SupplierID != nil, "po.supplier_id = ?", f.SupplierID)
	return listNewest(ctx, d.pool, `SELECT `+purchaseOrderColumns+` FROM purchase_orders po`, "po", c, p, scanPurchaseOrder)
}

// PurchaseOrder returns one of the organisation's purchase orders with its
// lines (and the quantity received of each), its receipts and the supplier
// invoices matched against it.
func (d *DB) PurchaseOrder(ctx context.Context, orgID, id uuid.UUID) (domain.PurchaseOrderDetail, error) {
	var po domain.PurchaseOrderDetail
	var receiptLines []struct {
		receipt uuid.UUID
		line    domain.POReceiptLine
	}
	var variances []struct {
		invoice uuid.UUID
		v       domain.Variance
	}
	var invoiceIDs []uuid.UUID
	err := d.detail(ctx, "purchase order",
		func(r pgx.Row) error {
			return r.Scan(&po.ID, &po.Number, &po.Status, &po.SupplierID, &po.Currency, &po.TotalMinor, &po.SupplierRef,
				&po.ExpectedDate, &po.CreatedAt)
		},
		[]string{
			`SELECT ` + purchaseOrderColumns + ` FROM purchase_orders po WHERE po.org_id = $1 AND po.id = $2`,
			`SELECT l.position, l.sku, l.description, l.qty, l.uom, l.unit_price_minor, l.expected_date,
			        coalesce((SELECT sum(rl.qty) FROM po_receipt_lines rl
			                  WHERE rl.org_id = l.org_id AND rl.po_id = l.po_id AND rl.position = l.position), 0)
			 FROM purchase_order_lines l WHERE l.org_id = $1 AND l.po_id = $2 ORDER BY l.position`,
			`SELECT id, received_at FROM po_receipts WHERE org_id = $1 AND po_id = $2 ORDER BY received_at, id`,
			`SELECT receipt_id, position, qty FROM po_receipt_lines WHERE org_id = $1 AND po_id = $2 ORDER BY position`,
			`SELECT id, invoice_ref, amount_minor, currency, match_status FROM supplier_invoices
			 WHERE org_id = $1 AND po_id = $2 ORDER BY created_at, id`,
			`SELECT v.invoice_id, v.kind, v.position, v.expected, v.actual FROM supplier_invoice_variances v
			 JOIN supplier_invoices i ON i.org_id = v.org_id AND i.id = v.invoice_id
			 WHERE v.org_id = $1 AND i.po_id = $2 ORDER BY v.created_at, v.id`,
		}, []any{orgID, id},
		collect(&po.Lines, func(r pgx.Row) (domain.PurchaseOrderLine, error) {
			var l domain.PurchaseOrderLine
			err := r.Scan(&l.Position, &l.SKU, &l.Description, &l.Qty, &l.UOM, &l.UnitPriceMinor, &l.ExpectedDate, &l.QtyReceived)
			return l, err
		}),
		collect(&po.Receipts, func(r pgx.Row) (domain.POReceipt, error) {
			rc := domain.POReceipt{Lines: []domain.POReceiptLine{}}
			err := r.Scan(&rc.ID, &rc.ReceivedAt)
			return rc, err
		}),
		func(rows pgx.Rows) error {
			for rows.Next() {
				var x struct {
					receipt uuid.UUID
					line    domain.POReceiptLine
				}
				if err := rows.Scan(&x.receipt, &x.line.Position, &x.line.Qty); err != nil {
					return err
				}
				receiptLines = append(receiptLines, x)
			}
			return rows.Err()
		},
		func(rows pgx.Rows) error {
			po.Invoices = []domain.SupplierInvoice{}
			for rows.Next() {
				inv := domain.SupplierInvoice{Variances: []domain.Variance{}}
				var id uuid.UUID
				if err := rows.Scan(&id, &inv.InvoiceRef, &inv.AmountMinor, &inv.Currency, &inv.MatchStatus); err != nil {
					return err
				}
				invoiceIDs = append(invoiceIDs, id)
				po.Invoices = append(po.Invoices, inv)
			}
			return rows.Err()
		},
		func(rows pgx.Rows) error {
			for rows.Next() {
				var x struct {
					invoice uuid.UUID
					v       domain.Variance
				}
				if err := rows.Scan(&x.invoice, &x.v.Kind, &x.v.Position, &x.v.Expected, &x.v.Actual); err != nil {
					return err
				}
				variances = append(variances, x)
			}
			return rows.Err()
		})
	for _, x := range receiptLines {
		for i := range po.Receipts {
			if po.Receipts[i].ID == x.receipt {
				po.Receipts[i].Lines = append(po.Receipts[i].Lines, x.line)
			}
		}
	}
	for _, x := range variances {
		for i, id := range invoiceIDs {
			if id == x.invoice {
				po.Invoices[i].Variances = append(po.Invoices[i].Variances, x.v)
			}
		}
	}
	return po, err
}
