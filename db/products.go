package db

import (
	"context"
	"strconv"
	"strings"

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

// likePattern escapes s for use inside an ILIKE pattern.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// ListProducts returns up to limit+1 of the organisation's products in SKU
// order, after the SKU afterSKU when it is not empty. The extra row tells the
// caller whether another page follows.
func (d *DB) ListProducts(ctx context.Context, orgID uuid.UUID, f ProductFilter, afterSKU string, limit int) ([]domain.Product, error) {
	args := []any{orgID, limit + 1}
	where := "org_id = $1"
	add := func(cond string, v any) {
		args = append(args, v)
		where += " AND " + strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args)))
	}
	if afterSKU != "" {
		add("sku > ?", afterSKU)
	}
	if f.SKU != "" {
		add("sku = ?", f.SKU)
	}
	if f.Category != "" {
		add("category = ?", f.Category)
	}
	if f.Search != "" {
		add("(title ILIKE ? OR sku ILIKE ? OR category ILIKE ?)", likePattern(f.Search))
	}
	rows, err := d.pool.Query(ctx, `SELECT `+productColumns+` FROM products WHERE `+where+` ORDER BY sku LIMIT $2`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Product, error) { return scanProduct(r) })
}
