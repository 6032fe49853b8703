package domain

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// ProductInput is a product as an import writes it: the import wizard's
// rules are applied by Normalize.
type ProductInput struct {
	SKU          string        `json:"sku" doc:"Stock-keeping unit, 1 to 64 characters (trimmed); the upsert key."`
	Title        string        `json:"title" doc:"1 to 500 characters."`
	Category     *string       `json:"category,omitempty" doc:"At most 200 characters (trimmed)."`
	UOM          string        `json:"uom,omitempty" doc:"Unit of measure; default each."`
	PriceMinor   *int64        `json:"price_minor,omitempty" doc:"Whole minor units >= 0, or null."`
	Currency     string        `json:"currency,omitempty" doc:"ISO 4217 code; default the organisation's."`
	StockQty     *float64      `json:"stock_qty,omitempty" doc:">= 0, or null."`
	LeadTimeDays *int          `json:"lead_time_days,omitempty" doc:"Whole days >= 0, or null."`
	Attrs        JSONObject    `json:"attrs,omitempty" doc:"Free-form attributes (coerced through schema_id when given)."`
	Status       ProductStatus `json:"status,omitempty" enum:"active,draft,archived" doc:"Default active."`
	ExternalID   *string       `json:"external_id,omitempty"`
}

// Text limits of a product, in characters. sku and category are keys of
// indexes, which cannot hold a value of more than about 2,700 bytes.
const (
	MaxSKU      = 64
	MaxTitle    = 500
	MaxCategory = 200
)

// Normalize trims and defaults the product and checks the import rules:
// sku 1-64 characters, title 1-500, category at most 200, uom defaulting
// to "each", price_minor
// and lead_time_days integers >= 0 or null, stock_qty >= 0 or null,
// currency defaulting to the organisation's, status active|draft|archived
// (default active), attrs an object. The first broken rule is returned as
// EINVALID.
func (p *ProductInput) Normalize(orgCurrency string) error {
	for _, f := range [...]struct {
		name string
		v    *string
	}{{"sku", &p.SKU}, {"title", &p.Title}, {"category", p.Category}, {"uom", &p.UOM},
		{"currency", &p.Currency}, {"external_id", p.ExternalID}, {"status", (*string)(&p.Status)}} {
		if err := noNUL(f.name, f.v); err != nil {
			return err
		}
	}
	if jsonHasNUL(p.Attrs) {
		return Errorf(EINVALID, "attrs contains a NUL character")
	}
	if n := jsonNumberOutOfRange(p.Attrs); n != "" {
		return Errorf(EINVALID, "attrs holds the number %s, which is out of range", Abbreviate(n, 40))
	}
	p.SKU = strings.TrimSpace(p.SKU)
	p.Title = strings.TrimSpace(p.Title)
	switch n := utf8.RuneCountInString(p.SKU); {
	case n == 0:
		return Errorf(EINVALID, "sku is required")
	case n > MaxSKU:
		return Errorf(EINVALID, "sku is longer than %d characters", MaxSKU)
	}
	switch n := utf8.RuneCountInString(p.Title); {
	case n == 0:
		return Errorf(EINVALID, "title is required")
	case n > MaxTitle:
		return Errorf(EINVALID, "title is longer than %d characters", MaxTitle)
	}
	p.Category = trimmedOrNil(p.Category)
	if p.Category != nil && utf8.RuneCountInString(*p.Category) > MaxCategory {
		return Errorf(EINVALID, "category is longer than %d characters", MaxCategory)
	}
	p.ExternalID = trimmedOrNil(p.ExternalID)
	p.UOM = strings.TrimSpace(p.UOM)
	if p.UOM == "" {
		p.UOM = "each"
	}
	if p.PriceMinor != nil && *p.PriceMinor < 0 {
		return Errorf(EINVALID, "price_minor must be zero or more")
	}
	if p.StockQty != nil && *p.StockQty < 0 {
		return Errorf(EINVALID, "stock_qty must be zero or more")
	}
	if p.LeadTimeDays != nil && (*p.LeadTimeDays < 0 || *p.LeadTimeDays > math.MaxInt32) {
		return Errorf(EINVALID, "lead_time_days must be between 0 and %d", math.MaxInt32)
	}
	if p.Currency == "" {
		p.Currency = orgCurrency
	}
	if !ValidCurrency(p.Currency) {
		return Errorf(EINVALID, "currency %s is not a three-letter ISO 4217 code", quoted(p.Currency))
	}
	if p.Status == "" {
		p.Status = ProductActive
	}
	if !slices.Contains(ProductStatuses, p.Status) {
		return Errorf(EINVALID, "status %s is not active, draft or archived", quoted(string(p.Status)))
	}
	if len(p.Attrs) == 0 {
		p.Attrs = JSONObject("{}")
	}
	return nil
}

func trimmedOrNil(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	switch {
	case t == "":
		return nil
	case len(t) == len(*s):
		return s // as it was: no copy
	}
	return new(t)
}
