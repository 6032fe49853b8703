package db

import (
	"fmt"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

func (s *seeder) suppliers() error {
	for i, sp := range s.f.Suppliers {
		id := NewID()
		_, err := s.tx.Exec(s.ctx, `
			INSERT INTO suppliers (id, org_id, name, email, phone, currency, payment_terms, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, s.org.ID, sp.Name, sp.Email, sp.Phone, sp.Currency, sp.PaymentTerms, at(sp.CreatedAt, s.now))
		if err := created(err, "suppliers", i, fmt.Sprintf("supplier %q", sp.Name)); err != nil {
			return err
		}
		for _, ct := range sp.Contacts {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO supplier_contacts (id, org_id, supplier_id, name, email, phone, is_primary)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, NewID(), s.org.ID, id, ct.Name, ct.Email, ct.Phone, ct.IsPrimary); err != nil {
				return err
			}
		}
		s.remember("supplier", sp.Name, id)
		s.res.Suppliers++
	}
	return nil
}

func (s *seeder) purchaseOrders() error {
	for i, po := range s.f.PurchaseOrders {
		supplier, err := s.reference("purchase_orders", i, "supplier", po.Supplier, `SELECT id FROM suppliers WHERE org_id = $1 AND name = $2`)
		if err != nil {
			return err
		}
		currency := po.Currency
		if currency == "" {
			if err := s.tx.QueryRow(s.ctx, `SELECT currency FROM suppliers WHERE org_id = $1 AND id = $2`, s.org.ID, supplier).Scan(&currency); err != nil {
				return err
			}
		}
		id := NewID()
		var expected *time.Time
		for _, l := range po.Lines {
			if l.ExpectedDate != nil && (expected == nil || l.ExpectedDate.After(*expected)) {
				expected = &l.ExpectedDate.Time
			}
		}
		_, err = s.tx.Exec(s.ctx, `
			INSERT INTO purchase_orders (id, org_id, number, status, supplier_id, currency, total_minor, expected_date, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
			id, s.org.ID, po.Number, po.Status, supplier, currency, po.TotalMinor, expected, at(po.CreatedAt, s.now))
		if err := created(err, "purchase_orders", i, fmt.Sprintf("purchase order %q", po.Number)); err != nil {
			return err
		}
		for _, l := range po.Lines {
			var date *time.Time
			if l.ExpectedDate != nil {
				date = &l.ExpectedDate.Time
			}
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO purchase_order_lines (org_id, po_id, position, sku, description, qty, uom, unit_price_minor, expected_date)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				s.org.ID, id, l.Position, l.SKU, l.Description, l.Qty, l.UOM, l.UnitPriceMinor, date); err != nil {
				return err
			}
		}
		for _, r := range po.Receipts {
			rid := NewID()
			if _, err := s.tx.Exec(s.ctx, `INSERT INTO po_receipts (id, org_id, po_id, received_at) VALUES ($1, $2, $3, $4)`,
				rid, s.org.ID, id, r.ReceivedAt.Time); err != nil {
				return err
			}
			for _, rl := range r.Lines {
				if _, err := s.tx.Exec(s.ctx, `
					INSERT INTO po_receipt_lines (org_id, receipt_id, po_id, position, qty) VALUES ($1, $2, $3, $4, $5)`,
					s.org.ID, rid, id, rl.Position, rl.Qty); err != nil {
					return err
				}
			}
			s.res.Receipts++
		}
		s.remember("purchase order", po.Number, id)
		s.waitable(domain.WaitPurchaseOrder, &po.Number)
		if len(po.Receipts) > 0 {
			s.received = append(s.received, id)
		}
		s.res.PurchaseOrders++
	}
	return nil
}

// goodsReceipts records goods against purchase orders and moves each order
// by the state machine: to received when every line is now received in
// full (through partially_received), else to partially_received.
func (s *seeder) goodsReceipts() error {
	for i, g := range s.f.GoodsReceipts {
		po, err := s.reference("goods_receipts", i, "purchase order", g.PONumber, `SELECT id FROM purchase_orders WHERE org_id = $1 AND number = $2`)
		if err != nil {
			return err
		}
		rid := NewID()
		if _, err := s.tx.Exec(s.ctx, `INSERT INTO po_receipts (id, org_id, po_id, received_at) VALUES ($1, $2, $3, $4)`,
			rid, s.org.ID, po, g.ReceivedAt.Time); err != nil {
			return err
		}
		for _, l := range g.Lines {
			_, err := s.tx.Exec(s.ctx, `INSERT INTO po_receipt_lines (org_id, receipt_id, po_id, position, qty) VALUES ($1, $2, $3, $4, $5)`,
				s.org.ID, rid, po, l.Position, l.Qty)
			if pe := pgError(err); pe != nil && pe.Code == codeForeignKey {
				return seedErr("goods_receipts", i, "purchase order %q has no line %d", g.PONumber, l.Position)
			}
			if err != nil {
				return err
			}
		}
		var status domain.PurchaseOrderStatus
		var complete bool
		if err := s.tx.QueryRow(s.ctx, `
			SELECT p.status, bool_and(coalesce((SELECT sum(rl.qty) FROM po_receipt_lines rl
			                                    WHERE rl.org_id = l.org_id AND rl.po_id = l.po_id AND rl.position = l.position), 0) >= l.qty)
			FROM purchase_orders p JOIN purchase_order_lines l ON l.org_id = p.org_id AND l.po_id = p.id
			WHERE p.org_id = $1 AND p.id = $2 GROUP BY p.status`, s.org.ID, po).Scan(&status, &complete); err != nil {
			return err
		}
		path := []domain.PurchaseOrderStatus{domain.POPartiallyReceived}
		if complete {
			path = append(path, domain.POReceived)
		}
		for _, to := range path {
			changed, err := domain.PurchaseOrderMachine.Move(status, to)
			if err != nil {
				return seedErr("goods_receipts", i, "purchase order %q: %s", g.PONumber, domain.ErrorMessage(err))
			}
			if changed {
				status = to
			}
		}
		if _, err := s.tx.Exec(s.ctx, `UPDATE purchase_orders SET status = $3, updated_at = now() WHERE org_id = $1 AND id = $2`,
			s.org.ID, po, status); err != nil {
			return err
		}
		s.received = append(s.received, po)
		s.res.GoodsReceipts++
	}
	return nil
}
