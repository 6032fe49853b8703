package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/examples"
)

// readRoute is one GET route of the REST API's table, with a path that names a
// real record of the example data.
type readRoute struct {
	path  string
	scope domain.Scope
	addon domain.Addon
	list  string // the list's key, for paged lists
	max   int    // the list's maximum page size
}

// demo is a fixture loaded with the example data, every add-on on, plus the
// records the seed file cannot hold (request threads, invoice references,
// supplier invoices).
type demo struct {
	*fixture
	ids map[string]uuid.UUID
}

func newDemo(t *testing.T) *demo {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	sf, err := domain.ParseSeed(examples.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Seed(ctx, f.org.ID, sf); err != nil {
		t.Fatal(err)
	}
	for _, a := range domain.Addons {
		if _, err := f.db.SetAddon(ctx, f.org.ID, a, true); err != nil {
			t.Fatal(err)
		}
	}
	d := &demo{fixture: f, ids: map[string]uuid.UUID{}}
	one := func(name, sql string) {
		var id uuid.UUID
		if err := f.db.Pool().QueryRow(ctx, sql, f.org.ID).Scan(&id); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d.ids[name] = id
	}
	one("quote", `SELECT q.id FROM quotes q WHERE q.org_id = $1 AND EXISTS (SELECT 1 FROM quote_lines l WHERE l.quote_id = q.id AND l.discount_pct IS NOT NULL) LIMIT 1`)
	one("order", `SELECT id FROM orders WHERE org_id = $1 AND status = 'fulfilled' LIMIT 1`)
	one("customer", `SELECT c.id FROM customers c WHERE c.org_id = $1 AND EXISTS (SELECT 1 FROM customer_contacts x WHERE x.customer_id = c.id) LIMIT 1`)
	one("stock_line", `SELECT line_id FROM stock_movements WHERE org_id = $1 LIMIT 1`)
	one("delivery", `SELECT d.id FROM deliveries d WHERE d.org_id = $1 AND EXISTS (SELECT 1 FROM delivery_packages p WHERE p.delivery_id = d.id) LIMIT 1`)
	one("supplier", `SELECT s.id FROM suppliers s WHERE s.org_id = $1 AND EXISTS (SELECT 1 FROM supplier_contacts x WHERE x.supplier_id = s.id) LIMIT 1`)
	one("purchase_order", `SELECT p.id FROM purchase_orders p WHERE p.org_id = $1 AND p.status = 'partially_received' LIMIT 1`)
	one("owner", `SELECT id FROM users WHERE org_id = $1 AND role = 'owner'`)

	// What no seed section holds: a request thread, an invoice reference on
	// the order, a supplier invoice with a variance on the purchase order.
	d.ids["request"] = db.NewID()
	earlier := db.NewID()
	invoice := db.NewID()
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO request_threads (id, org_id, title, created_by, last_message_at) VALUES ($1, $2, 'RFQ: M8 bolts', $3, now())`,
			[]any{d.ids["request"], f.org.ID, d.ids["owner"]}},
		{`INSERT INTO request_messages (id, org_id, thread_id, role, blocks) VALUES ($1, $2, $3, 'user', '[{"type":"text","text":"500 x M8"}]')`,
			[]any{db.NewID(), f.org.ID, d.ids["request"]}},
		{`INSERT INTO request_threads (id, org_id, title, status, created_by, last_message_at, created_at) VALUES ($1, $2, 'Older enquiry', 'archived', $3, now(), now() - interval '1 day')`,
			[]any{earlier, f.org.ID, d.ids["owner"]}},
		{`INSERT INTO order_invoices (id, org_id, order_id, invoice_ref, invoice_status, amount_minor, currency) VALUES ($1, $2, $3, 'INV-1', 'paid', 100, 'GBP')`,
			[]any{db.NewID(), f.org.ID, d.ids["order"]}},
		{`INSERT INTO supplier_invoices (id, org_id, po_id, invoice_ref, amount_minor, currency, invoiced_qty, match_status) VALUES ($1, $2, $3, 'SUP-9', 5000, 'GBP', '10', 'variance')`,
			[]any{invoice, f.org.ID, d.ids["purchase_order"]}},
		{`INSERT INTO supplier_invoice_variances (id, org_id, invoice_id, kind, expected, actual) VALUES ($1, $2, $3, 'amount', 4000, 5000)`,
			[]any{db.NewID(), f.org.ID, invoice}},
	} {
		if _, err := f.db.Pool().Exec(ctx, stmt.sql, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d *demo) routes() []readRoute {
	id := func(name string) string { return d.ids[name].String() }
	return []readRoute{
		{path: "/api/v1/products", scope: domain.ScopeProductsRead, list: "products", max: 500},
		{path: "/api/v1/quotes", scope: domain.ScopeQuotesRead, list: "quotes", max: 200},
		{path: "/api/v1/quotes/" + id("quote"), scope: domain.ScopeQuotesRead},
		{path: "/api/v1/orders", scope: domain.ScopeOrdersRead, list: "orders", max: 200},
		{path: "/api/v1/orders/" + id("order"), scope: domain.ScopeOrdersRead},
		{path: "/api/v1/stock/lines", scope: domain.ScopeStockRead, addon: domain.AddonStock, list: "stock_lines", max: 200},
		{path: "/api/v1/stock/lines/" + id("stock_line"), scope: domain.ScopeStockRead, addon: domain.AddonStock},
		{path: "/api/v1/stock/locations", scope: domain.ScopeStockRead, addon: domain.AddonStock},
		{path: "/api/v1/stock/movements", scope: domain.ScopeStockRead, addon: domain.AddonStock, list: "movements", max: 200},
		{path: "/api/v1/deliveries", scope: domain.ScopeDeliveriesRead, addon: domain.AddonRoute, list: "deliveries", max: 200},
		{path: "/api/v1/deliveries/" + id("delivery"), scope: domain.ScopeDeliveriesRead, addon: domain.AddonRoute},
		{path: "/api/v1/suppliers", scope: domain.ScopeSuppliersRead, addon: domain.AddonSource, list: "suppliers", max: 200},
		{path: "/api/v1/suppliers/" + id("supplier"), scope: domain.ScopeSuppliersRead, addon: domain.AddonSource},
		{path: "/api/v1/purchase-orders", scope: domain.ScopePurchaseOrdersRead, addon: domain.AddonSource, list: "purchase_orders", max: 200},
		{path: "/api/v1/purchase-orders/" + id("purchase_order"), scope: domain.ScopePurchaseOrdersRead, addon: domain.AddonSource},
		{path: "/api/v1/customers", scope: domain.ScopeCustomersRead, list: "customers", max: 500},
		{path: "/api/v1/customers/" + id("customer"), scope: domain.ScopeCustomersRead},
		{path: "/api/v1/requests", scope: domain.ScopeRequestsRead, list: "requests", max: 200},
		{path: "/api/v1/requests/" + id("request"), scope: domain.ScopeRequestsRead},
	}
}

func init() {
	// Enforce format: uuid too (our ids are UUIDv7, hence RFC 9562).
	openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562))
}

// openAPI loads the served document with kin-openapi, validates it, and
// returns a router that finds a request's documented operation.
func (f *fixture) openAPI(t *testing.T) (*openapi3.T, func(req *http.Request, status int, hdr http.Header, body []byte) error) {
	t.Helper()
	status, _, raw := f.do("GET", "/api/v1/openapi.json", "", nil)
	if status != 200 {
		t.Fatalf("openapi.json: %d", status)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not valid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: f.srv.URL}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, func(req *http.Request, status int, hdr http.Header, body []byte) error {
		route, params, err := router.FindRoute(req)
		if err != nil {
			return fmt.Errorf("no documented operation: %w", err)
		}
		return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 status,
			Header:                 hdr,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		})
	}
}

func TestEveryReadRouteAnswersItsDocumentedShape(t *testing.T) {
	d := newDemo(t)
	_, validate := d.openAPI(t)
	for _, r := range d.routes() {
		t.Run(r.path, func(t *testing.T) {
			req, _ := http.NewRequest("GET", d.srv.URL+r.path, nil)
			status, hdr, body := d.do("GET", r.path, d.key, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if err := validate(req, status, hdr, body); err != nil {
				t.Fatalf("answer does not match the document: %v\n%s", err, body)
			}
			var m map[string]any
			_ = json.Unmarshal(body, &m)
			if r.list != "" {
				rows, ok := m[r.list].([]any)
				if !ok || len(rows) == 0 {
					t.Fatalf("list %q missing or empty: %s", r.list, body)
				}
				if _, ok := m["next_cursor"]; !ok || len(m) != 2 {
					t.Fatalf("list answer is not {%s, next_cursor}: %v", r.list, keys(m))
				}
			}
			// Unauthorised, unknown and revoked keys, and a key without the scope.
			for name, key := range map[string]string{"missing": "", "unknown": "ck_" + strings.Repeat("A", 43)} {
				if s, _, b := d.do("GET", r.path, key, nil); s != 401 {
					t.Errorf("%s key: %d %s", name, s, b)
				}
			}
			other := domain.ScopeProductsRead
			if r.scope == other {
				other = domain.ScopeQuotesRead
			}
			if s, _, b := d.do("GET", r.path, d.newKey(other), nil); s != 403 || !strings.Contains(errorBody(t, b), string(r.scope)) {
				t.Errorf("key without %s: %d %s", r.scope, s, b)
			}
		})
	}
	// A revoked key is refused everywhere.
	revoked := d.newKey(domain.AllScopes...)
	keys, _ := d.db.ListAPIKeys(context.Background(), d.org.ID)
	for _, k := range keys {
		if strings.HasPrefix(revoked, k.Prefix) {
			_, _ = d.db.RevokeAPIKey(context.Background(), d.org.ID, k.ID)
		}
	}
	for _, r := range d.routes() {
		if s, _, _ := d.do("GET", r.path, revoked, nil); s != 401 {
			t.Errorf("%s with a revoked key: %d", r.path, s)
		}
	}
}

// TestResponseValidationIsStrict shows the shape test above can fail: the
// documented schemas refuse a missing field, an extra field, a null where
// none is allowed, and a wrong type.
func TestResponseValidationIsStrict(t *testing.T) {
	f := newFixture(t)
	f.seed(`{"products": [{"sku": "A", "title": "A"}]}`)
	_, validate := f.openAPI(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/products", nil)
	status, hdr, body := f.do("GET", "/api/v1/products", f.key, nil)
	if err := validate(req, status, hdr, body); err != nil {
		t.Fatalf("the real answer fails: %v", err)
	}
	for name, mutate := range map[string]func(p map[string]any){
		"missing field": func(p map[string]any) { delete(p, "status") },
		"extra field":   func(p map[string]any) { p["colour"] = "red" },
		"null sku":      func(p map[string]any) { p["sku"] = nil },
		"string price":  func(p map[string]any) { p["price_minor"] = "12" },
		"bad id":        func(p map[string]any) { p["id"] = "x" },
	} {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mutate(m["products"].([]any)[0].(map[string]any))
		b, _ := json.Marshal(m)
		if err := validate(req, status, hdr, b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func keys(m map[string]any) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestReadAnswersCarryTheStoredFigures(t *testing.T) {
	d := newDemo(t)
	ctx := context.Background()
	get := func(path string, v any) {
		t.Helper()
		status, _, body := d.do("GET", path, d.key, nil)
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatal(err)
		}
	}
	var q domain.QuoteDetail
	get("/api/v1/quotes/"+d.ids["quote"].String(), &q)
	var sum int64
	for i, l := range q.Lines {
		sum += l.AmountMinor
		if l.Position != q.Lines[0].Position+i && i > 0 && l.Position <= q.Lines[i-1].Position {
			t.Fatalf("lines not in position order: %+v", q.Lines)
		}
	}
	if sum != q.SubtotalMinor || q.TotalMinor != q.SubtotalMinor-q.DiscountMinor+q.VATMinor {
		t.Fatalf("quote figures disagree: %+v", q)
	}

	var po domain.PurchaseOrderDetail
	get("/api/v1/purchase-orders/"+d.ids["purchase_order"].String(), &po)
	var received float64
	for _, r := range po.Receipts {
		for _, l := range r.Lines {
			received += l.Qty
		}
	}
	var lineReceived float64
	for _, l := range po.Lines {
		lineReceived += l.QtyReceived
	}
	if len(po.Receipts) == 0 || received != lineReceived {
		t.Fatalf("qty_received %v does not add up to the receipts' %v", lineReceived, received)
	}
	if len(po.Invoices) != 1 || po.Invoices[0].MatchStatus != domain.MatchVariance || len(po.Invoices[0].Variances) != 1 ||
		po.Invoices[0].Variances[0].Kind != domain.VarianceAmount {
		t.Fatalf("invoices = %+v", po.Invoices)
	}

	var o domain.OrderDetail
	get("/api/v1/orders/"+d.ids["order"].String(), &o)
	if len(o.Lines) == 0 || len(o.Invoices) != 1 || o.Invoices[0].InvoiceRef != "INV-1" {
		t.Fatalf("order = %+v", o)
	}

	var locs struct{ Locations []domain.StockLocation }
	get("/api/v1/stock/locations", &locs)
	if len(locs.Locations) < 2 || !locs.Locations[0].IsDefault {
		t.Fatalf("locations do not start with the default: %+v", locs.Locations)
	}
	for _, l := range locs.Locations[1:] {
		if l.IsDefault {
			t.Fatal("two default locations")
		}
	}

	var line domain.StockLineDetail
	get("/api/v1/stock/lines/"+d.ids["stock_line"].String(), &line)
	if len(line.Movements) == 0 || line.Movements[0].BalanceAfter != line.QtyOnHand || line.SKU == "" {
		t.Fatalf("stock line = %+v", line)
	}

	var req domain.RequestDetail
	get("/api/v1/requests/"+d.ids["request"].String(), &req)
	var blocks []map[string]any
	if len(req.Messages) != 1 || json.Unmarshal(req.Messages[0].Blocks, &blocks) != nil || blocks[0]["text"] != "500 x M8" {
		t.Fatalf("request = %+v", req)
	}

	// Timestamps are RFC 3339 UTC with milliseconds; dates are YYYY-MM-DD.
	_, _, body := d.do("GET", "/api/v1/quotes?limit=200", d.key, nil)
	var raw struct{ Quotes []map[string]any }
	_ = json.Unmarshal(body, &raw)
	for _, q := range raw.Quotes {
		created := q["created_at"].(string)
		if len(created) != len("2026-11-22T10:15:30.123Z") || !strings.HasSuffix(created, "Z") {
			t.Fatalf("created_at %q is not RFC 3339 UTC with milliseconds", created)
		}
		if vu, ok := q["valid_until"].(string); ok && len(vu) != len("2026-12-31") {
			t.Fatalf("valid_until %q is not YYYY-MM-DD", vu)
		}
	}
	_ = ctx
}

func TestReadsByIDAreScopedToTheOrganisation(t *testing.T) {
	d := newDemo(t)
	// Another organisation with its own all-scopes key and every add-on.
	otherKey := d.otherOrganisationKey(t)
	for _, r := range d.routes() {
		if r.list != "" || r.path == "/api/v1/stock/locations" {
			// Lists are scoped too: the other organisation sees none of these rows.
			status, _, body := d.do("GET", r.path, otherKey, nil)
			if status != 200 || strings.Contains(string(body), d.org.ID.String()) {
				t.Errorf("%s for another organisation: %d %s", r.path, status, body)
			}
			var m map[string]any
			_ = json.Unmarshal(body, &m)
			for k, v := range m {
				if rows, ok := v.([]any); ok && len(rows) > 0 && r.path != "/api/v1/stock/locations" {
					t.Errorf("%s: another organisation sees %d %s", r.path, len(rows), k)
				}
			}
			continue
		}
		if status, _, body := d.do("GET", r.path, otherKey, nil); status != 404 {
			t.Errorf("%s with another organisation's key: %d %s", r.path, status, body)
		}
		base := r.path[:strings.LastIndex(r.path, "/")+1]
		for _, bad := range []string{"not-a-uuid", uuid.NewString()} {
			if status, _, body := d.do("GET", base+bad, d.key, nil); status != 404 {
				t.Errorf("%s%s: %d %s", base, bad, status, body)
			} else {
				errorBody(t, body)
			}
		}
	}
}

func TestAddonRoutesFollowTheAddonAndTheRowsHeld(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	type gated struct {
		path string
		byID bool // a read of an unknown id: 404 whether or not the add-on is open
	}
	paths := []gated{
		{"/api/v1/stock/lines", false}, {"/api/v1/stock/locations", false}, {"/api/v1/stock/movements", false},
		{"/api/v1/stock/lines/" + uuid.NewString(), true},
		{"/api/v1/deliveries", false}, {"/api/v1/deliveries/" + uuid.NewString(), true},
		{"/api/v1/suppliers", false}, {"/api/v1/purchase-orders", false}, {"/api/v1/suppliers/" + uuid.NewString(), true},
	}
	check := func(when string, want int) {
		t.Helper()
		for _, p := range paths {
			expect := want
			if p.byID {
				expect = 404
			}
			status, _, body := f.do("GET", p.path, f.key, nil)
			if status != expect {
				t.Errorf("%s: %s answered %d, want %d (%s)", when, p.path, status, expect, body)
			}
			if status == 404 && !p.byID && errorBody(t, body) != "Not found" {
				t.Errorf("%s: add-on 404 says %q", p.path, body)
			}
		}
	}
	check("add-ons off, no rows", 404)
	// Switching Stock on and off again leaves only the default location,
	// which is not a held row.
	_, _ = f.db.SetAddon(ctx, f.org.ID, domain.AddonStock, true)
	_, _ = f.db.SetAddon(ctx, f.org.ID, domain.AddonStock, false)
	check("stock switched on and off, no rows", 404)

	f.seed(`{"products": [{"sku": "A", "title": "A"}], "stock": [{"sku": "A", "qty_on_hand": 3}],
		"suppliers": [{"name": "S"}], "orders": [{"number": "O1", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}],
		"deliveries": [{"number": "D1", "order_number": "O1"}]}`)
	check("add-ons off, rows held", 200)
	for _, a := range domain.Addons {
		_, _ = f.db.SetAddon(ctx, f.org.ID, a, true)
	}
	check("add-ons on", 200)
}

func TestListsRefuseBadPaging(t *testing.T) {
	d := newDemo(t)
	for _, r := range d.routes() {
		if r.list == "" {
			continue
		}
		t.Run(r.list, func(t *testing.T) {
			for _, q := range []string{"limit=0", fmt.Sprintf("limit=%d", r.max+1), "limit=-1", "limit=x", "cursor=garbage"} {
				if status, _, body := d.do("GET", r.path+"?"+q, d.key, nil); status != 400 {
					t.Errorf("%s?%s: %d %s", r.path, q, status, body)
				} else {
					errorBody(t, body)
				}
			}
			if status, _, _ := d.do("GET", fmt.Sprintf("%s?limit=%d", r.path, r.max), d.key, nil); status != 200 {
				t.Errorf("limit=%d refused", r.max)
			}
			// A real cursor of this list works; tampered, it does not.
			_, _, body := d.do("GET", r.path+"?limit=1", d.key, nil)
			var m map[string]any
			_ = json.Unmarshal(body, &m)
			c, ok := m["next_cursor"].(string)
			if !ok {
				t.Fatalf("no next cursor after one row of %s", r.list)
			}
			if status, _, _ := d.do("GET", r.path+"?limit=1&cursor="+url.QueryEscape(c), d.key, nil); status != 200 {
				t.Fatalf("own cursor refused: %d", status)
			}
			tampered := []byte(c)
			tampered[len(tampered)/2] ^= 0x01
			if tampered[len(tampered)/2] == '-' || tampered[len(tampered)/2] == '_' {
				tampered[len(tampered)/2] = 'A'
			}
			if status, _, _ := d.do("GET", r.path+"?cursor="+url.QueryEscape(string(tampered)), d.key, nil); status != 400 {
				t.Errorf("tampered cursor: %d", status)
			}
			// The cursor of another list is refused.
			otherList := "/api/v1/products"
			if r.list == "products" {
				otherList = "/api/v1/customers"
			}
			if status, _, _ := d.do("GET", otherList+"?cursor="+url.QueryEscape(c), d.key, nil); status != 400 {
				t.Errorf("cursor of %s accepted by %s: %d", r.path, otherList, status)
			}
		})
	}
	// A cursor made under one filter is refused under another.
	_, _, body := d.do("GET", "/api/v1/quotes?status=accepted&limit=1", d.key, nil)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	c, _ := m["next_cursor"].(string)
	if c == "" {
		t.Fatal("need two accepted quotes in the example data")
	}
	if status, _, _ := d.do("GET", "/api/v1/quotes?status=sent&cursor="+url.QueryEscape(c), d.key, nil); status != 400 {
		t.Errorf("cursor under other filters: %d", status)
	}
	if status, _, _ := d.do("GET", "/api/v1/quotes?cursor="+url.QueryEscape(c), d.key, nil); status != 400 {
		t.Errorf("cursor without its filter: %d", status)
	}
	if status, _, _ := d.do("GET", "/api/v1/quotes?status=won", d.key, nil); status != 400 {
		t.Errorf("unknown status filter: %d", status)
	}
	if status, _, _ := d.do("GET", "/api/v1/stock/lines?product_id=nope", d.key, nil); status != 400 {
		t.Errorf("malformed id filter: %d", status)
	}
}
