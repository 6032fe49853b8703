package domain

import (
	"fmt"
	"slices"
	"strings"
)

// Validate checks every rule that can be checked without the database and
// fills in defaults and computed totals. References between records (a
// quote's customer, a delivery's order) are resolved when the file is
// loaded, against the file and the organisation's existing records.
func (f *SeedFile) Validate(orgCurrency string) error {
	v := &seedValidator{orgCurrency: orgCurrency}
	v.locations(f.Locations)
	v.customers(f.Customers)
	v.products(f.Products)
	v.quotes(f.Quotes)
	v.orders(f.Orders)
	v.suppliers(f.Suppliers)
	v.purchaseOrders(f.PurchaseOrders)
	v.deliveries(f.Deliveries)
	v.stock(f.Stock)
	v.goodsReceipts(f.GoodsReceipts)
	return v.p.err()
}

type seedValidator struct {
	p           SeedProblems
	orgCurrency string
}

// record reports the problems of one record of a section.
type record struct {
	v       *seedValidator
	section string
	i       int
}

func (v *seedValidator) at(section string, i int) record { return record{v: v, section: section, i: i} }

func (r record) add(format string, args ...any) { r.v.p.add(r.section, r.i, format, args...) }

// currency defaults an empty code to the organisation's and checks it.
func (r record) currency(c *string) {
	if *c == "" {
		*c = r.v.orgCurrency
	}
	if !ValidCurrency(*c) {
		r.add("currency %q is not a three-letter ISO 4217 code", *c)
	}
}

// text trims a required field and checks its length.
func (r record) text(field string, s *string, max int) {
	*s = strings.TrimSpace(*s)
	if *s == "" || len(*s) > max {
		r.add("%s must be 1 to %d characters", field, max)
	}
}

// number trims a record number and checks its length.
func (r record) number(n *string) { r.text("number", n, 64) }

// vat returns the VAT rate (default 20) after checking it.
func (r record) vat(pct *float64) float64 {
	v := DefaultVATPct
	if pct != nil {
		v = *pct
	}
	if v < 0 || v > 100 {
		r.add("vat_pct must be between 0 and 100")
	}
	return v
}

// position defaults a line's position to its place in the list (j+1) and
// checks it is positive and new.
func (r record) position(where string, pos *int, j int, seen map[int]bool) {
	if *pos == 0 {
		*pos = j + 1
	}
	if *pos < 1 || seen[*pos] {
		r.add("%sposition %d is not a new positive number", where, *pos)
	}
	seen[*pos] = true
}

// status defaults an empty status and checks it is a state of m.
func status[S ~string](r record, s *S, def S, m Machine[S]) {
	if *s == "" {
		*s = def
	}
	if !m.Valid(*s) {
		r.add("status %q is not one of %s", *s, JoinValues(m.States()))
	}
}

// totals keeps totals given in the file when all three are given and
// consistent, and otherwise the computed ones.
func (r record) totals(computed Totals, subtotal, vat, total *int64) Totals {
	given, problem := givenTotals(subtotal, vat, total, computed.DiscountMinor)
	t := computed
	switch {
	case problem != "":
		r.add("%s", problem)
		return computed
	case given != nil:
		t = *given
	}
	if problem := t.Problem(); problem != "" {
		r.add("%s", problem)
	}
	return t
}

// unique returns a function that reports a key seen before in the section.
func (v *seedValidator) unique(section, field string) func(i int, key string) {
	seen := map[string]int{}
	return func(i int, key string) {
		if key == "" {
			return
		}
		if j, dup := seen[key]; dup {
			v.p.add(section, i, "%s %q repeats %s[%d]", field, key, section, j)
			return
		}
		seen[key] = i
	}
}

func (v *seedValidator) locations(locations []SeedLocation) {
	defaults := 0
	seen := v.unique("locations", "code")
	for i := range locations {
		l, r := &locations[i], v.at("locations", i)
		r.text("code", &l.Code, 64)
		if strings.TrimSpace(l.Name) == "" {
			l.Name = l.Code
		}
		if l.IsDefault {
			if defaults++; defaults > 1 {
				r.add("only one location can be the default")
			}
		}
		seen(i, l.Code)
	}
}

