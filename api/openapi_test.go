package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/domain"
)

// specRoutes is the REST API's route table (README.md, "The REST API"):
// method, path, scope, and the statuses documented for the operation
// besides 200, plus
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
		t.Fatalf("the REST API's table has 23 routes, this test lists %d", len(specRoutes))
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

// servedDocuments fetches the OpenAPI 3.1 document and its 3.0 rendering
// from a server and loads and validates both with kin-openapi (examples
// included): the checks every generator relies on.
func servedDocuments(t *testing.T) (doc31, doc30 *openapi3.T) {
	t.Helper()
	srv := httptest.NewServer(api.New(api.Deps{BaseURL: "http://localhost:8080"}).Handler())
	t.Cleanup(srv.Close)
	load := func(path, version string) *openapi3.T {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(raw)
		if err != nil {
			t.Fatalf("%s does not load: %v", path, err)
		}
		if err := doc.Validate(loader.Context); err != nil {
			t.Fatalf("%s is not valid: %v", path, err)
		}
		if doc.OpenAPI != version {
			t.Fatalf("%s is OpenAPI %s, want %s", path, doc.OpenAPI, version)
		}
		return doc
	}
	doc31 = load("/api/v1/openapi.json", "3.1.0")
	doc30 = load("/api/v1/openapi-3.0.json", "3.0.3")
	if yaml30 := load("/api/v1/openapi-3.0.yaml", "3.0.3"); len(yaml30.Paths.Map()) != len(doc30.Paths.Map()) {
		t.Fatalf("the 3.0 YAML rendering has %d paths, the JSON one %d", len(yaml30.Paths.Map()), len(doc30.Paths.Map()))
	}
	return doc31, doc30
}

// eachOperation calls fn with every operation of the document's paths and
// webhooks.
func eachOperation(doc *openapi3.T, fn func(where string, op *openapi3.Operation)) {
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			fn(method+" "+path, op)
		}
	}
	for name, item := range doc.Webhooks {
		for method, op := range item.Operations() {
			fn("webhook "+method+" "+name, op)
		}
	}
}

func TestInboundOperationDeclaresNoSecuritySchemeAndItsHeaders(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	for version, doc := range map[string]*openapi3.T{"3.1": doc31, "3.0": doc30} {
		op := doc.Paths.Find("/api/in/{token}").Post
		if op.Security == nil || len(*op.Security) != 0 {
			t.Errorf("%s: inbound security = %v, want [] (the token is the credential)", version, op.Security)
		}
		for _, name := range []string{"X-Service-Signature", "Idempotency-Key"} {
			p := op.Parameters.GetByInAndName("header", name)
			if p == nil || p.Required || p.Description == "" {
				t.Errorf("%s: inbound header %s = %+v, want an optional, described header", version, name, p)
			}
		}
	}
}

func TestEveryUsedTagIsDeclaredWithADescription(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	for version, doc := range map[string]*openapi3.T{"3.1": doc31, "3.0": doc30} {
		eachOperation(doc, func(where string, op *openapi3.Operation) {
			if len(op.Tags) == 0 {
				t.Errorf("%s %s has no tag", version, where)
			}
			for _, name := range op.Tags {
				if tag := doc.Tags.Get(name); tag == nil || tag.Description == "" {
					t.Errorf("%s %s: tag %q is not declared with a description", version, where, name)
				}
			}
		})
	}
}

func TestInfoNamesLicenseAndContact(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	for version, doc := range map[string]*openapi3.T{"3.1": doc31, "3.0": doc30} {
		if doc.Info.License == nil || doc.Info.License.Name == "" || doc.Info.Contact == nil || doc.Info.Contact.Name == "" {
			t.Errorf("%s: info license %+v, contact %+v", version, doc.Info.License, doc.Info.Contact)
		}
	}
}

func TestStockMovementDocumentsItsRepeatAnswerAndBodyLimit(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	for version, doc := range map[string]*openapi3.T{"3.1": doc31, "3.0": doc30} {
		op := doc.Paths.Find("/api/v1/stock/movements").Post
		created := op.Responses.Status(http.StatusCreated).Value.Content.Get("application/json")
		repeat := op.Responses.Status(http.StatusOK).Value.Content.Get("application/json")
		if repeat == nil || repeat.Schema == nil || repeat.Schema.Ref != created.Schema.Ref {
			t.Errorf("%s: the 200 of a repeated idempotency key documents no body, or not the 201's", version)
		}
		tooLarge := op.Responses.Status(http.StatusRequestEntityTooLarge)
		if tooLarge == nil || !strings.HasSuffix(tooLarge.Value.Content.Get("application/json").Schema.Ref, "/ErrorBody") {
			t.Errorf("%s: no 413 documented", version)
		}
	}
}

