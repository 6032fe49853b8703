package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/examples"
)

// listRoutes are the paged GET routes of the served OpenAPI document, in
// path order: the routes FuzzListQuery reaches, whatever lists are added.
func listRoutes(tb testing.TB, f *fixture) []string {
	tb.Helper()
	status, _, body := f.do("GET", "/api/v1/openapi.json", "", nil)
	if status != http.StatusOK {
		tb.Fatalf("openapi.json: %d", status)
	}
	var doc struct {
		Paths map[string]struct {
			Get *struct {
				Parameters []struct{ Name string } `json:"parameters"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		tb.Fatal(err)
	}
	var routes []string
	for path, item := range doc.Paths {
		if item.Get == nil || strings.Contains(path, "{") || !strings.HasPrefix(path, "/api/v1/") {
			continue
		}
		routes = append(routes, path)
	}
	slices.Sort(routes)
	if len(routes) < 10 {
		tb.Fatalf("the OpenAPI document lists %d GET lists", len(routes))
	}
	return routes
}

// FuzzListQuery sends arbitrary query strings (invalid UTF-8, NULs, huge
// numbers, forged and truncated cursors, repeated parameters) to the GET
// lists through the real router, Huma and the database: the answer is never
// a 5xx, and a 4xx is exactly {"error": "..."}.
func FuzzListQuery(f *testing.F) {
	fx := newFixture(f)
	fx.seed(string(examples.Seed))
	for _, a := range domain.Addons {
		if _, err := fx.db.SetAddon(context.Background(), fx.org.ID, a, true); err != nil {
			f.Fatal(err)
		}
	}
	routes := listRoutes(f, fx)
	for _, seed := range []struct{ path, query string }{
		{"/api/v1/products", "search=%C3"}, {"/api/v1/products", "sku=%ED%A0%80"}, {"/api/v1/products", "category=%C0%AF"},
		{"/api/v1/products", "search=\xff\xfe"}, {"/api/v1/products", "search=" + strings.Repeat("a", 201)},
		{"/api/v1/products", "limit=99999999999999999999999"}, {"/api/v1/products", "limit=-1"}, {"/api/v1/products", "limit=1e3"},
		{"/api/v1/products", "cursor=AAAA"}, {"/api/v1/products", "cursor=%FF%FE"}, {"/api/v1/products", "cursor=eyJsIjoicHJvZHVjdHMifQ"},
		{"/api/v1/products", "search=a&search=b"}, {"/api/v1/products", "limit=1&limit=2"}, {"/api/v1/products", "search=%"},
		{"/api/v1/products", "search=%zz"}, {"/api/v1/products", ";;&&=="},
		{"/api/v1/customers", "search=%FF"}, {"/api/v1/suppliers", "search=%C0%80"}, {"/api/v1/orders", "status=%FF"},
		{"/api/v1/quotes", "status=draft&status=sent"}, {"/api/v1/deliveries", "order_id=%00"},
		{"/api/v1/stock/movements", "kind=%F4%90%80%80&product_id=not-a-uuid"}, {"/api/v1/stock/lines", "location_id=%FF&sku=%C3"},
		{"/api/v1/purchase-orders", "supplier_id=%ED%A0%80"}, {"/api/v1/requests", "limit=0x10&%FF=1"},
	} {
		if i := slices.Index(routes, seed.path); i >= 0 {
			f.Add(uint8(i), seed.query)
		}
	}
	// Keys in turn, so that the rate limit never stands between the fuzzer
	// and the handlers.
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fx.newKey(domain.AllScopes...)
	}
	handler := fx.srv.Config.Handler
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		path := routes[int(route)%len(routes)]
		req := httptest.NewRequest(http.MethodGet, path, nil)
		// Set after parsing, so the query reaches the router byte for byte.
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+keys[n.Add(1)%int64(len(keys))])
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("GET %s?%q answered %d: %s", path, query, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			errorBody(t, rec.Body.Bytes())
		}
	})
}
