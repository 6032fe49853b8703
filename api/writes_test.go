package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

func (f *fixture) post(path, body string) (int, []byte) {
	f.t.Helper()
	status, _, b := f.do("POST", path, f.key, strings.NewReader(body))
	return status, b
}

func (f *fixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool().QueryRow(context.Background(), sql, append([]any{f.org.ID}, args...)...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (f *fixture) one(sql string, args ...any) string {
	f.t.Helper()
	var v string
	if err := f.db.Pool().QueryRow(context.Background(), sql, append([]any{f.org.ID}, args...)...).Scan(&v); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return v
}

type bulkAnswer struct {
	Upserted, Created, Updated, Unchanged int
	Errors                                []domain.RowError
}

func (f *fixture) bulk(body string) (int, bulkAnswer) {
	f.t.Helper()
	status, b := f.post("/api/v1/products/bulk", body)
	var a bulkAnswer
	if status == 200 {
		if err := json.Unmarshal(b, &a); err != nil {
			f.t.Fatal(err)
		}
	}
	return status, a
}

func TestBulkProductsWritesValidRowsAndReportsInvalidOnes(t *testing.T) {
	f := newFixture(t)
	status, a := f.bulk(`{"products": [
		{"sku": " A-1 ", "title": "Washer", "price_minor": 12, "attrs": {"size": "M8"}},
		{"sku": "B-2"},
		{"sku": "C-3", "title": "Bolt", "price_minor": -1},
		{"sku": "D-4", "title": "Nut", "status": "retired"},
		"not an object",
		{"sku": "E-5", "title": "Pin", "colour": "red"},
		{"sku": 12345, "title": "Numeric SKU"},
		{"sku": "F-6", "title": "Spring", "stock_qty": 2.5, "lead_time_days": 3, "attrs": null}]}`)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	if a.Upserted != 2 || a.Created != 2 || len(a.Errors) != 6 {
		t.Fatalf("answer %+v", a)
	}
	wantErr := map[int]string{1: "title is required", 2: "price_minor must be zero or more", 3: `status "retired"`,
		4: "must be a JSON object", 5: `unknown field "colour"`, 6: "sku: expected a string"}
	for _, e := range a.Errors {
		if !strings.Contains(e.Reason, wantErr[e.Index]) {
			t.Errorf("row %d: %q, want it to mention %q", e.Index, e.Reason, wantErr[e.Index])
		}
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1 AND sku IN ('A-1', 'F-6') AND attrs IS NOT NULL`); n != 2 {
		t.Fatalf("%d valid rows written", n)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'products.upserted'`); n != 1 {
		t.Fatalf("%d products.upserted events, want 1 per batch", n)
	}
}

func TestBulkProductsRepeatedSKUKeepsTheLastRow(t *testing.T) {
	f := newFixture(t)
	_, a := f.bulk(`{"products": [{"sku": "A", "title": "first"}, {"sku": "B", "title": "b"}, {"sku": "A", "title": "last"}]}`)
	if a.Upserted != 2 || len(a.Errors) != 1 || a.Errors[0].Index != 0 || !strings.Contains(a.Errors[0].Reason, "row 2") {
		t.Fatalf("answer %+v", a)
	}
	var title string
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT title FROM products WHERE sku = 'A'`).Scan(&title)
	if title != "last" {
		t.Fatalf("title %q, want the last row's", title)
	}
}

func TestBulkProductsRetryIsSafeAndUnchangedRowsAreNotRewritten(t *testing.T) {
	f := newFixture(t)
	batch := `{"products": [{"sku": "A", "title": "Washer", "attrs": {"m": 8}}, {"sku": "B", "title": "Bolt"}]}`
	_, first := f.bulk(batch)
	var before []string
	rows, _ := f.db.Pool().Query(context.Background(), `SELECT id::text || xmin::text || updated_at::text FROM products ORDER BY sku`)
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		before = append(before, s)
	}
	rows.Close()
	_, again := f.bulk(batch)
	if first.Created != 2 || again.Created != 0 || again.Updated != 0 || again.Unchanged != 2 || again.Upserted != 2 {
		t.Fatalf("first %+v, retry %+v", first, again)
	}
	rows, _ = f.db.Pool().Query(context.Background(), `SELECT id::text || xmin::text || updated_at::text FROM products ORDER BY sku`)
	for i := 0; rows.Next(); i++ {
		var s string
		_ = rows.Scan(&s)
		if s != before[i] {
			t.Fatalf("row %d was rewritten by an identical retry", i)
		}
	}
	rows.Close()
	_, changed := f.bulk(`{"products": [{"sku": "A", "title": "Washer", "attrs": {"m": 10}}, {"sku": "B", "title": "Bolt"}]}`)
	if changed.Updated != 1 || changed.Unchanged != 1 {
		t.Fatalf("a changed row: %+v", changed)
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1`); n != 2 {
		t.Fatalf("%d products after retries", n)
	}
}

// Rows are written as they arrive, so a SKU can be repeated after its
// earlier rows were copied: only the last is kept, however many came
// before, and a refused row does not displace a valid one.
func TestBulkProductsRepeatedSKUKeepsTheLastRowWhateverCameBefore(t *testing.T) {
	f := newFixture(t)
	_, a := f.bulk(`{"products": [{"sku": "A", "title": "first"}, {"sku": "A", "title": "second"}, {"sku": "B", "title": "b"},
		{"sku": "A", "title": "third"}, {"sku": "B", "title": ""}]}`)
	if a.Upserted != 2 || a.Created != 2 || len(a.Errors) != 3 {
		t.Fatalf("answer %+v", a)
	}
	for i, want := range []struct {
		row  int
		text string
	}{{0, "row 1"}, {1, "row 3"}, {4, "title is required"}} {
		if e := a.Errors[i]; e.Index != want.row || !strings.Contains(e.Reason, want.text) {
			t.Errorf("error %d: %+v, want row %d mentioning %q", i, e, want.row, want.text)
		}
	}
	if got := f.one(`SELECT string_agg(sku || '=' || title, ',' ORDER BY sku) FROM products WHERE org_id = $1`); got != "A=third,B=b" {
		t.Fatalf("products %s", got)
	}
}

// A body that goes wrong after its first rows were copied writes nothing.
func TestBulkProductsBadEndOfBodyWritesNothing(t *testing.T) {
	f := newFixture(t)
	rows := `{"products": [{"sku": "A", "title": "a"}, {"sku": "B", "title": "b"}]`
	for _, bad := range []string{rows, rows + `, "x": `, rows + `} trailing`, rows + `, "products": []}`, rows + `, "schema_id": 7}`} {
		if status, body := f.post("/api/v1/products/bulk", bad); status != 400 {
			t.Errorf("%s: %d %s", bad, status, body)
		}
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1`); n != 0 {
		t.Fatalf("%d products written by refused bodies", n)
	}
}

func TestBulkProductsCoercesAttributesThroughACatalogueSchema(t *testing.T) {
	f := newFixture(t)
	s, err := f.db.CreateCatalogueSchema(context.Background(), f.org.ID, domain.CatalogueSchema{Name: "Fasteners", Fields: []domain.CatalogueField{
		{Key: "length_mm", Type: domain.AttrInteger, Required: true},
		{Key: "weight_kg", Type: domain.AttrNumber},
		{Key: "stainless", Type: domain.AttrBoolean},
		{Key: "finish", Type: domain.AttrEnum, Options: []string{"Plain", "Zinc"}},
		{Key: "thread", Type: domain.AttrString},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, a := f.bulk(fmt.Sprintf(`{"schema_id": %q, "products": [
		{"sku": "A", "title": "a", "attrs": {"length_mm": "30", "weight_kg": "0.25", "stainless": "yes", "finish": "zinc", "thread": 8, "extra": "kept"}},
		{"sku": "B", "title": "b", "attrs": {"length_mm": "thirty"}},
		{"sku": "C", "title": "c", "attrs": {"length_mm": 10, "finish": "Chrome"}},
		{"sku": "D", "title": "d", "attrs": {"stainless": "maybe", "length_mm": 1}},
		{"sku": "E", "title": "e"}]}`, s.ID))
	if a.Upserted != 1 || len(a.Errors) != 4 {
		t.Fatalf("answer %+v", a)
	}
	var attrs map[string]any
	var raw []byte
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT attrs FROM products WHERE sku = 'A'`).Scan(&raw)
	_ = json.Unmarshal(raw, &attrs)
	if attrs["length_mm"] != 30.0 || attrs["weight_kg"] != 0.25 || attrs["stainless"] != true || attrs["finish"] != "Zinc" ||
		attrs["thread"] != "8" || attrs["extra"] != "kept" {
		t.Fatalf("coerced attrs = %v", attrs)
	}
	for _, e := range a.Errors {
		if !strings.Contains(e.Reason, "attrs.") {
			t.Errorf("row %d: %q does not name the attribute", e.Index, e.Reason)
		}
	}
	// The same rows with schema_id after the products answer the same and
	// store the same attributes.
	_, late := f.bulk(fmt.Sprintf(`{"products": [
		{"sku": "A", "title": "a", "attrs": {"length_mm": "31", "weight_kg": "0.25", "stainless": "yes", "finish": "zinc", "thread": 8, "extra": "kept"}},
		{"sku": "B", "title": "b", "attrs": {"length_mm": "thirty"}},
		{"sku": "C", "title": "c", "attrs": {"length_mm": 10, "finish": "Chrome"}},
		{"sku": "D", "title": "d", "attrs": {"stainless": "maybe", "length_mm": 1}},
		{"sku": "E", "title": "e"}], "schema_id": %q}`, s.ID))
	if late.Upserted != 1 || late.Updated != 1 || !reflect.DeepEqual(late.Errors, a.Errors) {
		t.Fatalf("schema_id after the products: %+v, before: %+v", late, a)
	}
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT attrs FROM products WHERE sku = 'A'`).Scan(&raw)
	_ = json.Unmarshal(raw, &attrs)
	if attrs["length_mm"] != 31.0 || attrs["stainless"] != true || attrs["finish"] != "Zinc" {
		t.Fatalf("attrs coerced through a schema_id given after the products = %v", attrs)
	}
	for _, body := range []string{
		`{"schema_id": "01a20000-0000-7000-8000-000000000000", "products": [{"sku": "Z", "title": "z"}]}`,
		`{"products": [{"sku": "Z", "title": "z"}], "schema_id": "01a20000-0000-7000-8000-000000000000"}`,
		`{"schema_id": "not a uuid", "products": [{"sku": "Z", "title": "z"}]}`,
	} {
		if status, b := f.post("/api/v1/products/bulk", body); status != 400 {
			t.Fatalf("%s: %d %s", body, status, b)
		}
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1 AND sku = 'Z'`); n != 0 {
		t.Fatal("a body naming an unknown schema wrote its rows")
	}
}

