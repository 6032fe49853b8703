package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
)

// EveryPage reads a whole newest-first list a page at a time: every row
// once, in the list's order, whether the list ends on a page's edge or
// inside one.
func TestEveryPageReadsEveryRowOnceInOrder(t *testing.T) {
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 199, 200, 201, 400, 401, 650} {
		rows := make([]db.Key, n) // newest first
		for i := range rows {
			rows[i] = db.Key{At: base.Add(-time.Duration(i) * time.Second), ID: uuid.New()}
		}
		calls := 0
		list := func(p db.Page) ([]db.Key, error) {
			calls++
			start := 0
			if p.After != nil {
				for start < n && !rows[start].At.Before(p.After.At) {
					start++
				}
			}
			return rows[start:min(n, start+p.Limit+1)], nil
		}
		got, err := db.EveryPage(list, func(k db.Key) db.Key { return k })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n || got == nil {
			t.Fatalf("%d rows: read %d (nil %v)", n, len(got), got == nil)
		}
		for i := range got {
			if got[i] != rows[i] {
				t.Fatalf("%d rows: row %d is %v, want %v", n, i, got[i], rows[i])
			}
		}
		// 200 rows a page, and a page more only when one was full.
		if want := max(1, (n+199)/200); calls != want {
			t.Fatalf("%d rows: %d pages read, want %d", n, calls, want)
		}
	}
}
