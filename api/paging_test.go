package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// walk follows next_cursor through every page of a list and returns the
// rows' values of field, in order, and the number of pages.
func (f *fixture) walk(t *testing.T, path, list, field string, limit int) ([]string, int) {
	t.Helper()
	var got []string
	pages := 0
	cursor := ""
	for {
		q := fmt.Sprintf("%s?limit=%d", path, limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		status, _, body := f.do("GET", q, f.key, nil)
		if status != 200 {
			t.Fatalf("%s: %d %s", q, status, body)
		}
		var page map[string]json.RawMessage
		_ = json.Unmarshal(body, &page)
		var rows []map[string]any
		_ = json.Unmarshal(page[list], &rows)
		var next *string
		_ = json.Unmarshal(page["next_cursor"], &next)
		pages++
		if len(rows) == 0 {
			t.Fatalf("page %d is empty (a non-null cursor must never lead to an empty page)", pages)
		}
		if len(rows) > limit {
			t.Fatalf("page %d has %d rows, limit %d", pages, len(rows), limit)
		}
		for _, r := range rows {
			got = append(got, fmt.Sprint(r[field]))
		}
		if next == nil {
			return got, pages
		}
		cursor = *next
	}
}

func TestCursorWalkReturnsEveryProductOnceInSKUOrder(t *testing.T) {
	f := newFixture(t)
	// SKUs mixing case, digits and punctuation: SKU order is byte order.
	var want []string
	var b strings.Builder
	b.WriteString(`{"products": [`)
	prefixes := []string{"a", "B", "b-", "Z", "0", "9_", "x.y"}
	for i := range 1234 {
		sku := fmt.Sprintf("%s%04d", prefixes[i%len(prefixes)], (i*7919)%10000)
		want = append(want, sku)
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"sku": %q, "title": "Product %d"}`, sku, i)
	}
	b.WriteString("]}")
	f.seed(b.String())
	sort.Strings(want)

	got, pages := f.walk(t, "/api/v1/products", "products", "sku", 100)
	if pages != 13 {
		t.Errorf("%d pages, want 13", pages)
	}
	if len(got) != len(want) {
		t.Fatalf("walk returned %d products, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("position %d: %s, want %s", i, got[i], want[i])
		}
	}
}

func TestCursorWalkOfNewestFirstListsReturnsEveryRowOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// 1,234 customers over only seven distinct created_at values, so the id
	// breaks most ties; and 130 quotes likewise.
	if _, err := f.db.Pool().Exec(ctx, `
		INSERT INTO customers (id, org_id, company, currency, created_at)
		SELECT gen_random_uuid(), $1, 'Customer ' || i, 'GBP', now() - (i % 7) * interval '1 minute'
		FROM generate_series(1, 1234) i`, f.org.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool().Exec(ctx, `
		INSERT INTO quotes (id, org_id, number, status, currency, subtotal_minor, vat_minor, total_minor, created_at)
		SELECT gen_random_uuid(), $1, 'Q-' || i, 'draft', 'GBP', 0, 0, 0, now() - (i % 3) * interval '1 second'
		FROM generate_series(1, 130) i`, f.org.ID); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		path, list, table string
		limit             int
	}{
		{"/api/v1/customers", "customers", "customers", 100},
		{"/api/v1/quotes", "quotes", "quotes", 50},
	} {
		got, _ := f.walk(t, l.path, l.list, "id", l.limit)
		want := f.newestIDs(t, l.table)
		if len(got) != len(want) {
			t.Fatalf("%s: walk returned %d rows, want %d", l.list, len(got), len(want))
		}
		seen := map[string]bool{}
		for i := range want {
			if seen[got[i]] {
				t.Fatalf("%s: %s returned twice", l.list, got[i])
			}
			seen[got[i]] = true
			if got[i] != want[i] {
				t.Fatalf("%s: position %d is %s, want %s (newest first)", l.list, i, got[i], want[i])
			}
		}
	}
	// Created-at values come back with milliseconds, UTC.
	_, _, body := f.do("GET", "/api/v1/customers?limit=1", f.key, nil)
	var page struct {
		Customers []struct {
			CreatedAt string `json:"created_at"`
		}
	}
	_ = json.Unmarshal(body, &page)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", page.Customers[0].CreatedAt); err != nil {
		t.Fatalf("created_at %q: %v", page.Customers[0].CreatedAt, err)
	}
}

func TestListFiltersNarrowTheRows(t *testing.T) {
	d := newDemo(t)
	count := func(path, list string) int {
		t.Helper()
		status, _, body := d.do("GET", path, d.key, nil)
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		var m map[string][]map[string]any
		_ = json.Unmarshal(body, &m)
		return len(m[list])
	}
	sql := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := d.db.Pool().QueryRow(context.Background(), q, append([]any{d.org.ID}, args...)...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cases := []struct {
		path, list string
		want       int
	}{
		{"/api/v1/products?limit=500&search=m8", "products", sql(`SELECT count(*) FROM products WHERE org_id = $1 AND (title ILIKE '%m8%' OR sku ILIKE '%m8%' OR category ILIKE '%m8%')`)},
		{"/api/v1/products?limit=500&search=100%25", "products", sql(`SELECT count(*) FROM products WHERE org_id = $1 AND (title ILIKE '%100\%%' OR sku ILIKE '%100\%%' OR category ILIKE '%100\%%')`)},
		{"/api/v1/products?limit=500&category=Abrasives", "products", sql(`SELECT count(*) FROM products WHERE org_id = $1 AND category = 'Abrasives'`)},
		{"/api/v1/quotes?status=accepted", "quotes", sql(`SELECT count(*) FROM quotes WHERE org_id = $1 AND status = 'accepted'`)},
		{"/api/v1/orders?status=fulfilled", "orders", sql(`SELECT count(*) FROM orders WHERE org_id = $1 AND status = 'fulfilled'`)},
		{"/api/v1/customers?search=example.co", "customers", sql(`SELECT count(*) FROM customers WHERE org_id = $1 AND (company ILIKE '%example.co%' OR email_domain ILIKE '%example.co%')`)},
		{"/api/v1/deliveries?status=delivered", "deliveries", sql(`SELECT count(*) FROM deliveries WHERE org_id = $1 AND status = 'delivered'`)},
		{"/api/v1/purchase-orders?status=received", "purchase_orders", sql(`SELECT count(*) FROM purchase_orders WHERE org_id = $1 AND status = 'received'`)},
		{"/api/v1/stock/movements?kind=adjustment", "movements", sql(`SELECT count(*) FROM stock_movements WHERE org_id = $1 AND kind = 'adjustment'`)},
	}
	for _, c := range cases {
		if got := count(c.path, c.list); got != c.want || c.want == 0 && !strings.Contains(c.path, "100%25") {
			t.Errorf("%s: %d rows, want %d", c.path, got, c.want)
		}
	}
	var sku, product string
	_ = d.db.Pool().QueryRow(context.Background(), `SELECT p.sku, p.id::text FROM stock_lines s JOIN products p ON p.id = s.product_id WHERE s.org_id = $1 LIMIT 1`, d.org.ID).Scan(&sku, &product)
	if got := count("/api/v1/stock/lines?sku="+url.QueryEscape(sku), "stock_lines"); got != sql(`SELECT count(*) FROM stock_lines WHERE org_id = $1 AND product_id = $2`, product) {
		t.Errorf("stock lines by sku: %d", got)
	}
	if got := count("/api/v1/stock/lines?product_id="+product, "stock_lines"); got == 0 {
		t.Errorf("stock lines by product_id: none")
	}
	var supplier string
	_ = d.db.Pool().QueryRow(context.Background(), `SELECT supplier_id::text FROM purchase_orders WHERE org_id = $1 LIMIT 1`, d.org.ID).Scan(&supplier)
	if got := count("/api/v1/purchase-orders?supplier_id="+supplier, "purchase_orders"); got != sql(`SELECT count(*) FROM purchase_orders WHERE org_id = $1 AND supplier_id = $2`, supplier) {
		t.Errorf("purchase orders by supplier: %d", got)
	}
}