func (v *seedValidator) customers(customers []SeedCustomer) {
	seen := v.unique("customers", "company")
	for i := range customers {
		c, r := &customers[i], v.at("customers", i)
		r.text("company", &c.Company, 500)
		seen(i, strings.ToLower(c.Company))
		if c.EmailDomain != nil {
			d := strings.ToLower(strings.TrimSpace(*c.EmailDomain))
			if d == "" || strings.ContainsAny(d, "@ ") || !strings.Contains(d, ".") {
				r.add("email_domain %q is not a domain", *c.EmailDomain)
			}
			c.EmailDomain = &d
		}
		r.currency(&c.Currency)
		if c.ExternalRefs == nil {
			c.ExternalRefs = map[string]any{}
		}
		r.contacts(c.Contacts)
	}
}

func (v *seedValidator) products(products []ProductInput) {
	seen := v.unique("products", "sku")
	for i := range products {
		if err := products[i].Normalize(v.orgCurrency); err != nil {
			v.at("products", i).add("%s", ErrorMessage(err))
		}
		seen(i, products[i].SKU)
	}
}

func (v *seedValidator) quotes(quotes []SeedQuote) {
	seen := v.unique("quotes", "number")
	for i := range quotes {
		q, r := &quotes[i], v.at("quotes", i)
		r.number(&q.Number)
		seen(i, q.Number)
		status(r, &q.Status, QuoteDraft, QuoteMachine)
		r.currency(&q.Currency)
		if q.DiscountMinor < 0 {
			r.add("discount_minor must be zero or more")
		}
		vat := r.vat(q.VATPct)
		amounts := make([]int64, len(q.Lines))
		positions := map[int]bool{}
		for j := range q.Lines {
			l, where := &q.Lines[j], fmt.Sprintf("lines[%d]: ", j)
			r.position(where, &l.Position, j, positions)
			r.line(where, &l.LineType, &l.Description, l.Qty, &l.UOM, l.UnitPriceMinor)
			if l.DiscountPct != nil && (*l.DiscountPct < 0 || *l.DiscountPct > 100) {
				r.add("%sdiscount_pct must be between 0 and 100", where)
			}
			if l.LeadTimeDays != nil && *l.LeadTimeDays < 0 {
				r.add("%slead_time_days must be zero or more", where)
			}
			if l.AmountOverrideMinor != nil && *l.AmountOverrideMinor < 0 {
				r.add("%samount_override_minor must be zero or more", where)
			}
			if l.LineType == LineNote && l.AmountOverrideMinor != nil && *l.AmountOverrideMinor != 0 {
				r.add("%sa note line carries amount 0", where)
			}
			l.AmountMinor = QuoteLineAmount(l.Qty, l.UnitPriceMinor, l.DiscountPct, l.AmountOverrideMinor)
			amounts[j] = l.AmountMinor
		}
		q.Totals = r.totals(ComputeTotals(amounts, q.DiscountMinor, vat), q.SubtotalMinor, q.VATMinor, q.TotalMinor)
	}
}

func (v *seedValidator) orders(orders []SeedOrder) {
	seen := v.unique("orders", "number")
	seenQuote := v.unique("orders", "quote_number")
	for i := range orders {
		o, r := &orders[i], v.at("orders", i)
		r.number(&o.Number)
		seen(i, o.Number)
		if o.QuoteNumber != nil {
			seenQuote(i, *o.QuoteNumber)
		}
		status(r, &o.Status, OrderConfirmed, OrderMachine)
		r.currency(&o.Currency)
		vat := r.vat(o.VATPct)
		amounts := make([]int64, len(o.Lines))
		positions := map[int]bool{}
		for j := range o.Lines {
			l, where := &o.Lines[j], fmt.Sprintf("lines[%d]: ", j)
			r.position(where, &l.Position, j, positions)
			r.line(where, &l.LineType, &l.Description, l.Qty, &l.UOM, l.UnitPriceMinor)
			if l.AttrsSnapshot == nil {
				l.AttrsSnapshot = map[string]any{}
			}
			amounts[j] = OrderLineAmount(l.Qty, l.UnitPriceMinor)
		}
		o.Totals = r.totals(ComputeTotals(amounts, 0, vat), o.SubtotalMinor, o.VATMinor, o.TotalMinor)
	}
}

