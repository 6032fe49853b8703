package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/health"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// fixture is a running API server over its own database with one
// organisation and an all-scopes key; what the server logs is kept in logs.
type fixture struct {
	t   testing.TB
	db  *testdb.DB
	srv *httptest.Server
	// metrics serves the server's /metrics, on a listener of its own as
	// the processes serve it.
	metrics *httptest.Server
	org     domain.Organisation
	key     string
	logs    *observer.ObservedLogs
	// sealer seals the signing secrets of the server's inbound endpoints.
	sealer *secrets.Sealer
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	d := testdb.New(t)
	sealer, err := secrets.NewSealer([]byte("fedcba9876543210fedcba9876543210"))
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	s := api.New(api.Deps{DB: d.DB, Logger: log, Cursors: cursor.New([]byte("0123456789abcdef0123456789abcdef")), BaseURL: "http://localhost",
		Service: integrations.New(integrations.Deps{DB: d.DB, Log: log, Sealer: sealer, BaseURL: "http://localhost"})})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	metrics := httptest.NewServer(s.Metrics())
	t.Cleanup(metrics.Close)
	org, _, err := d.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: d, srv: srv, metrics: metrics, org: org, logs: logs, sealer: sealer}
	f.key = f.newKey(domain.AllScopes...)
	return f
}

func (f *fixture) newKey(scopes ...domain.Scope) string {
	f.t.Helper()
	_, plain, err := f.db.CreateAPIKey(context.Background(), f.org.ID, "test", scopes)
	if err != nil {
		f.t.Fatal(err)
	}
	return plain
}

func (f *fixture) seed(file string) {
	f.t.Helper()
	sf, err := domain.ParseSeed([]byte(file))
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.db.Seed(context.Background(), f.org.ID, sf); err != nil {
		f.t.Fatal(err)
	}
}

