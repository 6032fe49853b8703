package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// SeedResult counts what a seed file created.
type SeedResult struct {
	Locations      int `json:"locations"`
	Customers      int `json:"customers"`
	Products       int `json:"products"`
	Quotes         int `json:"quotes"`
	Orders         int `json:"orders"`
	Suppliers      int `json:"suppliers"`
	PurchaseOrders int `json:"purchase_orders"`
	Receipts       int `json:"receipts"`
	Deliveries     int `json:"deliveries"`
	Stock          int `json:"stock"`
	GoodsReceipts  int `json:"goods_receipts"`
}

// Seed loads a validated seed file into an organisation in one transaction:
// either every record is written or none is. References (a quote's
// customer, an order's quote, a delivery's order, a purchase order's
// supplier, stock's product and location) resolve against the file first and
// then the organisation's existing records. A record whose natural key
// already exists, or a reference that resolves to nothing, rejects the file
// with its section and index.
func (d *DB) Seed(ctx context.Context, orgID uuid.UUID, f *domain.SeedFile) (SeedResult, error) {
	org, err := d.Organisation(ctx, orgID)
	if err != nil {
		return SeedResult{}, err
	}
	if err := f.Validate(org.Currency); err != nil {
		return SeedResult{}, err
	}
	var res SeedResult
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		s := &seeder{ctx: ctx, tx: tx, org: org, now: time.Now(), ids: map[string]uuid.UUID{}}
		steps := []func() error{s.locations, s.customers, s.products, s.quotes, s.orders, s.suppliers,
			s.purchaseOrders, s.deliveries, s.stock, s.goodsReceipts}
		s.f = f
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		res = s.res
		// Wake inbound posts parked waiting for records, and matches waiting
		// for goods receipts: this load may hold what they wait for.
		_, err := tx.Exec(ctx, `SELECT pg_notify('`+recordsChannel+`', $1::text)`, orgID)
		return err
	})
	return res, err
}

type seeder struct {
	ctx context.Context
	tx  pgx.Tx
	org domain.Organisation
	f   *domain.SeedFile
	now time.Time
	res SeedResult
	// ids caches natural key → id, keyed "kind\x00key".
	ids map[string]uuid.UUID
}

// seedErr names the record a write failed on.
func seedErr(section string, i int, format string, args ...any) error {
	return domain.Errorf(domain.EINVALID, "seed file rejected: %s[%d]: %s", section, i, fmt.Sprintf(format, args...))
}

// created reports a natural key collision as a seed error, and passes other
// errors through.
func created(err error, section string, i int, what string) error {
	if isUniqueViolation(err, "") {
		return seedErr(section, i, "%s already exists", what)
	}
	return err
}

func at(t *domain.Timestamp, fallback time.Time) time.Time {
	if t == nil {
		return fallback
	}
	return t.Time
}

// resolve finds the id of a record by natural key: one created from the file,
// else an existing one of the organisation (query must select id given
// org_id $1 and key $2; more than one match is ambiguous).
func (s *seeder) resolve(kind, key, query string) (uuid.UUID, bool, error) {
	if id, ok := s.ids[kind+"\x00"+key]; ok {
		return id, true, nil
	}
	rows, err := s.tx.Query(s.ctx, query, s.org.ID, key)
	if err != nil {
		return uuid.Nil, false, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return uuid.Nil, false, err
	}
	switch len(ids) {
	case 0:
		return uuid.Nil, false, nil
	case 1:
		s.ids[kind+"\x00"+key] = ids[0]
		return ids[0], true, nil
	}
	return uuid.Nil, false, fmt.Errorf("%d records match", len(ids))
}

func (s *seeder) remember(kind, key string, id uuid.UUID) { s.ids[kind+"\x00"+key] = id }