func (v *seedValidator) suppliers(suppliers []SeedSupplier) {
	seen := v.unique("suppliers", "name")
	for i := range suppliers {
		s, r := &suppliers[i], v.at("suppliers", i)
		r.text("name", &s.Name, 500)
		seen(i, s.Name)
		r.currency(&s.Currency)
		r.contacts(s.Contacts)
	}
}

func (v *seedValidator) purchaseOrders(pos []SeedPurchaseOrder) {
	seen := v.unique("purchase_orders", "number")
	for i := range pos {
		po, r := &pos[i], v.at("purchase_orders", i)
		r.number(&po.Number)
		seen(i, po.Number)
		if strings.TrimSpace(po.Supplier) == "" {
			r.add("supplier is required")
		}
		status(r, &po.Status, PODraft, PurchaseOrderMachine)
		if po.Currency != "" {
			r.currency(&po.Currency) // else the supplier's, when loaded
		}
		if len(po.Lines) == 0 {
			r.add("a purchase order needs at least one line")
		}
		positions := map[int]bool{}
		po.TotalMinor = 0
		for j := range po.Lines {
			l, where := &po.Lines[j], fmt.Sprintf("lines[%d]: ", j)
			r.position(where, &l.Position, j, positions)
			if strings.TrimSpace(l.Description) == "" {
				if l.SKU == nil {
					r.add("%sdescription or sku is required", where)
				} else {
					l.Description = *l.SKU
				}
			}
			if l.Qty <= 0 {
				r.add("%sqty must be more than zero", where)
			}
			if l.UnitPriceMinor < 0 {
				r.add("%sunit_price_minor must be zero or more", where)
			}
			if strings.TrimSpace(l.UOM) == "" {
				l.UOM = "each"
			}
			po.TotalMinor += OrderLineAmount(l.Qty, l.UnitPriceMinor)
		}
		receiving := po.Status == POPartiallyReceived || po.Status == POReceived || po.Status == POClosed
		if len(po.Receipts) > 0 && !receiving {
			r.add("receipts need status partially_received, received or closed, not %s", po.Status)
		}
		for j, rc := range po.Receipts {
			if rc.ReceivedAt == nil {
				r.add("receipts[%d]: received_at is required", j)
			}
			if len(rc.Lines) == 0 {
				r.add("receipts[%d]: a receipt needs at least one line", j)
			}
			seenLine := map[int]bool{}
			for k, rl := range rc.Lines {
				if !positions[rl.Position] {
					r.add("receipts[%d].lines[%d]: position %d is not a line of the purchase order", j, k, rl.Position)
				}
				if seenLine[rl.Position] {
					r.add("receipts[%d].lines[%d]: position %d repeats", j, k, rl.Position)
				}
				seenLine[rl.Position] = true
				if rl.Qty <= 0 {
					r.add("receipts[%d].lines[%d]: qty must be more than zero", j, k)
				}
			}
		}
	}
}

func (v *seedValidator) deliveries(deliveries []SeedDelivery) {
	seen := v.unique("deliveries", "number")
	for i := range deliveries {
		d, r := &deliveries[i], v.at("deliveries", i)
		r.number(&d.Number)
		seen(i, d.Number)
		status(r, &d.Status, DeliveryPending, DeliveryMachine)
		if d.ShipTo == nil {
			d.ShipTo = map[string]any{}
		}
		positions := map[int]bool{}
		for j := range d.Lines {
			l, where := &d.Lines[j], fmt.Sprintf("lines[%d]: ", j)
			r.position(where, &l.Position, j, positions)
			if strings.TrimSpace(l.Description) == "" {
				r.add("%sdescription is required", where)
			}
			if l.Qty < 0 {
				r.add("%sqty must be zero or more", where)
			}
		}
		for j, pk := range d.Packages {
			if strings.TrimSpace(pk.Reference) == "" {
				r.add("packages[%d]: reference is required", j)
			}
			if pk.WeightGrams != nil && *pk.WeightGrams < 0 {
				r.add("packages[%d]: weight_grams must be zero or more", j)
			}
		}
	}
}