func TestBulkProductsLimits(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	b.WriteString(`{"products": [`)
	for i := range 10001 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"sku": "S%d", "title": "t"}`, i)
	}
	b.WriteString("]}")
	if status, body := f.post("/api/v1/products/bulk", b.String()); status != 413 || !strings.Contains(errorBody(t, body), "10000") {
		t.Fatalf("10001 products: %d %s", status, body)
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1`); n != 0 {
		t.Fatalf("%d products written by a refused call", n)
	}
	exactly := strings.Replace(b.String(), `,{"sku": "S10000", "title": "t"}`, "", 1)
	if status, body := f.post("/api/v1/products/bulk", exactly); status != 200 {
		t.Fatalf("10000 products: %d %.200s", status, body)
	}
	// A body beyond the size limit is refused without being read whole.
	huge := `{"products": [{"sku": "X", "title": "` + strings.Repeat("x", 33<<20) + `"}]}`
	if status, body := f.post("/api/v1/products/bulk", huge); status != 413 {
		t.Fatalf("a 33 MB body: %d %.200s", status, body)
	}
	for _, bad := range []string{`{}`, `{"products": {}}`, `{"products": "x"}`, `[]`, `not json`, ``} {
		if status, body := f.post("/api/v1/products/bulk", bad); status != 400 {
			t.Errorf("body %q: %d %s", bad, status, body)
		}
	}
}

