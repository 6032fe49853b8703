package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// newestIDs returns the ids of the organisation's rows of table, newest
// first.
func (f *fixture) newestIDs(t *testing.T, table string) []string {
	t.Helper()
	rows, err := f.db.Pool().Query(context.Background(), `SELECT id::text FROM `+table+` WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, f.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	return ids
}

// otherOrganisationKey makes another organisation, every add-on on, and
// returns an all-scopes key of it.
func (f *fixture) otherOrganisationKey(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	other, _, err := f.db.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other Ltd"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range domain.Addons {
		_, _ = f.db.SetAddon(ctx, other.ID, a, true)
	}
	_, key, err := f.db.CreateAPIKey(ctx, other.ID, "other", domain.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// newestFirst names each newest-first list of the demo data and its table.
var newestFirst = []struct{ path, list, table string }{
	{"/api/v1/quotes", "quotes", "quotes"},
	{"/api/v1/orders", "orders", "orders"},
	{"/api/v1/stock/lines", "stock_lines", "stock_lines"},
	{"/api/v1/stock/movements", "movements", "stock_movements"},
	{"/api/v1/deliveries", "deliveries", "deliveries"},
	{"/api/v1/suppliers", "suppliers", "suppliers"},
	{"/api/v1/purchase-orders", "purchase_orders", "purchase_orders"},
	{"/api/v1/customers", "customers", "customers"},
	{"/api/v1/requests", "requests", "request_threads"},
}

// Every newest-first list, walked a row a page, returns each of its rows
// once, in created_at then id order, newest first.
func TestEveryNewestFirstListWalksEachRowOnceInOrder(t *testing.T) {
	d := newDemo(t)
	for _, l := range newestFirst {
		got, _ := d.walk(t, l.path, l.list, "id", 1)
		want := d.newestIDs(t, l.table)
		if len(want) < 2 {
			t.Fatalf("%s: the example data holds %d rows, too few to page", l.list, len(want))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: walk %v, want %v", l.list, got, want)
		}
	}
}

// A cursor only continues the list, filters and organisation it was made
// for: under any filter of its list, or with another organisation's key,
// it is refused.
func TestCursorsAreBoundToTheirFiltersAndOrganisation(t *testing.T) {
	d := newDemo(t)
	otherKey := d.otherOrganisationKey(t)
	var product, location, line, supplier, order string
	_ = d.db.Pool().QueryRow(context.Background(), `SELECT product_id::text, location_id::text, id::text FROM stock_lines WHERE org_id = $1 LIMIT 1`, d.org.ID).Scan(&product, &location, &line)
	_ = d.db.Pool().QueryRow(context.Background(), `SELECT id::text FROM suppliers WHERE org_id = $1 LIMIT 1`, d.org.ID).Scan(&supplier)
	_ = d.db.Pool().QueryRow(context.Background(), `SELECT order_id::text FROM deliveries WHERE org_id = $1 LIMIT 1`, d.org.ID).Scan(&order)
	filters := map[string][]string{
		"/api/v1/products":        {"search=bolt", "sku=X", "category=Abrasives"},
		"/api/v1/quotes":          {"status=sent"},
		"/api/v1/orders":          {"status=confirmed"},
		"/api/v1/stock/lines":     {"product_id=" + product, "location_id=" + location, "sku=X"},
		"/api/v1/stock/movements": {"line_id=" + line, "product_id=" + product, "kind=receipt"},
		"/api/v1/deliveries":      {"status=delivered", "order_id=" + order},
		"/api/v1/suppliers":       {"search=a"},
		"/api/v1/purchase-orders": {"status=draft", "supplier_id=" + supplier},
		"/api/v1/customers":       {"search=a"},
		"/api/v1/requests":        nil,
	}
	for path, fs := range filters {
		_, _, body := d.do("GET", path+"?limit=1", d.key, nil)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		c, _ := m["next_cursor"].(string)
		if c == "" {
			t.Fatalf("%s: no cursor after one row", path)
		}
		for _, f := range fs {
			if status, _, body := d.do("GET", path+"?"+f+"&cursor="+url.QueryEscape(c), d.key, nil); status != 400 {
				t.Errorf("%s?%s with an unfiltered cursor: %d %s", path, f, status, body)
			}
		}
		if status, _, body := d.do("GET", path+"?cursor="+url.QueryEscape(c), otherKey, nil); status != 400 {
			t.Errorf("%s: another organisation's key with this one's cursor: %d %s", path, status, body)
		}
	}
}

// The filters the quick count test leaves out, each against the database.
func TestMoreListFiltersNarrowTheRows(t *testing.T) {
	d := newDemo(t)
	ctx := context.Background()
	ids := func(path, list string) []string {
		t.Helper()
		status, _, body := d.do("GET", path, d.key, nil)
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		var m map[string][]map[string]any
		_ = json.Unmarshal(body, &m)
		var out []string
		for _, r := range m[list] {
			out = append(out, fmt.Sprint(r["id"]))
		}
		return out
	}
	want := func(q string, args ...any) []string {
		t.Helper()
		rows, err := d.db.Pool().Query(ctx, q+` ORDER BY created_at DESC, id DESC`, append([]any{d.org.ID}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			out = append(out, id)
		}
		return out
	}
	check := func(name string, got, want []string) {
		t.Helper()
		if len(want) == 0 {
			t.Fatalf("%s: the example data has no rows for this filter", name)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	// A transfer into another line, so that line_id also meets transfers in.
	var product, from, to uuid.UUID
	if err := d.db.Pool().QueryRow(ctx, `SELECT s.product_id, s.location_id FROM stock_lines s WHERE s.org_id = $1 AND s.qty_on_hand >= 1 LIMIT 1`, d.org.ID).Scan(&product, &from); err != nil {
		t.Fatal(err)
	}
	if err := d.db.Pool().QueryRow(ctx, `SELECT id FROM stock_locations WHERE org_id = $1 AND id <> $2 LIMIT 1`, d.org.ID, from).Scan(&to); err != nil {
		t.Fatal(err)
	}
	if status, b := d.post("/api/v1/stock/movements", fmt.Sprintf(`{"kind": "transfer", "product_id": %q, "location_id": %q, "to_location_id": %q, "qty": 1}`, product, from, to)); status != 201 {
		t.Fatalf("transfer: %d %s", status, b)
	}
	var toLine string
	_ = d.db.Pool().QueryRow(ctx, `SELECT id::text FROM stock_lines WHERE org_id = $1 AND product_id = $2 AND location_id = $3`, d.org.ID, product, to).Scan(&toLine)
	check("movements?line_id (the destination of a transfer)", ids("/api/v1/stock/movements?limit=200&line_id="+toLine, "movements"),
		want(`SELECT id::text FROM stock_movements WHERE org_id = $1 AND (line_id = $2 OR to_line_id = $2)`, toLine))
	check("movements?product_id", ids("/api/v1/stock/movements?limit=200&product_id="+product.String(), "movements"),
		want(`SELECT id::text FROM stock_movements WHERE org_id = $1 AND product_id = $2`, product))
	check("stock/lines?product_id", ids("/api/v1/stock/lines?limit=200&product_id="+product.String(), "stock_lines"),
		want(`SELECT id::text FROM stock_lines WHERE org_id = $1 AND product_id = $2`, product))
	check("stock/lines?location_id", ids("/api/v1/stock/lines?limit=200&location_id="+from.String(), "stock_lines"),
		want(`SELECT id::text FROM stock_lines WHERE org_id = $1 AND location_id = $2`, from))

	var order, sku, supplierName string
	_ = d.db.Pool().QueryRow(ctx, `SELECT order_id::text FROM deliveries WHERE org_id = $1 LIMIT 1`, d.org.ID).Scan(&order)
	check("deliveries?order_id", ids("/api/v1/deliveries?limit=200&order_id="+order, "deliveries"),
		want(`SELECT id::text FROM deliveries WHERE org_id = $1 AND order_id = $2`, order))
	_ = d.db.Pool().QueryRow(ctx, `SELECT sku FROM products WHERE org_id = $1 ORDER BY sku OFFSET 3 LIMIT 1`, d.org.ID).Scan(&sku)
	if got := ids("/api/v1/products?sku="+url.QueryEscape(sku), "products"); len(got) != 1 ||
		got[0] != want(`SELECT id::text FROM products WHERE org_id = $1 AND sku = $2`, sku)[0] {
		t.Errorf("products?sku=%s: %v", sku, got)
	}
	_ = d.db.Pool().QueryRow(ctx, `SELECT name FROM suppliers WHERE org_id = $1 ORDER BY name LIMIT 1`, d.org.ID).Scan(&supplierName)
	term := supplierName[1:5]
	check("suppliers?search="+term, ids("/api/v1/suppliers?limit=200&search="+url.QueryEscape(term), "suppliers"),
		want(`SELECT id::text FROM suppliers WHERE org_id = $1 AND (name ILIKE '%' || $2 || '%' OR email ILIKE '%' || $2 || '%')`, term))
}

// A stock line's detail carries its newest 100 movements, newest first.
func TestStockLineDetailCarriesItsNewest100Movements(t *testing.T) {
	s := newStockFixture(t)
	for i := range 130 {
		if status, b := s.post("/api/v1/stock/movements", fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 1, "reference": "r%d"}`, s.product, i)); status != 201 {
			t.Fatalf("movement %d: %d %s", i, status, b)
		}
	}
	var line string
	_ = s.db.Pool().QueryRow(context.Background(), `SELECT id::text FROM stock_lines WHERE org_id = $1 AND location_id = $2`, s.org.ID, s.main).Scan(&line)
	status, _, body := s.do("GET", "/api/v1/stock/lines/"+line, s.key, nil)
	var detail domain.StockLineDetail
	if status != 200 || json.Unmarshal(body, &detail) != nil {
		t.Fatalf("%d %s", status, body)
	}
	if detail.QtyOnHand != 130 || len(detail.Movements) != 100 {
		t.Fatalf("qty %v with %d movements, want 130 with 100", detail.QtyOnHand, len(detail.Movements))
	}
	for i, m := range detail.Movements {
		if m.Reference == nil || *m.Reference != fmt.Sprintf("r%d", 129-i) || m.BalanceAfter != float64(130-i) {
			t.Fatalf("movement %d: reference %v, balance %v; want r%d, %d", i, m.Reference, m.BalanceAfter, 129-i, 130-i)
		}
	}
}

