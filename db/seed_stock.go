package db

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
)

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

// stock writes stock lines, each with an opening-balance adjustment so the
// movement ledger explains every balance.
func (s *seeder) stock() error {
	for i, st := range s.f.Stock {
		product, err := s.reference("stock", i, "product", st.SKU, `SELECT id FROM products WHERE org_id = $1 AND sku = $2`)
		if err != nil {
			return err
		}
		var location uuid.UUID
		if st.Location == nil {
			location, err = ensureDefaultLocation(s.ctx, s.tx, s.org.ID)
			if err != nil {
				return err
			}
		} else {
			location, err = s.reference("stock", i, "location", *st.Location, `SELECT id FROM stock_locations WHERE org_id = $1 AND code = $2`)
			if err != nil {
				return err
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
