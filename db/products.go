package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// ProductFilter narrows a product list. Search matches title, SKU and
// category (case-insensitive substring); SKU and Category match exactly.
type ProductFilter struct {
	Search   string
	SKU      string
	Category string
}

const productColumns = `id, sku, title, category, uom, price_minor, currency, stock_qty, lead_time_days, attrs, status, external_id`

func scanProduct(row pgx.Row) (domain.Product, error) {
	var p domain.Product
	err := row.Scan(&p.ID, &p.SKU, &p.Title, &p.Category, &p.UOM, &p.PriceMinor, &p.Currency, &p.StockQty,
		&p.LeadTimeDays, &p.Attrs, &p.Status, &p.ExternalID)
	return p, err
}

// ListProducts returns up to limit+1 of the organisation's products in SKU
// order, after the SKU afterSKU when it is not empty. The extra row tells the
// caller whether another page follows.
func (d *DB) ListProducts(ctx context.Context, orgID uuid.UUID, f ProductFilter, afterSKU string, limit int) ([]domain.Product, error) {
	c := newConds()
	c.add("org_id = ?", orgID)
	c.addIf(afterSKU != "", "sku > ?", afterSKU)
	c.addIf(f.SKU != "", "sku = ?", f.SKU)
	c.addIf(f.Category != "", "category = ?", f.Category)
	c.addIf(f.Search != "", "(title || chr(31) || sku || chr(31) || coalesce(category, '')) ILIKE ?", searchPattern(f.Search))
	rows, err := d.pool.Query(ctx, `SELECT `+productColumns+` FROM products WHERE `+c.where()+
		` ORDER BY sku LIMIT `+c.param(limit+1), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Product, error) { return scanProduct(r) })
}
