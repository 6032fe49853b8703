package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/client"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// TestCommittedDocumentIsTheServedOne keeps the client generated from
// openapi-3.0.json in step with the API: if an operation changes, this fails
// until `go generate ./client` is run.
func TestCommittedDocumentIsTheServedOne(t *testing.T) {
	srv := httptest.NewServer(api.New(api.Deps{BaseURL: "http://localhost:8080"}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/openapi-3.0.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	committed, err := os.ReadFile("openapi-3.0.json")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(served, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(committed, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("openapi-3.0.json differs from the served document: run `go generate ./client`")
	}
}

func TestGeneratedClientListsProductsAndReadsAQuote(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := domain.ParseSeed([]byte(`{"customers": [{"company": "Buyer Ltd"}],
		"products": [{"sku": "A-1", "title": "Washer", "price_minor": 12}, {"sku": "B-2", "title": "Bolt"}, {"sku": "C-3", "title": "Nut"}],
		"quotes": [{"number": "Q-1", "status": "sent", "customer": "Buyer Ltd", "valid_until": "2027-01-31",
		            "lines": [{"description": "Washer", "qty": 100, "unit_price_minor": 12, "discount_pct": 10}]}]}`))
	if _, err := d.Seed(ctx, org.ID, f); err != nil {
		t.Fatal(err)
	}
	_, key, _ := d.CreateAPIKey(ctx, org.ID, "client", []domain.Scope{domain.ScopeProductsRead, domain.ScopeQuotesRead})
	srv := httptest.NewServer(api.New(api.Deps{DB: d.DB, Cursors: cursor.New(make([]byte, 32))}).Handler())
	defer srv.Close()

	c, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(2)
	page1, err := c.ListProductsWithResponse(ctx, &client.ListProductsParams{Limit: &limit})
	if err != nil || page1.JSON200 == nil {
		t.Fatalf("list products: %v %s", err, page1.Body)
	}
	if len(page1.JSON200.Products) != 2 || page1.JSON200.Products[0].Sku != "A-1" || page1.JSON200.NextCursor == nil {
		t.Fatalf("first page: %s", page1.Body)
	}
	if p := page1.JSON200.Products[0].PriceMinor; p == nil || *p != 12 {
		t.Fatalf("price_minor = %v", p)
	}
	page2, err := c.ListProductsWithResponse(ctx, &client.ListProductsParams{Limit: &limit, Cursor: page1.JSON200.NextCursor})
	if err != nil || page2.JSON200 == nil || len(page2.JSON200.Products) != 1 || page2.JSON200.Products[0].Sku != "C-3" || page2.JSON200.NextCursor != nil {
		t.Fatalf("second page: %v %s", err, page2.Body)
	}

	quotes, err := c.ListQuotesWithResponse(ctx, &client.ListQuotesParams{})
	if err != nil || quotes.JSON200 == nil || len(quotes.JSON200.Quotes) != 1 {
		t.Fatalf("list quotes: %v %s", err, quotes.Body)
	}
	q, err := c.GetQuoteWithResponse(ctx, quotes.JSON200.Quotes[0].Id.String())
	if err != nil || q.JSON200 == nil {
		t.Fatalf("get quote: %v %s", err, q.Body)
	}
	if q.JSON200.Number != "Q-1" || len(q.JSON200.Lines) != 1 || q.JSON200.Lines[0].AmountMinor != 1080 ||
		q.JSON200.SubtotalMinor != 1080 || q.JSON200.VatMinor != 216 || q.JSON200.TotalMinor != 1296 {
		t.Fatalf("quote: %s", q.Body)
	}
	// The generated client sees the OpenAPI document's errors too.
	missing, err := c.GetQuoteWithResponse(ctx, "01a20000-0000-7000-8000-000000000000")
	if err != nil || missing.JSON404 == nil || missing.JSON404.Error == "" {
		t.Fatalf("unknown quote: %v %s", err, missing.Body)
	}
}

// The generated client posts an action's body to an inbound endpoint with
// the documented headers, and reads the documented error answer.
func TestGeneratedClientPostsToAnInboundEndpoint(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP",
		Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Deps{DB: d.DB, Cursors: cursor.New(make([]byte, 32)),
		Service: integrations.New(integrations.Deps{DB: d.DB, BaseURL: "http://localhost"})}).Handler())
	defer srv.Close()
	c, err := client.NewClientWithResponses(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var body client.PostInboundJSONBody
	ref := "SO-1001"
	if err := body.FromERPOrderStatusBody(client.ERPOrderStatusBody{OrderRef: &ref, Status: "shipped"}); err != nil {
		t.Fatal(err)
	}
	// A key of 256 characters is one too many: the header was sent and read.
	key := strings.Repeat("k", 256)
	resp, err := c.PostInboundWithResponse(ctx, ep.Token, &client.PostInboundParams{IdempotencyKey: &key},
		client.PostInboundJSONRequestBody(body))
	if err != nil || resp.JSON400 == nil || !strings.Contains(resp.JSON400.Error, "Idempotency-Key") {
		t.Fatalf("inbound post: %v %s", err, resp.Body)
	}
}
