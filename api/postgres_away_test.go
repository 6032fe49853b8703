package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/health"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// While Postgres is away (killed, or the network to it cut) the API answers
// 503 with Retry-After, reads included, and its readiness says Postgres is
// down; once it is back, the next request is served, within 5 seconds.
func TestWhilePostgresIsAwayTheAPIAnswers503AndReadinessSaysSo(t *testing.T) {
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := d.CreateAPIKey(context.Background(), org.ID, "test", domain.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := d.CreateEndpoint(context.Background(), nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example",
		Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	proxy := testdb.NewProxy(t, testdb.Target(t, d.URL))
	pd, err := db.Connect(context.Background(), proxy.Through(t, d.URL), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	sealer, err := secrets.NewSealer([]byte("fedcba9876543210fedcba9876543210"))
	if err != nil {
		t.Fatal(err)
	}
	log := zap.NewNop()
	s := api.New(api.Deps{DB: pd, Logger: log, Cursors: cursor.New([]byte("0123456789abcdef0123456789abcdef")), BaseURL: "http://localhost",
		Service: integrations.New(integrations.Deps{DB: pd, Log: log, Sealer: sealer, BaseURL: "http://localhost"})})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	if status, _, body := get("/api/v1/products"); status != 200 {
		t.Fatalf("before: %d %s", status, body)
	}

	proxy.Away()
	for range 3 { // the connections the pool held, then new ones refused
		status, h, body := get("/api/v1/products")
		if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || strings.Contains(body, "connect") {
			t.Fatalf("while Postgres is away: %d, Retry-After %q, %s", status, h.Get("Retry-After"), body)
		}
	}
	// An inbound post too: nothing can be recorded, so the sender is told
	// to come back.
	resp, err := http.Post(srv.URL+"/api/in/"+ep.Token, "application/json", strings.NewReader(`{"order_ref": "SO-1", "status": "processing"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("an inbound post while Postgres is away: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	status, _, body := get("/readyz?verbose=1")
	var a health.Answer
	if err := json.Unmarshal([]byte(body), &a); err != nil || status != http.StatusServiceUnavailable || a.Checks["postgres"].Status != "down" {
		t.Fatalf("readyz while Postgres is away: %d %s", status, body)
	}

	proxy.Back(t)
	back := time.Now()
	for {
		status, _, body := get("/api/v1/products")
		if status == 200 {
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("5 s after Postgres came back: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("first read served %v after Postgres came back", time.Since(back).Round(time.Millisecond))
	if status, _, body := get("/readyz"); status != 200 {
		t.Fatalf("readyz once Postgres is back: %d %s", status, body)
	}
}