func (s *seeder) locations() error {
	for i, l := range s.f.Locations {
		if l.IsDefault {
			var exists bool
			if err := s.tx.QueryRow(s.ctx, `SELECT EXISTS (SELECT 1 FROM stock_locations WHERE org_id = $1 AND is_default)`, s.org.ID).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return seedErr("locations", i, "the organisation already has a default location")
			}
		}
		id := NewID()
		_, err := s.tx.Exec(s.ctx, `INSERT INTO stock_locations (id, org_id, code, name, is_default) VALUES ($1, $2, $3, $4, $5)`,
			id, s.org.ID, l.Code, l.Name, l.IsDefault)
		if err := created(err, "locations", i, fmt.Sprintf("location %q", l.Code)); err != nil {
			return err
		}
		s.remember("location", l.Code, id)
		s.res.Locations++
	}
	return nil
}

func (s *seeder) customers() error {
	for i, c := range s.f.Customers {
		if _, found, err := s.resolve("customer", c.Company, `SELECT id FROM customers WHERE org_id = $1 AND lower(company) = lower($2)`); err != nil || found {
			if err != nil {
				return seedErr("customers", i, "company %q: %v", c.Company, err)
			}
			return seedErr("customers", i, "customer %q already exists", c.Company)
		}
		id := NewID()
		_, err := s.tx.Exec(s.ctx, `
			INSERT INTO customers (id, org_id, company, website, email_domain, vat_number, payment_terms, currency, external_refs, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
			id, s.org.ID, c.Company, c.Website, c.EmailDomain, c.VATNumber, c.PaymentTerms, c.Currency, c.ExternalRefs, s.now)
		if err := created(err, "customers", i, "a customer with that external_id"); err != nil {
			return err
		}
		for _, ct := range c.Contacts {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO customer_contacts (id, org_id, customer_id, name, email, phone, is_primary)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, NewID(), s.org.ID, id, ct.Name, ct.Email, ct.Phone, ct.IsPrimary); err != nil {
				return created(err, "customers", i, "a contact with that email")
			}
		}
		s.remember("customer", c.Company, id)
		s.res.Customers++
	}
	return nil
}

func (s *seeder) customerID(section string, i int, company *string) (*uuid.UUID, error) {
	if company == nil {
		return nil, nil
	}
	id, found, err := s.resolve("customer", *company, `SELECT id FROM customers WHERE org_id = $1 AND lower(company) = lower($2)`)
	if err != nil {
		return nil, seedErr(section, i, "customer %q: %v", *company, err)
	}
	if !found {
		return nil, seedErr(section, i, "customer %q is neither in the file nor in the organisation", *company)
	}
	return &id, nil
}

func (s *seeder) products() error {
	for i, p := range s.f.Products {
		id := NewID()
		_, err := s.tx.Exec(s.ctx, `
			INSERT INTO products (id, org_id, sku, title, category, uom, price_minor, currency, stock_qty,
			                      lead_time_days, attrs, status, external_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			id, s.org.ID, p.SKU, p.Title, p.Category, p.UOM, p.PriceMinor, p.Currency, p.StockQty,
			p.LeadTimeDays, p.Attrs, p.Status, p.ExternalID)
		if err := created(err, "products", i, fmt.Sprintf("product %q", p.SKU)); err != nil {
			return err
		}
		s.remember("product", p.SKU, id)
		s.res.Products++
	}
	if len(s.f.Products) > 0 {
		var count int
		if err := s.tx.QueryRow(s.ctx, `SELECT count(*) FROM products WHERE org_id = $1`, s.org.ID).Scan(&count); err != nil {
			return err
		}
		if count > s.org.ProductCap {
			return domain.Errorf(domain.EPAYMENT, "seed file rejected: %d products would pass the plan's cap of %d", count, s.org.ProductCap)
		}
	}
	return nil
}

func (s *seeder) quotes() error {
	for i, q := range s.f.Quotes {
		customer, err := s.customerID("quotes", i, q.Customer)
		if err != nil {
			return err
		}
		id := NewID()
		vat := domain.DefaultVATPct
		if q.VATPct != nil {
			vat = *q.VATPct
		}
		var validUntil *time.Time
		if q.ValidUntil != nil {
			validUntil = &q.ValidUntil.Time
		}
		var sentAt *time.Time
		if q.SentAt != nil {
			sentAt = &q.SentAt.Time
		}
		createdAt := at(q.CreatedAt, s.now)
		_, err = s.tx.Exec(s.ctx, `
			INSERT INTO quotes (id, org_id, number, status, currency, customer_id, valid_until, sent_at, vat_pct,
			                    subtotal_minor, discount_minor, vat_minor, total_minor, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
			id, s.org.ID, q.Number, q.Status, q.Currency, customer, validUntil, sentAt, vat,
			q.Totals.SubtotalMinor, q.Totals.DiscountMinor, q.Totals.VATMinor, q.Totals.TotalMinor, createdAt)
		if err := created(err, "quotes", i, fmt.Sprintf("quote %q", q.Number)); err != nil {
			return err
		}
		for _, l := range q.Lines {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO quote_lines (org_id, quote_id, position, line_type, description, qty, uom, unit_price_minor,
				                         discount_pct, lead_time_days, amount_override_minor, amount_minor)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				s.org.ID, id, l.Position, l.LineType, l.Description, l.Qty, l.UOM, l.UnitPriceMinor,
				l.DiscountPct, l.LeadTimeDays, l.AmountOverrideMinor, l.AmountMinor); err != nil {
				return err
			}
		}
		s.remember("quote", q.Number, id)
		s.res.Quotes++
	}
	return nil
}

func (s *seeder) orders() error {
	for i, o := range s.f.Orders {
		customer, err := s.customerID("orders", i, o.Customer)
		if err != nil {
			return err
		}
		var quote *uuid.UUID
		if o.QuoteNumber != nil {
			id, found, err := s.resolve("quote", *o.QuoteNumber, `SELECT id FROM quotes WHERE org_id = $1 AND number = $2`)
			if err != nil {
				return err
			}
			if !found {
				return seedErr("orders", i, "quote %q is neither in the file nor in the organisation", *o.QuoteNumber)
			}
			quote = &id
		}
		id := NewID()
		vat := domain.DefaultVATPct
		if o.VATPct != nil {
			vat = *o.VATPct
		}
		_, err = s.tx.Exec(s.ctx, `
			INSERT INTO orders (id, org_id, number, status, currency, customer_id, customer_po_ref, quote_id, vat_pct,
			                    subtotal_minor, vat_minor, total_minor, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
			id, s.org.ID, o.Number, o.Status, o.Currency, customer, o.CustomerPORef, quote, vat,
			o.Totals.SubtotalMinor, o.Totals.VATMinor, o.Totals.TotalMinor, at(o.CreatedAt, s.now))
		if isUniqueViolation(err, "orders_one_per_quote") {
			return seedErr("orders", i, "quote %q already has an order", *o.QuoteNumber)
		}
		if err := created(err, "orders", i, fmt.Sprintf("order %q", o.Number)); err != nil {
			return err
		}
		for _, l := range o.Lines {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO order_lines (org_id, order_id, position, line_type, description, attrs_snapshot, qty, uom, unit_price_minor)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				s.org.ID, id, l.Position, l.LineType, l.Description, l.AttrsSnapshot, l.Qty, l.UOM, l.UnitPriceMinor); err != nil {
				return err
			}
		}
		s.remember("order", o.Number, id)
		s.res.Orders++
	}
	return nil
}

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
		supplier, found, err := s.resolve("supplier", po.Supplier, `SELECT id FROM suppliers WHERE org_id = $1 AND name = $2`)
		if err != nil {
			return err
		}
		if !found {
			return seedErr("purchase_orders", i, "supplier %q is neither in the file nor in the organisation", po.Supplier)
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
		s.res.PurchaseOrders++
	}
	return nil
}

