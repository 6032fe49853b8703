package db

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// OrderFilter narrows an order list.
type OrderFilter struct{ Status domain.OrderStatus }

// orderRecords reads an order's row for the order list and an order's
// detail.
var orderRecords = records[domain.Order]{
	table: "orders", alias: "o",
	columns: `o.id, o.number, o.status, o.currency, o.total_minor, o.customer_id, o.customer_po_ref, o.created_at, o.updated_at`,
	fields: func(o *domain.Order) []any {
		return []any{&o.ID, &o.Number, &o.Status, &o.Currency, &o.TotalMinor, &o.CustomerID, &o.CustomerPORef, &o.CreatedAt, &o.UpdatedAt}
	},
}

// ListOrders lists the organisation's orders, newest first.
func (d *DB) ListOrders(ctx context.Context, orgID uuid.UUID, f OrderFilter, p Page) ([]domain.Order, error) {
	c := newConds()
	c.add("o.org_id = ?", orgID)
	c.addIf(f.Status != "", "o.status = ?", f.Status)
	return orderRecords.list(ctx, d.pool, c, p)
}

// Order returns one of the organisation's orders with its lines and the
// invoice references recorded against it.
func (d *DB) Order(ctx context.Context, orgID, id uuid.UUID) (domain.OrderDetail, error) {
	var o domain.OrderDetail
	err := d.detail(ctx, "order", orderRecords.into(&o.Order, &o.SubtotalMinor, &o.VATMinor, &o.TrackingURL),
		[]string{
			orderRecords.byID(`o.subtotal_minor, o.vat_minor, o.tracking_url`),
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

// orderRef is an order as an inbound post finds it.
type orderRef struct {
	id          uuid.UUID
	number      string
	status      domain.OrderStatus
	currency    string
	total       int64
	trackingURL *string
}

// findOrder matches an order by order_ref (its number or the customer's PO
// reference), else by quote_ref (the order made from that quote). When none
// matches yet, it returns nil and the post's parked answer, which names the
// references the post waits for.
func (a *actor) findOrder(orderRefText, quoteRefText *string) (*orderRef, domain.InboundResult, error) {
	orderSpelt, err := a.spelling("order", orderRefText, orderSpellings)
	if err != nil {
		return nil, domain.InboundResult{}, err
	}
	quoteSpelt := quoteRefText
	if orderRefText == nil {
		if quoteSpelt, err = a.spelling("quote", quoteRefText, quoteSpellings); err != nil {
			return nil, domain.InboundResult{}, err
		}
	}
	var o orderRef
	err = a.tx.QueryRow(a.ctx, `
		SELECT o.id, o.number, o.status, o.currency, o.total_minor, o.tracking_url FROM orders o
		WHERE o.org_id = $1 AND (
		      ($2::text IS NOT NULL AND (o.number = $2 OR o.customer_po_ref = $2))
		   OR ($2::text IS NULL AND $3::text IS NOT NULL AND o.quote_id = (SELECT id FROM quotes WHERE org_id = $1 AND number = $3)))
		ORDER BY (o.number = coalesce($2, '')) DESC, o.created_at DESC
		LIMIT 1
		FOR UPDATE`, a.org, orderSpelt, quoteSpelt).Scan(&o.id, &o.number, &o.status, &o.currency, &o.total, &o.trackingURL)
	if errors.Is(err, pgx.ErrNoRows) {
		// The query looks the quote up only without an order reference.
		keys := waitKey(domain.WaitOrder, orderRefText)
		if orderRefText == nil {
			keys = waitKey(domain.WaitQuote, quoteRefText)
		}
		park, err := parked(domain.Describe("order", orderRefText, quoteRefText), keys...)
		return nil, park, err
	}
	if err != nil {
		return nil, domain.InboundResult{}, err
	}
	return &o, domain.InboundResult{}, nil
}

// moveOrder moves an order and emits order.status_changed; it returns the
// change, or nil when the order already stands there.
func (a *actor) moveOrder(o *orderRef, to domain.OrderStatus, cause string) (*domain.Change, error) {
	changed, err := domain.OrderMachine.Move(o.status, to)
	if err != nil || !changed {
		return nil, err
	}
	if _, err := a.tx.Exec(a.ctx, `UPDATE orders SET status = $3, updated_at = now() WHERE org_id = $1 AND id = $2`, a.org, o.id, to); err != nil {
		return nil, err
	}
	c := domain.Change{Entity: "order", ID: o.id.String(), Ref: o.number, Field: "status", From: o.status, To: to}
	if err := emit(a.ctx, a.tx, a.org, domain.OrderStatusChanged.New(domain.OrderStatusChangedData{
		ID: o.id, Number: o.number, From: o.status, To: to, Cause: cause,
	})); err != nil {
		return nil, err
	}
	o.status = to
	return &c, nil
}

// ERPOrderStatus carries out a erp_order_status post (domain.ActionApplier).
func (a *actor) ERPOrderStatus(b domain.ERPOrderStatusBody) (domain.InboundResult, error) {
	to, err := domain.ParseERPOrderStatus(b.Status)
	if err != nil {
		return domain.InboundResult{}, err
	}
	o, park, err := a.findOrder(b.OrderRef, b.QuoteRef)
	if err != nil || o == nil {
		return park, err
	}
	var changes []domain.Change
	c, err := a.moveOrder(o, to, "erp")
	if err != nil {
		return domain.InboundResult{}, err
	}
	if c != nil {
		changes = append(changes, *c)
	}
	if b.TrackingURL != nil && (o.trackingURL == nil || *o.trackingURL != *b.TrackingURL) {
		if _, err := a.tx.Exec(a.ctx, `UPDATE orders SET tracking_url = $3, updated_at = now() WHERE org_id = $1 AND id = $2`,
			a.org, o.id, *b.TrackingURL); err != nil {
			return domain.InboundResult{}, err
		}
		changes = append(changes, domain.Change{Entity: "order", ID: o.id.String(), Ref: o.number, Field: "tracking_url", From: o.trackingURL, To: *b.TrackingURL})
	}
	return applied(changes, domain.ERPOrderStatusAnswer{Order: domain.OrderMoved{ID: o.id, Number: o.number, Status: o.status}}), nil
}

// OrderInvoice carries out a order_invoice post (domain.ActionApplier).
func (a *actor) OrderInvoice(b domain.OrderInvoiceBody) (domain.InboundResult, error) {
	status := domain.InvoiceIssued
	if b.InvoiceStatus != nil {
		var err error
		if status, err = domain.ParseInvoiceStatus(*b.InvoiceStatus); err != nil {
			return domain.InboundResult{}, err
		}
	}
	o, park, err := a.findOrder(b.OrderRef, b.QuoteRef)
	if err != nil || o == nil {
		return park, err
	}
	if err := b.FitsOrder(o.number, o.currency, o.total); err != nil {
		return domain.InboundResult{}, err
	}
	invoiceRef, err := a.spelling("invoice", &b.InvoiceRef, orderInvoiceSpellings, o.id)
	if err != nil {
		return domain.InboundResult{}, err
	}
	b.InvoiceRef = *invoiceRef
	var prev *domain.InvoiceStatus
	err = a.tx.QueryRow(a.ctx, `SELECT invoice_status FROM order_invoices WHERE org_id = $1 AND order_id = $2 AND invoice_ref = $3 FOR UPDATE`,
		a.org, o.id, b.InvoiceRef).Scan(&prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return domain.InboundResult{}, err
	}
	if prev != nil && *prev == status {
		return applied(nil, domain.OrderInvoiceAnswer{InvoiceRef: b.InvoiceRef, InvoiceStatus: status}), nil
	}
	if _, err := a.tx.Exec(a.ctx, `
		INSERT INTO order_invoices (id, org_id, order_id, invoice_ref, invoice_status, amount_minor, currency)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (org_id, order_id, invoice_ref) DO UPDATE SET
			invoice_status = excluded.invoice_status,
			amount_minor = coalesce(excluded.amount_minor, order_invoices.amount_minor),
			currency = coalesce(excluded.currency, order_invoices.currency),
			updated_at = now()`, NewID(), a.org, o.id, b.InvoiceRef, status, b.AmountMinor, b.Currency); err != nil {
		return domain.InboundResult{}, err
	}
	if err := emit(a.ctx, a.tx, a.org, domain.OrderInvoiceRecorded.New(domain.OrderInvoiceRecordedData{
		OrderID: o.id, OrderNumber: o.number, InvoiceRef: b.InvoiceRef, InvoiceStatus: status,
		AmountMinor: b.AmountMinor, Currency: b.Currency,
	})); err != nil {
		return domain.InboundResult{}, err
	}
	c := domain.Change{Entity: "order", ID: o.id.String(), Ref: o.number, Field: "invoice:" + b.InvoiceRef, From: prev, To: status}
	return applied([]domain.Change{c}, domain.OrderInvoiceAnswer{InvoiceRef: b.InvoiceRef, InvoiceStatus: status}), nil
}
