package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// specRoutes is the spec's route table (Part 4): method, path, scope, and
// the statuses the spec lists for the operation (Part 7) besides 200, plus
// 404 for add-on routes (Part 1) and 400 where a query or body is read.
var specRoutes = []struct {
	method, path, scope string
	statuses            []int
}{
	{"GET", "/api/v1/products", "products:read", []int{400, 401, 403, 429}},
	{"POST", "/api/v1/products/bulk", "products:write", []int{400, 401, 402, 403, 409, 413, 422, 429}},
	{"GET", "/api/v1/quotes", "quotes:read", []int{400, 401, 403, 429}},
	{"GET", "/api/v1/quotes/{id}", "quotes:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/orders", "orders:read", []int{400, 401, 403, 429}},
	{"GET", "/api/v1/orders/{id}", "orders:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/stock/lines", "stock:read", []int{400, 401, 403, 404, 429}},
	{"GET", "/api/v1/stock/lines/{id}", "stock:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/stock/locations", "stock:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/stock/movements", "stock:read", []int{400, 401, 403, 404, 429}},
	{"POST", "/api/v1/stock/movements", "stock:write", []int{400, 401, 403, 404, 409, 422, 429}},
	{"GET", "/api/v1/deliveries", "deliveries:read", []int{400, 401, 403, 404, 429}},
	{"GET", "/api/v1/deliveries/{id}", "deliveries:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/suppliers", "suppliers:read", []int{400, 401, 403, 404, 429}},
	{"GET", "/api/v1/suppliers/{id}", "suppliers:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/purchase-orders", "purchase_orders:read", []int{400, 401, 403, 404, 429}},
	{"GET", "/api/v1/purchase-orders/{id}", "purchase_orders:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/customers", "customers:read", []int{400, 401, 403, 429}},
	{"POST", "/api/v1/customers", "customers:write", []int{400, 401, 403, 409, 422, 429}},
	{"GET", "/api/v1/customers/{id}", "customers:read", []int{401, 403, 404, 429}},
	{"GET", "/api/v1/requests", "requests:read", []int{400, 401, 403, 429}},
	{"POST", "/api/v1/requests", "requests:write", []int{400, 401, 403, 409, 422, 429}},
	{"GET", "/api/v1/requests/{id}", "requests:read", []int{401, 403, 404, 429}},
}

func TestOpenAPIDescribesEveryRouteWithItsScopeAndStatuses(t *testing.T) {
	f := newFixture(t)
	doc, _ := f.openAPI(t) // loads and validates with kin-openapi
	if doc.Info.Version != "1.0.0" || !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %s, info.version %s", doc.OpenAPI, doc.Info.Version)
	}
	scheme := doc.Components.SecuritySchemes["bearer"]
	if scheme == nil || scheme.Value.Type != "http" || scheme.Value.Scheme != "bearer" {
		t.Fatalf("no bearer security scheme: %+v", scheme)
	}
	for _, r := range specRoutes {
		item := doc.Paths.Find(r.path)
		if item == nil {
			t.Errorf("%s %s is not in the document", r.method, r.path)
			continue
		}
		op := item.GetOperation(r.method)
		if op == nil {
			t.Errorf("%s %s is not in the document", r.method, r.path)
			continue
		}
		if op.Security == nil || len(*op.Security) != 1 || len((*op.Security)[0]["bearer"]) != 1 || (*op.Security)[0]["bearer"][0] != r.scope {
			t.Errorf("%s %s: security %v, want bearer with %s", r.method, r.path, op.Security, r.scope)
		}
		if op.Extensions["x-required-scope"] != r.scope {
			t.Errorf("%s %s: x-required-scope %v", r.method, r.path, op.Extensions["x-required-scope"])
		}
		success := 200
		if r.method == "POST" && (r.path == "/api/v1/requests" || r.path == "/api/v1/stock/movements") {
			success = 201
		}
		for _, code := range append([]int{success, 500}, r.statuses...) {
			resp := op.Responses.Status(code)
			if resp == nil {
				t.Errorf("%s %s: no %d answer documented", r.method, r.path, code)
				continue
			}
			if code >= 400 {
				schema := resp.Value.Content.Get("application/json").Schema
				if schema == nil || !strings.HasSuffix(schema.Ref, "/ErrorBody") {
					t.Errorf("%s %s: %d is not the Error object", r.method, r.path, code)
				}
			}
		}
		if tooMany := op.Responses.Status(http.StatusTooManyRequests); tooMany != nil && tooMany.Value.Headers["Retry-After"] == nil {
			t.Errorf("%s %s: 429 without Retry-After", r.method, r.path)
		}
		if r.scope != "" {
			ok := op.Responses.Status(success).Value.Headers
			if ok["RateLimit"] == nil || ok["RateLimit-Policy"] == nil {
				t.Errorf("%s %s: %d without the RateLimit headers", r.method, r.path, success)
			}
		}
		if r.method == "POST" {
			if p := op.Parameters.GetByInAndName("header", "Idempotency-Key"); p == nil || p.Description == "" {
				t.Errorf("%s %s: the Idempotency-Key header is not documented", r.method, r.path)
			}
			if op.Responses.Status(success).Value.Headers["Idempotent-Replayed"] == nil {
				t.Errorf("%s %s: %d without the Idempotent-Replayed header", r.method, r.path, success)
			}
		}
		if op.Responses.Status(http.StatusUnprocessableEntity) != nil && !slices.Contains(r.statuses, 422) {
			t.Errorf("%s %s documents 422, which validation never answers", r.method, r.path)
		}
	}
	if len(specRoutes) != 23 {
		t.Fatalf("the spec's table has 23 routes, this test lists %d", len(specRoutes))
	}
	bulk := doc.Paths.Find("/api/v1/products/bulk").Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	if bulk.Properties["products"] == nil || bulk.Properties["schema_id"] == nil {
		t.Errorf("the bulk body is not documented: %v", bulk.Properties)
	}
	errSchema := doc.Components.Schemas["ErrorBody"].Value
	if len(errSchema.Properties) != 1 || errSchema.Properties["error"] == nil {
		t.Fatalf("Error object is %+v", errSchema.Properties)
	}
}