func (s *seeder) deliveries() error {
	for i, dl := range s.f.Deliveries {
		var order, customer *uuid.UUID
		if dl.OrderNumber != nil {
			id, found, err := s.resolve("order", *dl.OrderNumber, `SELECT id FROM orders WHERE org_id = $1 AND number = $2`)
			if err != nil {
				return err
			}
			if !found {
				return seedErr("deliveries", i, "order %q is neither in the file nor in the organisation", *dl.OrderNumber)
			}
			order = &id
			if err := s.tx.QueryRow(s.ctx, `SELECT customer_id FROM orders WHERE org_id = $1 AND id = $2`, s.org.ID, id).Scan(&customer); err != nil {
				return err
			}
		}
		createdAt := at(dl.CreatedAt, s.now)
		var dispatchedAt, deliveredAt *time.Time
		if dl.Status.Shipped() {
			dispatchedAt = &createdAt
		}
		if dl.Status == domain.DeliveryDelivered {
			deliveredAt = &createdAt
		}
		id := NewID()
		_, err := s.tx.Exec(s.ctx, `
			INSERT INTO deliveries (id, org_id, number, status, order_id, customer_id, carrier, consignment_ref, tracking_url,
			                        ship_to, dispatched_at, delivered_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
			id, s.org.ID, dl.Number, dl.Status, order, customer, dl.Carrier, dl.ConsignmentRef, dl.TrackingURL,
			dl.ShipTo, dispatchedAt, deliveredAt, createdAt)
		if err := created(err, "deliveries", i, fmt.Sprintf("delivery %q", dl.Number)); err != nil {
			return err
		}
		for _, l := range dl.Lines {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO delivery_lines (org_id, delivery_id, position, description, qty, order_line_position)
				VALUES ($1, $2, $3, $4, $5, $6)`, s.org.ID, id, l.Position, l.Description, l.Qty, l.OrderLinePosition); err != nil {
				return err
			}
		}
		for _, p := range dl.Packages {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO delivery_packages (id, org_id, delivery_id, reference, weight_grams, tracking_url)
				VALUES ($1, $2, $3, $4, $5, $6)`, NewID(), s.org.ID, id, p.Reference, p.WeightGrams, p.TrackingURL); err != nil {
				return err
			}
		}
		s.remember("delivery", dl.Number, id)
		s.res.Deliveries++
	}
	return nil
}

// stock writes stock lines, each with an opening-balance adjustment so the
// movement ledger explains every balance.
func (s *seeder) stock() error {
	for i, st := range s.f.Stock {
		product, found, err := s.resolve("product", st.SKU, `SELECT id FROM products WHERE org_id = $1 AND sku = $2`)
		if err != nil {
			return err
		}
		if !found {
			return seedErr("stock", i, "product %q is neither in the file nor in the organisation", st.SKU)
		}
		var location uuid.UUID
		if st.Location == nil {
			location, err = ensureDefaultLocation(s.ctx, s.tx, s.org.ID)
			if err != nil {
				return err
			}
		} else {
			location, found, err = s.resolve("location", *st.Location, `SELECT id FROM stock_locations WHERE org_id = $1 AND code = $2`)
			if err != nil {
				return err
			}
			if !found {
				return seedErr("stock", i, "location %q is neither in the file nor in the organisation", *st.Location)
			}
		}
		line := NewID()
		_, err = s.tx.Exec(s.ctx, `
			INSERT INTO stock_lines (id, org_id, product_id, location_id, qty_on_hand, unit_cost_minor, currency)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, line, s.org.ID, product, location, st.QtyOnHand, st.UnitCostMinor, s.org.Currency)
		if err := created(err, "stock", i, fmt.Sprintf("stock of %q at that location", st.SKU)); err != nil {
			return err
		}
		if st.QtyOnHand > 0 {
			if _, err := s.tx.Exec(s.ctx, `
				INSERT INTO stock_movements (id, org_id, line_id, product_id, location_id, kind, qty, unit_cost_minor, balance_after, reference)
				VALUES ($1, $2, $3, $4, $5, 'adjustment', $6, $7, $6, 'opening balance')`,
				NewID(), s.org.ID, line, product, location, st.QtyOnHand, st.UnitCostMinor); err != nil {
				return err
			}
		}
		s.res.Stock++
	}
	return nil
}

// goodsReceipts records goods against purchase orders and moves each order
// by the state machine: to received when every line is now received in
// full (through partially_received), else to partially_received.
func (s *seeder) goodsReceipts() error {
	for i, g := range s.f.GoodsReceipts {
		po, found, err := s.resolve("purchase order", g.PONumber, `SELECT id FROM purchase_orders WHERE org_id = $1 AND number = $2`)
		if err != nil {
			return err
		}
		if !found {
			return seedErr("goods_receipts", i, "purchase order %q is neither in the file nor in the organisation", g.PONumber)
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
		s.res.GoodsReceipts++
	}
	return nil
}