func TestBulkProductsPlanCapRefusesTheWholeBatch(t *testing.T) {
	f := newFixture(t)
	cap := 3
	org, _, _ := f.db.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Small", ProductCap: &cap})
	f.org = org
	f.key = f.newKey(domain.AllScopes...)
	if _, a := f.bulk(`{"products": [{"sku": "A", "title": "a"}, {"sku": "B", "title": "b"}]}`); a.Created != 2 {
		t.Fatalf("first batch %+v", a)
	}
	status, body := f.post("/api/v1/products/bulk", `{"products": [{"sku": "A", "title": "changed"}, {"sku": "C", "title": "c"}, {"sku": "D", "title": "d"}]}`)
	if status != 402 {
		t.Fatalf("over the cap: %d %s", status, body)
	}
	errorBody(t, body)
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1`); n != 2 {
		t.Fatalf("%d products after a refused batch", n)
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1 AND title = 'changed'`); n != 0 {
		t.Fatal("a refused batch updated an existing product")
	}
	// Updating existing SKUs and adding up to the cap is fine.
	if status, _ := f.post("/api/v1/products/bulk", `{"products": [{"sku": "A", "title": "changed"}, {"sku": "C", "title": "c"}]}`); status != 200 {
		t.Fatalf("within the cap: %d", status)
	}
}