// OpenAPI 3.0.3 allows scopes in a security requirement only for oauth2
// and openIdConnect schemes; 3.1 allows role names for the others, so the
// 3.1 document keeps each operation's scope there.
func TestOpenAPI30BearerRequirementsNameNoScopes(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	for path, item := range doc30.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security == nil {
				continue
			}
			for _, req := range *op.Security {
				if scopes, ok := req["bearer"]; ok && len(scopes) != 0 {
					t.Errorf("3.0 %s %s: bearer requirement names %v", method, path, scopes)
				}
			}
			scope, _ := op.Extensions["x-required-scope"].(string)
			if len(*op.Security) > 0 && (scope == "" || !strings.Contains(op.Description, "`"+scope+"`")) {
				t.Errorf("3.0 %s %s: the scope is in neither x-required-scope nor the description", method, path)
			}
			if want := doc31.Paths.Find(path).GetOperation(method).Security; len(*op.Security) > 0 && (*want)[0]["bearer"][0] != scope {
				t.Errorf("3.1 %s %s: bearer requirement %v, want %s", method, path, *want, scope)
			}
		}
	}
}

func TestWebhooksDescribeEveryEventType(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	if len(doc30.Webhooks) != 0 {
		t.Errorf("the 3.0 rendering has webhooks, which 3.0 does not allow")
	}
	if len(doc31.Webhooks) != len(domain.EventTypes) {
		t.Errorf("%d webhooks for %d event types", len(doc31.Webhooks), len(domain.EventTypes))
	}
	for _, eventType := range domain.EventTypes {
		item := doc31.Webhooks[eventType]
		if item == nil || item.Post == nil {
			t.Errorf("no webhook for %s", eventType)
			continue
		}
		body := item.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
		if typ := body.Properties["type"]; typ == nil || len(typ.Value.Enum) != 1 || typ.Value.Enum[0] != eventType {
			t.Errorf("%s: the envelope's type is not the event type", eventType)
		}
		if data := body.Properties["data"]; data == nil || len(data.Value.Properties) == 0 {
			t.Errorf("%s: the envelope's data has no schema", eventType)
		}
		for _, name := range []string{"X-Service-Signature", "X-Service-Event-Id", "webhook-id", "webhook-timestamp", "webhook-signature"} {
			if item.Post.Parameters.GetByInAndName("header", name) == nil {
				t.Errorf("%s: no %s header", eventType, name)
			}
		}
	}
}

func TestInboundUpsertLimitsAreTheDomainOnes(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	for version, doc := range map[string]*openapi3.T{"3.1": doc31, "3.0": doc30} {
		for schema, want := range map[string]int{"InboundProductsBody": domain.MaxInboundProducts, "InboundCustomersBody": domain.MaxInboundCustomers} {
			s := doc.Components.Schemas[schema]
			var items *openapi3.SchemaRef
			if s != nil {
				items = s.Value.Properties[map[string]string{"InboundProductsBody": "products", "InboundCustomersBody": "customers"}[schema]]
			}
			if items == nil || items.Value.MaxItems == nil || *items.Value.MaxItems != uint64(want) {
				t.Errorf("%s: %s does not allow at most %d items", version, schema, want)
			}
		}
		// The actions' bodies, and a mapped endpoint's any JSON.
		var bodies []string
		anyJSON := 0
		for _, alt := range doc.Paths.Find("/api/in/{token}").Post.RequestBody.Value.Content.Get("application/json").Schema.Value.AnyOf {
			if alt.Ref == "" {
				anyJSON++
				continue
			}
			bodies = append(bodies, alt.Ref[strings.LastIndex(alt.Ref, "/")+1:])
		}
		if !slices.Contains(bodies, "InboundProductsBody") || !slices.Contains(bodies, "InboundCustomersBody") || len(bodies) != len(domain.Actions) || anyJSON != 1 {
			t.Errorf("%s: inbound bodies %v", version, bodies)
		}
	}
}

