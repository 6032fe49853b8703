package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// The reproduction of the issue: one row's category of 3,000 characters
// (a key of a btree index) is that row's error; the good rows are written.
func TestBulkProductsLongCategoryIsThatRowsError(t *testing.T) {
	f := newFixture(t)
	category := strings.Repeat("Fasteners ", 300)
	status, a := f.bulk(`{"products": [{"sku": "A", "title": "a"}, {"sku": "B", "title": "b", "category": "` + category + `"},
		{"sku": "C", "title": "c", "category": "` + strings.Repeat("é", domain.MaxCategory) + `"}]}`)
	if status != 200 || a.Upserted != 2 || len(a.Errors) != 1 || a.Errors[0].Index != 1 || !strings.Contains(a.Errors[0].Reason, "category") {
		t.Fatalf("%d %+v", status, a)
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1 AND sku IN ('A', 'C')`); n != 2 {
		t.Fatalf("%d good rows written, want 2", n)
	}
}

// A value the storage refuses for good (here a rule the domain does not
// know of, added to this test's schema) is the caller's 400 with a generic
// message; the database's own text goes to the log with the request id.
func TestStorageRefusalIsTheCallersErrorWithTheDetailInTheLog(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Pool().Exec(context.Background(), `ALTER TABLE customers ADD CONSTRAINT refuse_in_test CHECK (company <> 'Refused Ltd')`); err != nil {
		t.Fatal(err)
	}
	status, hdr, b := f.do(http.MethodPost, "/api/v1/customers", f.key, strings.NewReader(`{"customers": [{"company": "Fine plc"}, {"company": "Refused Ltd"}]}`))
	msg := errorBody(t, b)
	if status != http.StatusBadRequest || strings.Contains(msg, "refuse_in_test") || strings.Contains(msg, "violates") {
		t.Fatalf("answer %d %s, want a 400 without the database's text", status, b)
	}
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1`); n != 0 {
		t.Fatalf("%d customers written", n)
	}
	var logged bool
	for _, e := range f.logs.All() {
		cause, _ := e.ContextMap()["error"].(string)
		logged = logged || (e.ContextMap()["request_id"] == hdr.Get("X-Request-Id") && strings.Contains(cause, "refuse_in_test"))
	}
	if !logged {
		t.Fatal("the database's text was not logged with the request id")
	}
}