func TestWriteRoutesNeedTheirScope(t *testing.T) {
	f := newFixture(t)
	_, _ = f.db.SetAddon(context.Background(), f.org.ID, domain.AddonStock, true)
	readOnly := f.newKey(domain.ScopeProductsRead, domain.ScopeCustomersRead, domain.ScopeRequestsRead, domain.ScopeStockRead)
	for path, body := range map[string]string{
		"/api/v1/products/bulk":   `{"products": []}`,
		"/api/v1/customers":       `{"customers": []}`,
		"/api/v1/requests":        `{"text": "x"}`,
		"/api/v1/stock/movements": `{"kind": "adjustment", "qty": 1}`,
	} {
		if status, _, b := f.do("POST", path, readOnly, strings.NewReader(body)); status != http.StatusForbidden {
			t.Errorf("%s with read scopes: %d %s", path, status, b)
		}
		if status, _, _ := f.do("POST", path, "", strings.NewReader(body)); status != http.StatusUnauthorized {
			t.Errorf("%s without a key: %d", path, status)
		}
	}
}

func TestWriteAnswersMatchTheDocument(t *testing.T) {
	s := newStockFixture(t)
	_, validate := s.openAPI(t)
	cases := []struct {
		path, body string
		status     int
	}{
		{"/api/v1/products/bulk", `{"products": [{"sku": "N-1", "title": "Nut"}, {"sku": ""}]}`, 200},
		{"/api/v1/products/bulk", `{"products": "x"}`, 400},
		{"/api/v1/customers", `{"customers": [{"company": "Acme", "email": "a@acme.example"}]}`, 200},
		{"/api/v1/customers", `{"customers": [{"company": ""}]}`, 400},
		{"/api/v1/requests", `{"text": "Please quote"}`, 201},
		{"/api/v1/stock/movements", fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 2, "idempotency_key": "a"}`, s.product), 201},
		{"/api/v1/stock/movements", fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 2, "idempotency_key": "a"}`, s.product), 200},
		{"/api/v1/stock/movements", fmt.Sprintf(`{"kind": "scrap", "product_id": %q, "qty": 9}`, s.product), 409},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("POST", s.srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		status, hdr, body := s.do("POST", c.path, s.key, strings.NewReader(c.body))
		if status != c.status {
			t.Fatalf("%s %s: %d %s", c.path, c.body, status, body)
		}
		if err := validate(req, status, hdr, body); err != nil {
			t.Errorf("%s answered %d not as documented: %v\n%s", c.path, status, err, body)
		}
	}
}