// Every example body of the inbound route, in the documents and in the
// docs, is valid for the documented body, and each named example is its
// action's shape, as the service reads it; the delivery shown in the docs
// is valid for its event's webhook.
func TestDocumentedExampleBodiesValidate(t *testing.T) {
	doc31, doc30 := servedDocuments(t)
	webhooksMD, err := os.ReadFile("../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	// The JSON bodies of the docs' shell examples are inbound posts.
	docs, _ := filepath.Glob("../docs/*.md")
	docBodies := map[string]string{}
	for _, name := range append(docs, "../README.md") {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:body=|-d )'(\{[^']*\})'`).FindAllSubmatch(text, -1) {
			docBodies[string(m[1])] = filepath.Base(name)
		}
	}
	if len(docBodies) < 2 {
		t.Fatalf("inbound bodies found in the docs: %v", docBodies)
	}
	for version, doc := range map[string]*openapi3.T{"3.1": doc31, "3.0": doc30} {
		media := doc.Paths.Find("/api/in/{token}").Post.RequestBody.Value.Content.Get("application/json")
		if len(media.Examples) != len(domain.Actions) {
			t.Errorf("%s: %d inbound examples for %d actions", version, len(media.Examples), len(domain.Actions))
		}
		for name, ex := range media.Examples {
			body, _ := json.Marshal(ex.Value.Value)
			if err := media.Schema.Value.VisitJSON(jsonValue(t, body)); err != nil {
				t.Errorf("%s: example %s is not a documented body: %v", version, name, err)
			}
			own := doc.Components.Schemas[map[domain.Action]string{
				domain.ActionCreateRequest: "CreateRequestBody", domain.ActionUpsertCustomers: "InboundCustomersBody",
				domain.ActionUpsertProducts: "InboundProductsBody", domain.ActionERPOrderStatus: "ERPOrderStatusBody",
				domain.ActionOrderInvoice: "OrderInvoiceBody", domain.ActionPurchaseOrderAck: "POAckBody",
				domain.ActionSupplierInvoice: "SupplierInvoiceBody", domain.ActionDeliveryStatus: "DeliveryStatusBody",
			}[domain.Action(name)]]
			if own == nil {
				t.Errorf("%s: example %s names no action", version, name)
				continue
			}
			if err := own.Value.VisitJSON(jsonValue(t, body)); err != nil {
				t.Errorf("%s: example %s is not its action's documented shape: %v", version, name, err)
			}
			if _, err := domain.ParseInbound(domain.Action(name), body); err != nil {
				t.Errorf("example %s is refused by its action: %v", name, err)
			}
		}
		for body, file := range docBodies {
			if err := media.Schema.Value.VisitJSON(jsonValue(t, []byte(body))); err != nil {
				t.Errorf("%s: %s's inbound body %s is not a documented body: %v", version, file, body, err)
			}
		}
	}
	// The delivery shown in docs/webhooks.md: headers, a blank line, the body.
	m := regexp.MustCompile("(?s)POST /hooks/commerce HTTP/1.1\n(.*?)\n\n(.*?)\n```").FindSubmatch(webhooksMD)
	if m == nil {
		t.Fatal("no delivery found in docs/webhooks.md")
	}
	eventType := regexp.MustCompile(`X-Service-Event-Type: (\S+)`).FindSubmatch(m[1])
	if eventType == nil || doc31.Webhooks[string(eventType[1])] == nil {
		t.Fatalf("the delivery in docs/webhooks.md names no documented event type")
	}
	schema := doc31.Webhooks[string(eventType[1])].Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	if err := schema.VisitJSON(jsonValue(t, m[2])); err != nil {
		t.Errorf("docs/webhooks.md's delivery is not a documented %s body: %v", eventType[1], err)
	}
}

// The events the service writes to the outbox are the bodies its webhooks
// document.
func TestEmittedEventsMatchTheirWebhookSchemas(t *testing.T) {
	doc31, _ := servedDocuments(t)
	s := newStockFixture(t)
	ctx := context.Background()
	for _, c := range []struct{ path, body string }{
		{"/api/v1/customers", `{"customers": [{"company": "Buyer Ltd", "email": "ann@buyer.example", "external_id": "C-1"}]}`},
		{"/api/v1/customers", `{"customers": [{"company": "Buyer Limited", "external_id": "C-1"}]}`},
		{"/api/v1/products/bulk", `{"products": [{"sku": "A-1", "title": "Washer"}]}`},
		{"/api/v1/requests", `{"text": "Please quote 500 washers."}`},
		{"/api/v1/stock/movements", `{"kind": "receipt", "product_id": "` + s.product.String() + `", "qty": 5}`},
	} {
		if status, b := s.post(c.path, c.body); status >= 300 {
			t.Fatalf("POST %s: %d %s", c.path, status, b)
		}
	}
	if status, _, b := s.postInbound(s.erpEndpoint(t).Token, `{"status": "shipped"}`); status != http.StatusBadRequest {
		t.Fatalf("inbound: %d %s", status, b)
	}
	rows, err := s.db.Pool().Query(ctx, `SELECT json_build_object('id', id, 'type', type,
		'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', data)::text
		FROM events WHERE org_id = $1`, s.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range events {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(e), &head)
		seen[head.Type] = true
		item := doc31.Webhooks[head.Type]
		if item == nil {
			t.Errorf("event type %s has no webhook", head.Type)
			continue
		}
		if err := item.Post.RequestBody.Value.Content.Get("application/json").Schema.Value.VisitJSON(jsonValue(t, []byte(e))); err != nil {
			t.Errorf("%s is not its documented body: %v", e, err)
		}
	}
	for _, want := range []string{domain.EventCustomerCreated, domain.EventCustomerUpdated, domain.EventProductsUpserted,
		domain.EventRequestCreated, domain.EventStockMovementCreated, domain.EventInboundReceiptFailed} {
		if !seen[want] {
			t.Errorf("no %s event was written", want)
		}
	}
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// OpenAPI 3.0 readers ignore what stands beside a $ref: the 3.0 rendering
// has none (a described reference is allOf the reference).
func TestOpenAPI30HasNoSiblingsBesideARef(t *testing.T) {
	raw, err := api.New(api.Deps{BaseURL: "http://localhost:8080"}).OpenAPI30()
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["$ref"]; ok && len(v) > 1 {
				t.Errorf("%s: $ref beside %d other keywords", path, len(v)-1)
			}
			for k, child := range v {
				walk(child, path+"/"+k)
			}
		case []any:
			for i, child := range v {
				walk(child, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(doc, "")
}
