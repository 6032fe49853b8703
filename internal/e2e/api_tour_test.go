package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// Every documented operation is called at least once with what an
// integrator sends, so that the suite's conformance check (TestMain) sees
// each answer: the reads by list and by id, the writes, the management
// routes, and a dry-run replay, whose receipt is null.
func TestEveryDocumentedOperationAnswersAsDocumented(t *testing.T) {
	f := newInbound(t)
	f.Outbox()
	key := f.apiKey()
	ok := func(want int, method, path, body string, out any) []byte {
		t.Helper()
		status, raw := f.call(method, path, key, body, out)
		if status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, raw, want)
		}
		return raw
	}
	// first returns the id of the first item of a list.
	first := func(path, list string) string {
		t.Helper()
		var page map[string][]struct {
			ID string `json:"id"`
		}
		ok(200, "GET", path, "", &page)
		if len(page[list]) == 0 {
			t.Fatalf("%s: no %s", path, list)
		}
		return page[list][0].ID
	}

	// Writes: a bulk import with rows the service refuses alone, customers,
	// a request, a stock movement.
	var bulk struct {
		Upserted int               `json:"upserted"`
		Errors   []domain.RowError `json:"errors"`
	}
	ok(200, "POST", "/api/v1/products/bulk", `{"products": [{"sku": "T-1", "title": "Tee"}, {"sku": 5, "title": "Five"}, "not a row", {"sku": "T-2", "title": "Tee 2", "colour": "red"}]}`, &bulk)
	if bulk.Upserted != 1 || len(bulk.Errors) != 3 {
		t.Fatalf("bulk: %+v", bulk)
	}
	ok(200, "POST", "/api/v1/customers", `{"customers": [{"company": "Tour Ltd", "email": "ann@tour.example", "external_id": "T-9"}]}`, nil)
	var request struct {
		ID string `json:"id"`
	}
	ok(201, "POST", "/api/v1/requests", `{"text": "Please quote 40 washers", "title": "Washers"}`, &request)
	product := first("/api/v1/products", "products")
	var locations struct {
		Locations []struct {
			ID string `json:"id"`
		} `json:"locations"`
	}
	ok(200, "GET", "/api/v1/stock/locations", "", &locations)
	if len(locations.Locations) == 0 {
		t.Fatal("no stock location")
	}
	movement := `{"kind": "receipt", "qty": 5, "product_id": "` + product + `", "location_id": "` + locations.Locations[0].ID + `"}`
	if status, raw := f.call("POST", "/api/v1/stock/movements", key, movement, nil); status != 201 && status != 200 {
		t.Fatalf("stock movement: %d %s", status, raw)
	}

	// Reads, by list and by id.
	for _, r := range []struct{ list, name string }{
		{"/api/v1/customers", "customers"}, {"/api/v1/quotes", "quotes"}, {"/api/v1/orders", "orders"},
		{"/api/v1/requests", "requests"}, {"/api/v1/stock/lines", "stock_lines"}, {"/api/v1/deliveries", "deliveries"},
		{"/api/v1/suppliers", "suppliers"}, {"/api/v1/purchase-orders", "purchase_orders"}, {"/api/v1/events", "events"},
	} {
		ok(200, "GET", r.list+"/"+first(r.list, r.name), "", nil)
	}
	ok(200, "GET", "/api/v1/stock/movements", "", nil)

	// Inbound management: an endpoint, its verification and mapping, its
	// receipts, a replay (a dry run first), a cancel and a bulk replay.
	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	ok(200, "GET", "/api/v1/inbound/endpoints", "", nil)
	ok(200, "GET", "/api/v1/inbound/endpoints/"+epID, "", nil)
	ep2URL, ep2, _ := f.endpoint(domain.ActionDeliveryStatus, false)
	ok(200, "PUT", "/api/v1/inbound/endpoints/"+ep2+"/verification", `{"kind": "none"}`, nil)
	mapping := "/api/v1/inbound/endpoints/" + epID + "/mapping"
	src, _ := json.Marshal(map[string]string{"source": "function map(post) { return {order_ref: post.body.so, status: post.body.st}; }"})
	ok(201, "PUT", mapping, string(src), nil)
	ok(200, "GET", mapping, "", nil)
	ok(200, "GET", mapping+"/versions", "", nil)
	ok(200, "POST", mapping+"/test", `{"body": {"so": "SO-1", "st": "processing"}, "dry_run": true}`, nil)
	applied := f.post(url, `{"so": "SO-1", "st": "processing"}`)
	if applied.status != 200 {
		t.Fatalf("mapped post: %d %s", applied.status, applied.raw)
	}
	ok(200, "DELETE", mapping, "", nil)
	ok(200, "GET", "/api/v1/inbound/receipts", "", nil)
	ok(200, "GET", "/api/v1/inbound/receipts/"+applied.receipt, "", nil)
	var dry struct {
		DryRun  bool            `json:"dry_run"`
		Receipt json.RawMessage `json:"receipt"`
	}
	ok(200, "POST", "/api/v1/inbound/receipts/"+applied.receipt+"/replay", `{"dry_run": true}`, &dry)
	if !dry.DryRun || string(dry.Receipt) != "null" {
		t.Fatalf("dry run: %+v", dry)
	}
	ok(200, "POST", "/api/v1/inbound/receipts/"+applied.receipt+"/replay", `{}`, nil)
	parked := f.post(ep2URL, `{"delivery_ref": "DN-TOUR", "status": "shipped"}`)
	if parked.status != 202 || parked.str("outcome") != "parked" {
		t.Fatalf("parked post: %d %s", parked.status, parked.raw)
	}
	ok(200, "POST", "/api/v1/inbound/receipts/"+parked.receipt+"/cancel", "", nil)
	var batch struct {
		ID string `json:"id"`
	}
	ok(202, "POST", "/api/v1/inbound/replays", `{"outcome": "cancelled", "dry_run": true}`, &batch)
	ok(200, "GET", "/api/v1/inbound/replays/"+batch.ID, "", nil)
	if status, raw := f.call("POST", "/api/v1/inbound/replays/"+batch.ID+"/stop", key, "", nil); status != 200 && status != 409 {
		t.Fatalf("stop: %d %s", status, raw)
	}

	// Webhooks: a subscription, its secret, its transformation, its
	// deliveries.
	var sub struct {
		ID string `json:"id"`
	}
	ok(201, "POST", "/api/v1/webhooks/subscriptions", `{"url": "http://127.0.0.1:9/hook", "events": ["order.status_changed"]}`, &sub)
	subPath := "/api/v1/webhooks/subscriptions/" + sub.ID
	ok(200, "GET", "/api/v1/webhooks/subscriptions", "", nil)
	ok(200, "GET", subPath, "", nil)
	ok(200, "PATCH", subPath, `{"active": true}`, nil)
	ok(200, "POST", subPath+"/rotate-secret", "", nil)
	ok(202, "POST", subPath+"/recover", `{"since": "`+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)+`"}`, nil)
	tr, _ := json.Marshal(map[string]string{"source": "function transform(event) { return {body: {type: event.type}}; }"})
	ok(201, "PUT", subPath+"/transformation", string(tr), nil)
	ok(200, "GET", subPath+"/transformation", "", nil)
	ok(200, "GET", subPath+"/transformation/versions", "", nil)
	ok(200, "POST", subPath+"/transformation/test", `{"event": {"type": "order.status_changed", "data": {"number": "SO-1"}}}`, nil)
	ok(200, "DELETE", subPath+"/transformation", "", nil)
	// An order moves: the subscription gets a delivery.
	if a := f.post(url, `{"order_ref": "SO-2", "status": "processing"}`); a.status != 200 {
		t.Fatalf("order status: %d %s", a.status, a.raw)
	}
	var deliveries struct {
		Deliveries []struct {
			ID string `json:"id"`
		} `json:"deliveries"`
	}
	f.eventually("a delivery to the subscription", func() bool {
		f.call("GET", "/api/v1/webhooks/deliveries?subscription_id="+sub.ID, key, "", &deliveries)
		return len(deliveries.Deliveries) > 0
	})
	delivery := "/api/v1/webhooks/deliveries/" + deliveries.Deliveries[0].ID
	ok(200, "GET", delivery, "", nil)
	for _, action := range []string{"/resend", "/skip"} {
		if status, raw := f.call("POST", delivery+action, key, "", nil); status >= 500 || (status >= 300 && !strings.Contains(string(raw), "error")) {
			t.Fatalf("%s: %d %s", action, status, raw)
		}
	}
	ok(204, "DELETE", subPath, "", nil)
}