func (v *seedValidator) stock(stock []SeedStock) {
	seen := v.unique("stock", "sku and location")
	for i := range stock {
		s, r := &stock[i], v.at("stock", i)
		s.SKU = strings.TrimSpace(s.SKU)
		if s.SKU == "" {
			r.add("sku is required")
		}
		if s.QtyOnHand < 0 {
			r.add("qty_on_hand must be zero or more")
		}
		if s.UnitCostMinor != nil && *s.UnitCostMinor < 0 {
			r.add("unit_cost_minor must be zero or more")
		}
		loc := ""
		if s.Location != nil {
			loc = *s.Location
		}
		seen(i, s.SKU+"\x00"+loc)
	}
}

func (v *seedValidator) goodsReceipts(receipts []SeedGoodsReceipt) {
	for i := range receipts {
		g, r := &receipts[i], v.at("goods_receipts", i)
		g.PONumber = strings.TrimSpace(g.PONumber)
		if g.PONumber == "" {
			r.add("po_number is required")
		}
		if g.ReceivedAt == nil {
			r.add("received_at is required")
		}
		if len(g.Lines) == 0 {
			r.add("a receipt needs at least one line")
		}
		seen := map[int]bool{}
		for j, l := range g.Lines {
			if l.Position < 1 || seen[l.Position] {
				r.add("lines[%d]: position %d is not a new positive number", j, l.Position)
			}
			seen[l.Position] = true
			if l.Qty <= 0 {
				r.add("lines[%d]: qty must be more than zero", j)
			}
		}
	}
}

// contacts checks a customer's or supplier's contacts.
func (r record) contacts(contacts []SeedContact) {
	primaries := 0
	for j := range contacts {
		c := &contacts[j]
		c.Name = strings.TrimSpace(c.Name)
		if c.Name == "" {
			r.add("contacts[%d]: name is required", j)
		}
		if c.Email != nil && !strings.Contains(*c.Email, "@") {
			r.add("contacts[%d]: email %q is not an email address", j, *c.Email)
		}
		if c.IsPrimary {
			primaries++
		}
	}
	if primaries > 1 {
		r.add("only one contact can be primary")
	}
}

// line checks the fields quote and order lines share, defaulting line_type
// to product and uom to each.
func (r record) line(where string, lt *LineType, desc *string, qty float64, uom *string, unit int64) {
	if *lt == "" {
		*lt = LineProduct
	}
	if !slices.Contains(LineTypes, *lt) {
		r.add("%sline_type %q is not product, service, freight or note", where, *lt)
	}
	if strings.TrimSpace(*desc) == "" {
		r.add("%sdescription is required", where)
	}
	if strings.TrimSpace(*uom) == "" {
		*uom = "each"
	}
	if unit < 0 {
		r.add("%sunit_price_minor must be zero or more", where)
	}
	if *lt == LineNote {
		if qty != 0 || unit != 0 {
			r.add("%sa note line carries qty 0 and unit_price_minor 0", where)
		}
	} else if qty <= 0 {
		r.add("%sqty must be more than zero", where)
	}
}

// givenTotals returns the totals written in the file: none, or all three
// obeying total = subtotal − discount + vat.
func givenTotals(subtotal, vat, total *int64, discount int64) (*Totals, string) {
	n := 0
	for _, v := range []*int64{subtotal, vat, total} {
		if v != nil {
			n++
		}
	}
	switch n {
	case 0:
		return nil, ""
	case 3:
		t := Totals{SubtotalMinor: *subtotal, DiscountMinor: discount, VATMinor: *vat, TotalMinor: *total}
		if !t.Consistent() {
			return nil, fmt.Sprintf("total_minor %d is not subtotal_minor %d - discount %d + vat_minor %d", *total, *subtotal, discount, *vat)
		}
		return &t, ""
	}
	return nil, "give subtotal_minor, vat_minor and total_minor together, or none of them"
}
