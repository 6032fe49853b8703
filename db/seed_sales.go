package db

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
)

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
			id, err := s.reference("orders", i, "quote", *o.QuoteNumber, `SELECT id FROM quotes WHERE org_id = $1 AND number = $2`)
			if err != nil {
				return err
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
		s.waitable(domain.WaitOrder, &o.Number, o.CustomerPORef)
		s.waitable(domain.WaitQuote, o.QuoteNumber)
		s.res.Orders++
	}
	return nil
}

func (s *seeder) deliveries() error {
	for i, dl := range s.f.Deliveries {
		var order, customer *uuid.UUID
		var orderPORef *string
		if dl.OrderNumber != nil {
			id, err := s.reference("deliveries", i, "order", *dl.OrderNumber, `SELECT id FROM orders WHERE org_id = $1 AND number = $2`)
			if err != nil {
				return err
			}
			order = &id
			if err := s.tx.QueryRow(s.ctx, `SELECT customer_id, customer_po_ref FROM orders WHERE org_id = $1 AND id = $2`,
				s.org.ID, id).Scan(&customer, &orderPORef); err != nil {
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
		// A post about a delivery names it, its consignment or its order.
		s.waitable(domain.WaitDelivery, &dl.Number)
		s.waitable(domain.WaitConsignment, dl.ConsignmentRef)
		s.waitable(domain.WaitOrder, dl.OrderNumber, orderPORef)
		s.res.Deliveries++
	}
	return nil
}
