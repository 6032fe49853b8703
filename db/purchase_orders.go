package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// PurchaseOrderFilter narrows a purchase order list.
type PurchaseOrderFilter struct {
	Status     domain.PurchaseOrderStatus
	SupplierID *uuid.UUID
}

// purchaseOrderRecords reads a purchase order's row for the purchase order
// list and a purchase order's detail.
var purchaseOrderRecords = records[domain.PurchaseOrder]{
	table: "purchase_orders", alias: "po",
	columns: `po.id, po.number, po.status, po.supplier_id, po.currency, po.total_minor, po.supplier_ref,
	po.expected_date, po.created_at, po.updated_at`,
	fields: func(p *domain.PurchaseOrder) []any {
		return []any{&p.ID, &p.Number, &p.Status, &p.SupplierID, &p.Currency, &p.TotalMinor, &p.SupplierRef, &p.ExpectedDate,
			&p.CreatedAt, &p.UpdatedAt}
	},
}

// ListPurchaseOrders lists the organisation's purchase orders, newest first.
func (d *DB) ListPurchaseOrders(ctx context.Context, orgID uuid.UUID, f PurchaseOrderFilter, p Page) ([]domain.PurchaseOrder, error) {
	c := newConds()
	c.add("po.org_id = ?", orgID)
	c.addIf(f.Status != "", "po.status = ?", f.Status)
	c.addIf(f.SupplierID != nil, "po.supplier_id = ?", f.SupplierID)
	return purchaseOrderRecords.list(ctx, d.pool, c, p)
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
	err := d.detail(ctx, "purchase order", purchaseOrderRecords.into(&po.PurchaseOrder),
		[]string{
			purchaseOrderRecords.byID(""),
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

// poRef is a purchase order as an inbound post finds it.
type poRef struct {
	id          uuid.UUID
	number      string
	status      domain.PurchaseOrderStatus
	currency    string
	supplierRef *string
}

// findPO finds a purchase order by number. When there is none yet, it
// returns nil and the post's parked answer, which names the number the post
// waits for.
func (a *actor) findPO(number string) (*poRef, domain.InboundResult, error) {
	spelt, err := a.spelling("purchase order", &number, poSpellings)
	if err != nil {
		return nil, domain.InboundResult{}, err
	}
	var p poRef
	err = a.tx.QueryRow(a.ctx, `SELECT id, number, status, currency, supplier_ref FROM purchase_orders
		WHERE org_id = $1 AND number = $2 FOR UPDATE`, a.org, *spelt).Scan(&p.id, &p.number, &p.status, &p.currency, &p.supplierRef)
	if errors.Is(err, pgx.ErrNoRows) {
		park, err := parked(domain.Describe("purchase order", &number), domain.WaitKey(domain.WaitPurchaseOrder, number))
		return nil, park, err
	}
	if err != nil {
		return nil, domain.InboundResult{}, err
	}
	return &p, domain.InboundResult{}, nil
}

// PurchaseOrderAck carries out a purchase_order_ack post (domain.ActionApplier).
func (a *actor) PurchaseOrderAck(b domain.POAckBody) (domain.InboundResult, error) {
	po, park, err := a.findPO(b.PONumber)
	if err != nil || po == nil {
		return park, err
	}
	if _, err := domain.PurchaseOrderMachine.Move(po.status, domain.POAcknowledged); err != nil {
		return domain.InboundResult{}, err
	}
	var changes []domain.Change
	ref := func(field string, from, to any) {
		changes = append(changes, domain.Change{Entity: "purchase_order", ID: po.id.String(), Ref: po.number, Field: field, From: from, To: to})
	}
	if po.status != domain.POAcknowledged {
		ref("status", po.status, domain.POAcknowledged)
	}
	if b.SupplierRef != nil && (po.supplierRef == nil || *po.supplierRef != *b.SupplierRef) {
		ref("supplier_ref", po.supplierRef, *b.SupplierRef)
	}
	for _, l := range b.Lines {
		var positions []int
		rows, err := a.tx.Query(a.ctx, `
			UPDATE purchase_order_lines SET expected_date = $4
			WHERE org_id = $1 AND po_id = $2 AND ($3::int IS NULL OR position = $3) AND expected_date IS DISTINCT FROM $4
			RETURNING position`, a.org, po.id, l.Position, l.Date.Time)
		if err != nil {
			return domain.InboundResult{}, err
		}
		if positions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
			return domain.InboundResult{}, err
		}
		if l.Position != nil && len(positions) == 0 {
			var exists bool
			if err := a.tx.QueryRow(a.ctx, `SELECT EXISTS (SELECT 1 FROM purchase_order_lines WHERE org_id = $1 AND po_id = $2 AND position = $3)`,
				a.org, po.id, *l.Position).Scan(&exists); err != nil {
				return domain.InboundResult{}, err
			}
			if !exists {
				return domain.InboundResult{}, domain.Errorf(domain.EUNPROCESSABLE, "purchase order %s has no line %d", po.number, *l.Position)
			}
		}
		for _, p := range positions {
			ref(fmt.Sprintf("lines[%d].expected_date", p), nil, l.Date)
		}
	}
	if len(changes) == 0 {
		return applied(nil, domain.PurchaseOrderAckAnswer{PurchaseOrder: domain.AckedPurchaseOrder{ID: po.id, Number: po.number, Status: po.status}}), nil
	}
	if _, err := a.tx.Exec(a.ctx, `
		UPDATE purchase_orders SET status = 'acknowledged', supplier_ref = coalesce($3, supplier_ref),
		       acknowledged_at = now(), updated_at = now(),
		       expected_date = coalesce((SELECT max(expected_date) FROM purchase_order_lines WHERE org_id = $1 AND po_id = $2), expected_date)
		WHERE org_id = $1 AND id = $2`, a.org, po.id, b.SupplierRef); err != nil {
		return domain.InboundResult{}, err
	}
	if err := emit(a.ctx, a.tx, a.org, domain.PurchaseOrderAcked.New(domain.PurchaseOrderAcknowledgedData{
		ID: po.id, Number: po.number, SupplierRef: b.SupplierRef, Changes: changes,
	})); err != nil {
		return domain.InboundResult{}, err
	}
	return applied(changes, domain.PurchaseOrderAckAnswer{PurchaseOrder: domain.AckedPurchaseOrder{ID: po.id, Number: po.number, Status: domain.POAcknowledged}}), nil
}

// SupplierInvoice carries out a supplier_invoice post (domain.ActionApplier).
func (a *actor) SupplierInvoice(b domain.SupplierInvoiceBody) (domain.InboundResult, error) {
	po, park, err := a.findPO(b.PONumber)
	if err != nil || po == nil {
		return park, err
	}
	if err := b.FitsPurchaseOrder(po.number, po.status, po.currency); err != nil {
		return domain.InboundResult{}, err
	}
	invoiceRef, err := a.spelling("invoice", &b.InvoiceRef, supplierInvoiceSpellings, po.id)
	if err != nil {
		return domain.InboundResult{}, err
	}
	b.InvoiceRef = *invoiceRef
	var id uuid.UUID
	var amount *int64
	err = a.tx.QueryRow(a.ctx, `SELECT id, amount_minor FROM supplier_invoices WHERE org_id = $1 AND po_id = $2 AND invoice_ref = $3`,
		a.org, po.id, b.InvoiceRef).Scan(&id, &amount)
	switch {
	case err == nil:
		if err := b.SameAmountAs(amount); err != nil {
			return domain.InboundResult{}, err
		}
		res := applied(nil, domain.SupplierInvoiceAnswer{InvoiceRef: b.InvoiceRef})
		res.InvoiceID, res.POID, res.InvoiceRef = &id, &po.id, b.InvoiceRef
		return res, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return domain.InboundResult{}, err
	}
	id = NewID()
	var qty any
	if b.InvoicedQty != nil {
		qty = string(b.InvoicedQty)
	}
	if _, err := a.tx.Exec(a.ctx, `
		INSERT INTO supplier_invoices (id, org_id, po_id, invoice_ref, amount_minor, currency, invoiced_qty, match_status, receipt_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'awaiting_receipt', $8)`,
		id, a.org, po.id, b.InvoiceRef, b.AmountMinor, po.currency, qty, a.source); err != nil {
		return domain.InboundResult{}, err
	}
	c := domain.Change{Entity: "supplier_invoice", ID: id.String(), Ref: b.InvoiceRef, Field: "match_status", To: domain.MatchAwaitingReceipt}
	res := applied([]domain.Change{c}, domain.SupplierInvoiceAnswer{InvoiceRef: b.InvoiceRef, PurchaseOrder: &domain.InvoicedPurchaseOrder{ID: po.id, Number: po.number}})
	res.InvoiceID, res.POID, res.InvoiceRef = &id, &po.id, b.InvoiceRef
	return res, nil
}
