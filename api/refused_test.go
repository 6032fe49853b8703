package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/testdb"
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
	d := testdb.New(t)
	ctx := context.Background()
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	_, key, _ := d.CreateAPIKey(ctx, org.ID, "k", domain.AllScopes)
	if _, err := d.Pool().Exec(ctx, `ALTER TABLE customers ADD CONSTRAINT refuse_in_test CHECK (company <> 'Refused Ltd')`); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	srv := httptest.NewServer(api.New(api.Deps{DB: d.DB, Logger: zap.New(core), Cursors: cursor.New(make([]byte, 32))}).Handler())
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/customers", strings.NewReader(`{"customers": [{"company": "Fine plc"}, {"company": "Refused Ltd"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	msg := errorBody(t, body)
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(msg, "refuse_in_test") || strings.Contains(msg, "violates") {
		t.Fatalf("answer %d %s, want a 400 without the database's text", resp.StatusCode, body)
	}
	var n int
	_ = d.Pool().QueryRow(ctx, `SELECT count(*) FROM customers WHERE org_id = $1`, org.ID).Scan(&n)
	if n != 0 {
		t.Fatalf("%d customers written", n)
	}
	reqID := resp.Header.Get("X-Request-Id")
	var logged bool
	for _, e := range logs.All() {
		cause, _ := e.ContextMap()["error"].(string)
		logged = logged || (e.ContextMap()["request_id"] == reqID && strings.Contains(cause, "refuse_in_test"))
	}
	if !logged {
		t.Fatal("the database's text was not logged with the request id")
	}
}
