package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// specRoutes is the spec's route table (Part 4): method, path, scope.
var specRoutes = []struct{ method, path, scope string }{
	{"GET", "/api/v1/products", "products:read"},
	{"GET", "/api/v1/quotes", "quotes:read"},
	{"GET", "/api/v1/quotes/{id}", "quotes:read"},
	{"GET", "/api/v1/orders", "orders:read"},
	{"GET", "/api/v1/orders/{id}", "orders:read"},
	{"GET", "/api/v1/stock/lines", "stock:read"},
	{"GET", "/api/v1/stock/lines/{id}", "stock:read"},
	{"GET", "/api/v1/stock/locations", "stock:read"},
	{"GET", "/api/v1/stock/movements", "stock:read"},
	{"GET", "/api/v1/deliveries", "deliveries:read"},
	{"GET", "/api/v1/deliveries/{id}", "deliveries:read"},
	{"GET", "/api/v1/suppliers", "suppliers:read"},
	{"GET", "/api/v1/suppliers/{id}", "suppliers:read"},
	{"GET", "/api/v1/purchase-orders", "purchase_orders:read"},
	{"GET", "/api/v1/purchase-orders/{id}", "purchase_orders:read"},
	{"GET", "/api/v1/customers", "customers:read"},
	{"GET", "/api/v1/customers/{id}", "customers:read"},
	{"GET", "/api/v1/requests", "requests:read"},
	{"GET", "/api/v1/requests/{id}", "requests:read"},
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
		want := []int{200, 401, 403, 429, 500}
		if strings.HasSuffix(r.path, "{id}") || strings.Contains(r.path, "/stock/") || strings.Contains(r.path, "deliveries") ||
			strings.Contains(r.path, "suppliers") || strings.Contains(r.path, "purchase-orders") {
			want = append(want, 404)
		}
		if !strings.HasSuffix(r.path, "{id}") && r.path != "/api/v1/stock/locations" {
			want = append(want, 400)
		}
		for _, code := range want {
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
		if op.Responses.Status(http.StatusUnprocessableEntity) != nil {
			t.Errorf("%s %s documents 422, which validation never answers", r.method, r.path)
		}
	}
	errSchema := doc.Components.Schemas["ErrorBody"].Value
	if len(errSchema.Properties) != 1 || errSchema.Properties["error"] == nil {
		t.Fatalf("Error object is %+v", errSchema.Properties)
	}
}