// scrape reads the server's series from its metrics listener.
func (f *fixture) scrape() []byte {
	f.t.Helper()
	resp, err := http.Get(f.metrics.URL + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// do sends a request, with any further header name and value pairs, and
// returns the status, headers and body.
func (f *fixture) do(method, path, key string, body io.Reader, header ...string) (int, http.Header, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, body)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// errorBody checks that b is exactly {"error": "..."} and returns the message.
func errorBody(t testing.TB, b []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("error body %q is not JSON: %v", b, err)
	}
	msg, ok := m["error"].(string)
	if len(m) != 1 || !ok || msg == "" {
		t.Fatalf("error body %s is not {\"error\": \"...\"}", b)
	}
	return msg
}

func TestListProductsWithSeededCatalogue(t *testing.T) {
	f := newFixture(t)
	f.seed(`{"products": [
		{"sku": "B-2", "title": "Hex bolt M8", "category": "Fasteners", "price_minor": 45, "attrs": {"thread": "M8"}},
		{"sku": "A-1", "title": "Washer", "stock_qty": 12.5, "lead_time_days": 3, "external_id": "ERP-1"}]}`)
	status, hdr, body := f.do("GET", "/api/v1/products", f.key, nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if hdr.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", hdr.Get("Content-Type"))
	}
	var got struct {
		Products   []map[string]any `json:"products"`
		NextCursor *string          `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Products) != 2 || got.NextCursor != nil {
		t.Fatalf("got %s", body)
	}
	first := got.Products[0]
	if first["sku"] != "A-1" || first["category"] != nil || first["price_minor"] != nil || first["stock_qty"] != 12.5 ||
		first["lead_time_days"] != 3.0 || first["uom"] != "each" || first["currency"] != "GBP" || first["status"] != "active" ||
		first["external_id"] != "ERP-1" {
		t.Fatalf("first product = %v", first)
	}
	if attrs, ok := first["attrs"].(map[string]any); !ok || len(attrs) != 0 {
		t.Fatalf("attrs = %v, want {}", first["attrs"])
	}
	if got.Products[1]["price_minor"] != 45.0 || got.Products[1]["category"] != "Fasteners" {
		t.Fatalf("second product = %v", got.Products[1])
	}
	if len(first) != 13 || first["updated_at"] == nil {
		t.Fatalf("product has %d fields, want the documented 12 and updated_at: %v", len(first), first)
	}
}

func TestAuthenticationAndScopes(t *testing.T) {
	f := newFixture(t)
	narrow := f.newKey(domain.ScopeQuotesRead)
	revoked := f.newKey(domain.ScopeProductsRead)
	keys, _ := f.db.ListAPIKeys(context.Background(), f.org.ID)
	for _, k := range keys {
		if strings.HasPrefix(revoked, k.Prefix) {
			_, _ = f.db.RevokeAPIKey(context.Background(), f.org.ID, k.ID)
		}
	}
	cases := []struct {
		name   string
		key    string
		status int
	}{
		{"missing", "", 401},
		{"unknown", "ck_" + strings.Repeat("x", 43), 401},
		{"not a key", "hello", 401},
		{"revoked", revoked, 401},
		{"wrong scope", narrow, 403},
		{"good", f.key, 200},
	}
	for _, c := range cases {
		status, _, body := f.do("GET", "/api/v1/products", c.key, nil)
		if status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, status, c.status, body)
		}
		if status >= 400 {
			errorBody(t, body)
		}
	}
}

func TestErrorsAreJSON(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/v1/nothing-here", 404},
		{"GET", "/elsewhere", 404},
		{"DELETE", "/api/v1/products", 405},
		{"GET", "/api/v1/products?limit=0", 400},
		{"GET", "/api/v1/products?limit=501", 400},
		{"GET", "/api/v1/products?limit=ten", 400},
		{"GET", "/api/v1/products?cursor=forged", 400},
		{"GET", "/api/v1/products?search=a%00b", 400},
		{"GET", "/api/v1/customers?search=%00", 400},
	}
	for _, c := range cases {
		status, hdr, body := f.do(c.method, c.path, f.key, nil)
		if status != c.status {
			t.Errorf("%s %s: status %d, want %d (%s)", c.method, c.path, status, c.status, body)
			continue
		}
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
		errorBody(t, body)
	}
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	f := newFixture(t)
	status, _, body := f.do("GET", "/api/v1/openapi.json", "", nil)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != "1.0.0" || !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}
	sec := doc.Paths["/api/v1/products"]["get"].Security
	if len(sec) != 1 || len(sec[0]["bearer"]) != 1 || sec[0]["bearer"][0] != "products:read" {
		t.Fatalf("products security = %v", sec)
	}
	if status, _, _ := f.do("GET", "/api/v1/docs", "", nil); status != 200 {
		t.Fatalf("docs status %d", status)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do("GET", "/healthz", "", nil); status != 200 {
		t.Fatalf("healthz %d", status)
	}
	// No Temporal client is configured here: the API is ready all the same
	// (posts wait for Temporal), and the verbose answer says so.
	status, _, body := f.do("GET", "/readyz", "", nil)
	if status != 200 || strings.TrimSpace(string(body)) != `{"status":"ready"}` {
		t.Fatalf("readyz %d %s", status, body)
	}
	status, _, body = f.do("GET", "/readyz?verbose=1", "", nil)
	var verbose health.Answer
	if err := json.Unmarshal(body, &verbose); err != nil || status != 200 {
		t.Fatalf("readyz?verbose=1 %d %s", status, body)
	}
	want := map[string]health.State{
		"postgres": {Status: "up", Required: true},
		"schema":   {Status: "up", Required: true},
		"temporal": {Status: "down", Required: false, Reason: "not configured"},
	}
	if !reflect.DeepEqual(verbose.Checks, want) || verbose.Status != "ready" {
		t.Fatalf("readyz?verbose=1 = %+v, want ready with %+v", verbose, want)
	}
	// A schema behind the binary's makes it unready, naming the fix.
	if _, err := f.db.Pool().Exec(context.Background(), `UPDATE schema_version SET version = version - 1`); err != nil {
		t.Fatal(err)
	}
	status, _, body = f.do("GET", "/readyz?verbose=1", "", nil)
	if status != 503 || !strings.Contains(string(body), `"schema":{"status":"down","required":true,"reason":"not at version`) {
		t.Fatalf("readyz with an old schema: %d %s", status, body)
	}
	// A schema ahead of the binary's, as a rolling upgrade leaves the
	// previous release's replicas until they are replaced, is ready.
	if _, err := f.db.Pool().Exec(context.Background(), `UPDATE schema_version SET version = version + 2`); err != nil {
		t.Fatal(err)
	}
	status, _, body = f.do("GET", "/readyz?verbose=1", "", nil)
	if status != 200 || !strings.Contains(string(body), `"schema":{"status":"up","required":true}`) {
		t.Fatalf("readyz with a schema ahead of the binary: %d %s", status, body)
	}
	if _, err := f.db.Pool().Exec(context.Background(), `UPDATE schema_version SET version = version - 1`); err != nil {
		t.Fatal(err)
	}
	f.do("GET", "/api/v1/products", f.key, nil)
	metrics := f.scrape()
	if !strings.Contains(string(metrics), `commerce_http_requests_total{method="GET",route="/api/v1/products",status="200"} 1`) {
		t.Fatalf("metrics do not count the products request:\n%s", metrics)
	}
}
