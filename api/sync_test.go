package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// changed is one row of an updated_since walk.
type changed struct {
	SKU       string `json:"sku"`
	UpdatedAt string `json:"updated_at"`
}

// walkChanged walks the products changed since, limit rows a page, calling
// between after each page but the last, and returns the rows in walk order.
func (f *fixture) walkChanged(t *testing.T, since time.Time, limit int, between func(page []changed)) []changed {
	t.Helper()
	var all []changed
	cursor := ""
	for {
		q := fmt.Sprintf("/api/v1/products?limit=%d&updated_since=%s", limit, url.QueryEscape(since.Format(time.RFC3339Nano)))
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		status, _, body := f.do("GET", q, f.key, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", q, status, body)
		}
		var page struct {
			Products   []changed `json:"products"`
			NextCursor *string   `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Products...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
		if between != nil {
			between(page.Products)
		}
	}
}

// dbNow is the database's clock.
func (f *fixture) dbNow(t *testing.T) time.Time {
	t.Helper()
	var now time.Time
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

func (f *fixture) touchProduct(t testing.TB, sku string) {
	if _, err := f.db.Pool().Exec(context.Background(), `UPDATE products SET title = title || '+' WHERE org_id = $1 AND sku = $2`,
		f.org.ID, sku); err != nil {
		t.Error(err)
	}
}

// Products P-00..P-59: A (00-19) change after T, before the walk; during
// the walk, after each page one A row already returned changes again and
// one B row (20-39) changes for the first time, while another client
// changes C rows (40-49) 30 times; D rows (50-59) never change. Every A
// row comes exactly once, or exactly twice when it changed again after
// the walk returned it; every B row exactly once; a C row at most as many
// times as it changed; no D row: in the walk and the walk after it, from
// the last row seen.
func TestUpdatedSinceWalkReturnsEveryRowChangedAfterTExactlyOnce(t *testing.T) {
	f := newFixture(t)
	sku := func(i int) string { return fmt.Sprintf("P-%02d", i) }
	var rows []map[string]any
	for i := range 60 {
		rows = append(rows, map[string]any{"sku": sku(i), "title": "Product"})
	}
	body, _ := json.Marshal(map[string]any{"products": rows})
	if status, _ := f.bulk(string(body)); status != http.StatusOK {
		t.Fatalf("bulk: %d", status)
	}
	since := f.dbNow(t)
	for i := range 20 {
		f.touchProduct(t, sku(i))
	}

	changedAgain := map[string]bool{}
	nextB := 20
	var cChanges sync.Map // sku → *int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 30 {
			s := sku(40 + i%10)
			f.touchProduct(t, s)
			n, _ := cChanges.LoadOrStore(s, new(int))
			*n.(*int)++
		}
	}()
	got := f.walkChanged(t, since, 5, func(page []changed) {
		for _, r := range page {
			if r.SKU < sku(20) && !changedAgain[r.SKU] && len(changedAgain) < 10 {
				changedAgain[r.SKU] = true
				f.touchProduct(t, r.SKU)
				break
			}
		}
		if nextB < 40 {
			f.touchProduct(t, sku(nextB))
			nextB++
		}
	})
	<-done
	// The walk stops short of changes made since the oldest write still
	// running began, and the other client's writes run throughout it: one
	// of them stalled on a busy machine holds back every change made after
	// it began, and the walk can end without them. A client walks again
	// from the updated_at of the last row seen, as here once the other
	// client has stopped; the rows that walk repeats at that instant are
	// the same changes, not new ones.
	inOrder(t, got)
	if len(got) == 0 {
		t.Fatal("the walk returned nothing")
	}
	last := got[len(got)-1]
	from, err := time.Parse(time.RFC3339Nano, last.UpdatedAt)
	if err != nil {
		t.Fatal(err)
	}
	again := map[changed]bool{}
	for _, r := range got {
		if r.UpdatedAt == last.UpdatedAt {
			again[r] = true
		}
	}
	next := f.walkChanged(t, from, 5, nil)
	inOrder(t, next)
	for _, r := range next {
		if !again[r] {
			got = append(got, r)
		}
	}
	seen := map[string]int{}
	for _, r := range got {
		seen[r.SKU]++
	}
	for i := range 20 {
		want := 1
		if changedAgain[sku(i)] {
			want = 2
		}
		if seen[sku(i)] != want {
			t.Errorf("%s (changed before the walk, again during it: %v) came %d times, want %d", sku(i), changedAgain[sku(i)], seen[sku(i)], want)
		}
	}
	if len(changedAgain) == 0 {
		t.Fatal("no row changed again during the walk")
	}
	for i := 20; i < nextB; i++ {
		if seen[sku(i)] != 1 {
			t.Errorf("%s (changed once, during the walk) came %d times, want 1", sku(i), seen[sku(i)])
		}
	}
	for i := 40; i < 50; i++ {
		n := 0
		if v, ok := cChanges.Load(sku(i)); ok {
			n = *v.(*int)
		}
		if seen[sku(i)] > n {
			t.Errorf("%s changed %d times and came %d times", sku(i), n, seen[sku(i)])
		}
	}
	for i := 50; i < 60; i++ {
		if seen[sku(i)] != 0 {
			t.Errorf("%s never changed after T and came %d times", sku(i), seen[sku(i)])
		}
	}
}

// inOrder fails t unless the rows of one walk come oldest change first.
func inOrder(t *testing.T, walk []changed) {
	t.Helper()
	for i := 1; i < len(walk); i++ {
		if walk[i].UpdatedAt < walk[i-1].UpdatedAt {
			t.Fatalf("row %d (%s at %s) comes after a later change (%s)", i, walk[i].SKU, walk[i].UpdatedAt, walk[i-1].UpdatedAt)
		}
	}
}

// A transaction still writing holds the walk back: its row is stamped when
// written, before a row another client changes and commits meanwhile, so a
// walk that returned the later row first would pass the earlier one by
// when it commits.
func TestUpdatedSinceWalkWaitsForTransactionsStillWriting(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if status, _ := f.bulk(`{"products": [{"sku": "X", "title": "x"}, {"sku": "Y", "title": "y"}]}`); status != http.StatusOK {
		t.Fatal(status)
	}
	since := f.dbNow(t)
	tx, err := f.db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE products SET title = 'x2' WHERE org_id = $1 AND sku = 'X'`, f.org.ID); err != nil {
		t.Fatal(err)
	}
	f.touchProduct(t, "Y")
	if got := f.walkChanged(t, since, 10, nil); len(got) != 0 {
		t.Fatalf("while X's change is uncommitted the walk returned %v, want nothing", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.walkChanged(t, since, 1, nil)
	if len(got) != 2 || got[0].SKU != "X" || got[1].SKU != "Y" {
		t.Fatalf("after the commit the walk returned %v, want X then Y", got)
	}
}

func TestEveryMirroredListTakesUpdatedSince(t *testing.T) {
	f := newFixture(t)
	f.seed(`{"customers": [{"company": "Acme Ltd"}], "products": [{"sku": "A-1", "title": "Washer"}]}`)
	for _, a := range domain.Addons {
		if _, err := f.db.SetAddon(context.Background(), f.org.ID, a, true); err != nil {
			t.Fatal(err)
		}
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	for path, list := range map[string]string{
		"/api/v1/products": "products", "/api/v1/customers": "customers", "/api/v1/quotes": "quotes", "/api/v1/orders": "orders",
		"/api/v1/stock/lines": "stock_lines", "/api/v1/deliveries": "deliveries", "/api/v1/suppliers": "suppliers",
		"/api/v1/purchase-orders": "purchase_orders",
	} {
		for _, since := range []string{"2000-01-01T00:00:00Z", future} {
			status, _, body := f.do("GET", path+"?updated_since="+since, f.key, nil)
			var page map[string][]map[string]any
			_ = json.Unmarshal(body, &page)
			if status != http.StatusOK {
				t.Fatalf("%s since %s: %d %s", path, since, status, body)
			}
			for _, r := range page[list] {
				if _, ok := r["updated_at"].(string); !ok {
					t.Errorf("%s: a row without updated_at: %v", path, r)
				}
			}
			if since == future && len(page[list]) != 0 {
				t.Errorf("%s since an hour ahead: %d rows", path, len(page[list]))
			}
		}
		if status, _, body := f.do("GET", path+"?updated_since=yesterday", f.key, nil); status != http.StatusBadRequest {
			t.Errorf("%s?updated_since=yesterday: %d %s", path, status, body)
		}
	}
	status, _, body := f.do("GET", "/api/v1/customers?updated_since=2000-01-01T00:00:00Z", f.key, nil)
	var page struct{ Customers []map[string]any }
	if _ = json.Unmarshal(body, &page); status != http.StatusOK || len(page.Customers) != 1 {
		t.Fatalf("customers since 2000: %d %s", status, body)
	}
}