// The row after the 10000th is refused as soon as it is read: a body of
// tiny rows far beyond the limit, ending in garbage, still answers 413.
func TestBulkProductsStopsReadingAtTheRowPastTheLimit(t *testing.T) {
	f := newFixture(t)
	body := `{"products": [` + strings.Repeat(`{},`, 1_000_000) + ` this is never read`
	status, b := f.post("/api/v1/products/bulk", body)
	if status != 413 || !strings.Contains(errorBody(t, b), "10000") {
		t.Fatalf("%d %s", status, b)
	}
}

// Values the storage cannot hold are their rows' errors; the rest of the
// batch is written.
func TestBulkProductsReportsValuesBeyondStorageByRow(t *testing.T) {
	f := newFixture(t)
	status, b := f.post("/api/v1/products/bulk", `{"products": [
		{"sku": "OK", "title": "fine", "attrs": {"big": 12345678901234567890}},
		{"sku": "A", "title": "t", "lead_time_days": 2147483648},
		{"sku": "B", "title": "t", "attrs": {"x": 1e200000}}]}`)
	var a struct {
		Upserted int
		Errors   []domain.RowError
	}
	_ = json.Unmarshal(b, &a)
	if status != 200 || a.Upserted != 1 || len(a.Errors) != 2 || a.Errors[0].Index != 1 || a.Errors[1].Index != 2 {
		t.Fatalf("%d %s", status, b)
	}
	if got := f.one(`SELECT attrs::text FROM products WHERE org_id = $1 AND sku = 'OK'`); got != `{"big": 12345678901234567890}` {
		t.Fatalf("attrs stored as %s", got)
	}
}

// The largest valid customers and requests bodies are taken, even with
// every character written as a \u escape; beyond the route's limit, 413.
func TestLargestValidBodiesAreAccepted(t *testing.T) {
	f := newFixture(t)
	esc := func(n int) string { return strings.Repeat(`\u00fc`, n) }
	var c strings.Builder
	c.WriteString(`{"customers": [`)
	for i := range 500 {
		if i > 0 {
			c.WriteString(",")
		}
		fmt.Fprintf(&c, `{"company": "%s%03d", "external_id": "%s%03d", "phone": "%s"}`, esc(497), i, esc(197), i, esc(50))
	}
	c.WriteString("]}")
	if status, a, b := f.customers(c.String()); status != 200 || a.Created != 500 {
		t.Fatalf("500 customers in %d bytes: %d %.300s", c.Len(), status, b)
	}
	text := `{"text": "` + strings.Repeat(`\ud83d\ude00`, 100000) + `", "title": "` + esc(200) + `"}`
	if status, b := f.post("/api/v1/requests", text); status != 201 {
		t.Fatalf("a request of 100000 characters in %d bytes: %d %.300s", len(text), status, b)
	}
	huge := `{"customers": [{"company": "` + strings.Repeat("x", 9<<20) + `"}]}`
	if status, b := f.post("/api/v1/customers", huge); status != 413 {
		t.Fatalf("a 9 MB customers body: %d %.200s", status, b)
	}
}