// Each add-on on its own: switched off while it holds rows, its lists and
// its records by id still read (200), while the other add-ons, holding
// nothing, stay closed (404).
func TestAnAddonHoldingRowsKeepsItsReadsOpenAndNoOtherAddon(t *testing.T) {
	seeds := map[domain.Addon]string{
		domain.AddonStock: `{"products": [{"sku": "A", "title": "A"}], "stock": [{"sku": "A", "qty_on_hand": 3}]}`,
		domain.AddonRoute: `{"orders": [{"number": "O1", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}],
			"deliveries": [{"number": "D1", "order_number": "O1"}]}`,
		domain.AddonSource: `{"suppliers": [{"name": "S"}], "purchase_orders": [{"number": "P1", "supplier": "S",
			"lines": [{"position": 1, "description": "x", "qty": 1, "unit_price_minor": 1}]}]}`,
	}
	for held, seed := range seeds {
		t.Run(string(held), func(t *testing.T) {
			f := newFixture(t)
			f.seed(seed)
			id := func(sql string) string {
				var v string
				if err := f.db.Pool().QueryRow(context.Background(), sql, f.org.ID).Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			reads := map[domain.Addon][]string{
				domain.AddonStock:  {"/api/v1/stock/lines", "/api/v1/stock/locations", "/api/v1/stock/movements", "/api/v1/stock/lines/"},
				domain.AddonRoute:  {"/api/v1/deliveries", "/api/v1/deliveries/"},
				domain.AddonSource: {"/api/v1/suppliers", "/api/v1/purchase-orders", "/api/v1/suppliers/", "/api/v1/purchase-orders/"},
			}
			byID := map[string]string{}
			switch held {
			case domain.AddonStock:
				byID["/api/v1/stock/lines/"] = id(`SELECT id::text FROM stock_lines WHERE org_id = $1`)
			case domain.AddonRoute:
				byID["/api/v1/deliveries/"] = id(`SELECT id::text FROM deliveries WHERE org_id = $1`)
			case domain.AddonSource:
				byID["/api/v1/suppliers/"] = id(`SELECT id::text FROM suppliers WHERE org_id = $1`)
				byID["/api/v1/purchase-orders/"] = id(`SELECT id::text FROM purchase_orders WHERE org_id = $1`)
			}
			for addon, paths := range reads {
				for _, p := range paths {
					path, want := p, 404
					if addon == held {
						want = 200
					}
					if p[len(p)-1] == '/' {
						if addon == held {
							path += byID[p]
						} else {
							path += uuid.NewString()
						}
					}
					status, _, body := f.do("GET", path, f.key, nil)
					if status != want {
						t.Errorf("%s (add-ons off, %s holds rows): %d, want %d (%s)", path, held, status, want, body)
					}
					if status == 404 && errorBody(t, body) != "Not found" {
						t.Errorf("%s: %s", path, body)
					}
				}
			}
			// Writing still needs the add-on on.
			if held == domain.AddonStock {
				product := id(`SELECT id::text FROM products WHERE org_id = $1`)
				if status, b := f.post("/api/v1/stock/movements", `{"kind": "receipt", "product_id": "`+product+`", "qty": 1}`); status != 404 {
					t.Errorf("a movement with Stock off: %d %s", status, b)
				}
			}
		})
	}
}

// The add-on records read back exactly what was stored, field by field, so
// that no column is read into another's place.
func TestAddonRecordsReadBackEveryStoredField(t *testing.T) {
	s := newStockFixture(t)
	for _, a := range domain.Addons {
		_, _ = s.db.SetAddon(context.Background(), s.org.ID, a, true)
	}
	s.seed(`{"customers": [{"company": "Acme"}],
		"orders": [{"number": "O1", "customer": "Acme", "lines": [{"position": 1, "description": "x", "qty": 2, "unit_price_minor": 5}]}],
		"deliveries": [{"number": "D1", "order_number": "O1", "status": "delivered", "carrier": "DPD", "consignment_ref": "CONS-9",
			"tracking_url": "https://track.example/D1", "ship_to": {"city": "Leeds"}, "created_at": "2026-10-01T08:00:00.000Z",
			"lines": [{"position": 1, "description": "Bolts", "qty": 2, "order_line_position": 1}],
			"packages": [{"reference": "PKG-1", "weight_grams": 1200, "tracking_url": "https://track.example/PKG-1"}]}],
		"suppliers": [{"name": "Brennan", "email": "sales@brennan.example", "phone": "+44 1", "currency": "EUR", "payment_terms": "Net 45",
			"created_at": "2026-09-01T08:30:00.000Z"}],
		"purchase_orders": [{"number": "P1", "supplier": "Brennan", "status": "sent", "currency": "EUR", "created_at": "2026-09-02T09:00:00.000Z",
			"lines": [{"position": 1, "sku": "BOLT", "description": "Bolts", "qty": 4, "uom": "box", "unit_price_minor": 250, "expected_date": "2026-12-01"}]}]}`)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.db.Pool().Exec(ctx, sql, append([]any{s.org.ID}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE deliveries SET dispatched_at = '2026-10-02T07:00:00.001Z', delivered_at = '2026-10-03T15:30:00.002Z' WHERE org_id = $1`)
	exec(`UPDATE suppliers SET external_refs = '{"erp": "SUP-7"}' WHERE org_id = $1`)
	exec(`UPDATE purchase_orders SET supplier_ref = 'BR-77', expected_date = '2026-12-02' WHERE org_id = $1`)
	if status, b := s.post("/api/v1/stock/movements", fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 10, "unit_cost_minor": 125, "reference": "GRN-1"}`, s.product)); status != 201 {
		t.Fatalf("%d %s", status, b)
	}
	if status, b := s.post("/api/v1/stock/movements", fmt.Sprintf(`{"kind": "transfer", "product_id": %q, "to_location_id": %q, "qty": 3, "idempotency_key": "T-1", "reference": "move"}`, s.product, s.other)); status != 201 {
		t.Fatalf("%d %s", status, b)
	}
	one := func(sql string) string {
		t.Helper()
		var v string
		if err := s.db.Pool().QueryRow(ctx, sql, s.org.ID).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	order, customer := one(`SELECT id::text FROM orders WHERE org_id = $1`), one(`SELECT id::text FROM customers WHERE org_id = $1`)
	delivery, supplier := one(`SELECT id::text FROM deliveries WHERE org_id = $1`), one(`SELECT id::text FROM suppliers WHERE org_id = $1`)
	po := one(`SELECT id::text FROM purchase_orders WHERE org_id = $1`)
	mainLine := one(`SELECT id::text FROM stock_lines WHERE org_id = $1 AND location_id = '` + s.main.String() + `'`)
	get := func(path string) map[string]any {
		t.Helper()
		status, _, body := s.do("GET", path, s.key, nil)
		var m map[string]any
		if status != 200 || json.Unmarshal(body, &m) != nil {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		return m
	}
	expect := func(what string, got map[string]any, want map[string]any) {
		t.Helper()
		for k, w := range want {
			g, _ := json.Marshal(got[k])
			wj, _ := json.Marshal(w)
			if string(g) != string(wj) {
				t.Errorf("%s.%s = %s, want %s", what, k, g, wj)
			}
		}
	}
	d := get("/api/v1/deliveries/" + delivery)
	expect("delivery", d, map[string]any{"number": "D1", "status": "delivered", "order_id": order, "customer_id": customer,
		"carrier": "DPD", "consignment_ref": "CONS-9", "tracking_url": "https://track.example/D1", "ship_to": map[string]any{"city": "Leeds"},
		"dispatched_at": "2026-10-02T07:00:00.001Z", "delivered_at": "2026-10-03T15:30:00.002Z", "created_at": "2026-10-01T08:00:00.000Z",
		"lines": []any{map[string]any{"position": 1, "description": "Bolts", "qty": 2, "order_line_position": 1}}})
	pkgs, _ := d["packages"].([]any)
	if len(pkgs) != 1 {
		t.Fatalf("packages %v", d["packages"])
	}
	expect("package", pkgs[0].(map[string]any), map[string]any{"reference": "PKG-1", "weight_grams": 1200, "tracking_url": "https://track.example/PKG-1"})

	expect("supplier", get("/api/v1/suppliers/"+supplier), map[string]any{"name": "Brennan", "email": "sales@brennan.example",
		"phone": "+44 1", "currency": "EUR", "payment_terms": "Net 45", "external_refs": map[string]any{"erp": "SUP-7"},
		"created_at": "2026-09-01T08:30:00.000Z"})

	p := get("/api/v1/purchase-orders/" + po)
	expect("purchase order", p, map[string]any{"number": "P1", "status": "sent", "supplier_id": supplier, "currency": "EUR",
		"total_minor": 1000, "supplier_ref": "BR-77", "expected_date": "2026-12-02", "created_at": "2026-09-02T09:00:00.000Z",
		"lines": []any{map[string]any{"position": 1, "sku": "BOLT", "description": "Bolts", "qty": 4, "uom": "box", "unit_price_minor": 250,
			"expected_date": "2026-12-01", "qty_received": 0}}})

	line := get("/api/v1/stock/lines/" + mainLine)
	expect("stock line", line, map[string]any{"product_id": s.product, "sku": "BOLT", "location_id": s.main, "qty_on_hand": 7,
		"unit_cost_minor": 125, "currency": "GBP"})
	mvs, _ := line["movements"].([]any)
	if len(mvs) != 2 {
		t.Fatalf("movements %v", line["movements"])
	}
	expect("transfer", mvs[0].(map[string]any), map[string]any{"line_id": mainLine, "product_id": s.product, "location_id": s.main,
		"to_location_id": s.other, "kind": "transfer", "qty": 3, "unit_cost_minor": nil, "balance_after": 7, "idempotency_key": "T-1",
		"reference": "move"})
	expect("receipt", mvs[1].(map[string]any), map[string]any{"line_id": mainLine, "to_location_id": nil, "kind": "receipt", "qty": 10,
		"unit_cost_minor": 125, "balance_after": 10, "idempotency_key": nil, "reference": "GRN-1"})
}
