package api_test

import (
	"bytes"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// fuzzPoster posts bodies to one route with keys in turn, so the rate limit
// never stands between the fuzzer and the handler.
type fuzzPoster struct {
	f    *fixture
	keys []string
	n    atomic.Int64
}

func newFuzzPoster(tb testing.TB) *fuzzPoster {
	f := newFixture(tb)
	p := &fuzzPoster{f: f}
	for range 50 {
		p.keys = append(p.keys, f.newKey(domain.AllScopes...))
	}
	return p
}

// post sends body and fails on a server error: any input must get a 2xx or
// a 4xx with the API's error body.
func (p *fuzzPoster) post(t *testing.T, path string, body []byte) {
	req, _ := http.NewRequest("POST", p.f.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.keys[p.n.Add(1)%int64(len(p.keys))])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode >= 500 {
		t.Fatalf("%s answered %d to %q: %s", path, resp.StatusCode, body, b.Bytes())
	}
	if resp.StatusCode >= 400 {
		errorBody(t, b.Bytes())
	}
}

func FuzzBulkProductsBody(f *testing.F) {
	for _, seed := range []string{
		`{"products": [{"sku": "A", "title": "Washer", "price_minor": 12, "attrs": {"m": 8}}]}`,
		`{"products": [{"sku": "A"}, {"sku": "A", "title": "x"}, "x", 1, null, [], {}]}`,
		`{"products": [{"sku": 1e30, "title": true, "price_minor": 1.5, "stock_qty": -1, "lead_time_days": 1e12}]}`,
		`{"products": [], "schema_id": "not-a-uuid"}`,
		`{"products": [{"sku": "\u0000", "title": "\ud800", "currency": "gbp", "status": ""}]}`,
		`{"products": null}`,
		`[]`,
		`{`,
	} {
		f.Add([]byte(seed))
	}
	p := newFuzzPoster(f)
	f.Fuzz(func(t *testing.T, body []byte) { p.post(t, "/api/v1/products/bulk", body) })
}

func FuzzCustomersBody(f *testing.F) {
	for _, seed := range []string{
		`{"customers": [{"company": "Acme", "email": "a@acme.example", "phone": "1", "external_id": "E1"}]}`,
		`{"customers": [{"company": "Acme", "email": "a@gmail.com"}, {"company": "Acme", "email": "a@gmail.com"}]}`,
		`{"customers": [{"company": ""}]}`,
		`{"customers": [{"company": "x", "email": "@"}]}`,
		`{"customers": [{"company": "x", "external_id": ""}]}`,
		`{"customers": {}}`,
		`{"customers": [1, "a", null]}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	p := newFuzzPoster(f)
	f.Fuzz(func(t *testing.T, body []byte) { p.post(t, "/api/v1/customers", body) })
}
