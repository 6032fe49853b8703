package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// transformationRoutes are the routes of a subscription's transformation:
// method, path, scope, success status and the other statuses each
// documents.
var transformationRoutes = []struct {
	method, path, scope string
	success             int
	statuses            []int
}{
	{"PUT", "/api/v1/webhooks/subscriptions/{id}/transformation", "webhooks:write", 201, []int{400, 401, 403, 404, 429}},
	{"GET", "/api/v1/webhooks/subscriptions/{id}/transformation", "webhooks:read", 200, []int{401, 403, 404, 429}},
	{"DELETE", "/api/v1/webhooks/subscriptions/{id}/transformation", "webhooks:write", 200, []int{401, 403, 404, 429}},
	{"GET", "/api/v1/webhooks/subscriptions/{id}/transformation/versions", "webhooks:read", 200, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/webhooks/subscriptions/{id}/transformation/test", "webhooks:read", 200, []int{400, 401, 403, 404, 429}},
}

func TestTransformationRoutesAreDocumentedWithTheirScopesAndStatuses(t *testing.T) {
	f := newFixture(t)
	doc, _ := f.openAPI(t)
	for _, r := range transformationRoutes {
		item := doc.Paths.Find(r.path)
		if item == nil || item.GetOperation(r.method) == nil {
			t.Errorf("%s %s is not in the document", r.method, r.path)
			continue
		}
		op := item.GetOperation(r.method)
		if op.Security == nil || len(*op.Security) != 1 || !slices.Equal((*op.Security)[0]["bearer"], []string{r.scope}) ||
			op.Extensions["x-required-scope"] != r.scope {
			t.Errorf("%s %s: security %v, want bearer with %s", r.method, r.path, op.Security, r.scope)
		}
		if len(op.Tags) != 1 || op.Description == "" || op.Summary == "" {
			t.Errorf("%s %s: tags %v, summary %q", r.method, r.path, op.Tags, op.Summary)
		}
		for _, code := range append([]int{r.success, 500}, r.statuses...) {
			resp := op.Responses.Status(code)
			if resp == nil {
				t.Errorf("%s %s: no %d answer documented", r.method, r.path, code)
				continue
			}
			if code >= 400 && !strings.HasSuffix(resp.Value.Content.Get("application/json").Schema.Ref, "/ErrorBody") {
				t.Errorf("%s %s: %d is not the Error object", r.method, r.path, code)
			}
		}
	}
}

// transformationFixture is a server with a subscription of the
// organisation and one of another's.
type transformationFixture struct {
	*fixture
	validate    func(req *http.Request, status int, hdr http.Header, body []byte) error
	sub, theirs string
}

func newTransformationFixture(t *testing.T) *transformationFixture {
	f := newFixture(t)
	_, validate := f.openAPI(t)
	ctx := context.Background()
	ours, err := f.db.CreateSubscription(ctx, f.sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://hooks.example/t"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := f.db.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other Ltd", OwnerEmail: "owner@other.example"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := f.db.CreateSubscription(ctx, f.sealer, db.NewSubscription{OrgID: other.ID, URL: "https://hooks.example/o"})
	if err != nil {
		t.Fatal(err)
	}
	return &transformationFixture{fixture: f, validate: validate,
		sub:    "/api/v1/webhooks/subscriptions/" + ours.ID.String() + "/transformation",
		theirs: "/api/v1/webhooks/subscriptions/" + theirs.ID.String() + "/transformation"}
}

// call sends a request with a key and checks the answer against the
// document; it returns the status and the body.
func (f *transformationFixture) call(method, path, key string, body any) (int, []byte) {
	f.t.Helper()
	var raw string
	if body != nil {
		b, _ := json.Marshal(body)
		raw = string(b)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, nil)
	var status int
	var hdr http.Header
	var out []byte
	if body != nil {
		status, hdr, out = f.do(method, path, key, strings.NewReader(raw))
	} else {
		status, hdr, out = f.do(method, path, key, nil)
	}
	if status != http.StatusForbidden && status != http.StatusUnauthorized {
		if err := f.validate(req, status, hdr, out); err != nil {
			f.t.Errorf("%s %s: the answer is not the documented shape: %v\n%s", method, path, err, out)
		}
	}
	return status, out
}

type versionAnswer struct {
	Version   int     `json:"version"`
	SHA256    *string `json:"sha256"`
	Source    *string `json:"source"`
	CreatedBy string  `json:"created_by"`
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// A transformation's versions: each PUT makes one, GET reads the current
// one with its source, DELETE makes one without source (GET then shows
// source null), the list shows them all newest first without source; a
// source that does not compile, or is too long, is refused naming why.
// Each write is in the audit log.
func TestTransformationVersions(t *testing.T) {
	f := newTransformationFixture(t)
	if status, body := f.call("GET", f.sub, f.key, nil); status != 404 || errorBody(t, body) != "the subscription has no transformation" {
		t.Fatalf("GET before any: %d %s", status, body)
	}
	status, body := f.call("PUT", f.sub, f.key, map[string]string{"source": "function transform(event) {\n  return {body: event;\n}"})
	if msg := errorBody(t, body); status != 400 || !strings.HasPrefix(msg, "source does not compile: SyntaxError: ") || !strings.Contains(msg, "(line 2:") {
		t.Fatalf("a source that does not compile: %d %s", status, body)
	}
	long := "function transform(e) { return null; }\n//" + strings.Repeat("x", 64<<10)
	if status, body := f.call("PUT", f.sub, f.key, map[string]string{"source": long}); status != 400 || !strings.Contains(errorBody(t, body), "over the limit of 65536") {
		t.Fatalf("a source over 64 KiB: %d %.200s", status, body)
	}

	first := "function transform(event) { return {body: event}; }"
	second := "function transform(event) { return {body: {id: event.id}}; }"
	for i, src := range []string{first, second} {
		status, body := f.call("PUT", f.sub, f.key, map[string]string{"source": src})
		v := decode[versionAnswer](t, body)
		if status != 201 || v.Version != i+1 || v.SHA256 == nil || len(*v.SHA256) != 64 || !strings.HasPrefix(v.CreatedBy, "key:") ||
			strings.Contains(string(body), `"source"`) {
			t.Fatalf("PUT %d: %d %s", i+1, status, body)
		}
	}
	status, body = f.call("GET", f.sub, f.key, nil)
	if v := decode[versionAnswer](t, body); status != 200 || v.Version != 2 || v.Source == nil || *v.Source != second {
		t.Fatalf("GET: %d %s", status, body)
	}
	status, body = f.call("DELETE", f.sub, f.key, nil)
	if v := decode[versionAnswer](t, body); status != 200 || v.Version != 3 || v.SHA256 != nil {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	status, body = f.call("GET", f.sub, f.key, nil)
	if v := decode[versionAnswer](t, body); status != 200 || v.Version != 3 || v.Source != nil || !strings.Contains(string(body), `"source":null`) {
		t.Fatalf("GET after DELETE: %d %s", status, body)
	}
	if status, body = f.call("DELETE", f.sub, f.key, nil); status != 404 {
		t.Fatalf("DELETE again: %d %s", status, body)
	}
	status, body = f.call("GET", f.sub+"/versions", f.key, nil)
	list := decode[struct{ Versions []versionAnswer }](t, body)
	if status != 200 || len(list.Versions) != 3 || list.Versions[0].Version != 3 || list.Versions[2].Version != 1 ||
		list.Versions[0].SHA256 != nil || list.Versions[1].SHA256 == nil || strings.Contains(string(body), `"source"`) {
		t.Fatalf("versions: %d %s", status, body)
	}

	entries, err := f.db.ListAudit(context.Background(), f.org.ID, db.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if !slices.Equal(actions, []string{"subscription.transformation", "subscription.transformation", "subscription.transformation"}) {
		t.Fatalf("audit log %v", actions)
	}
}

type testAnswer struct {
	Result     string            `json:"result"`
	Body       json.RawMessage   `json:"body"`
	Headers    map[string]string `json:"headers"`
	Error      *string           `json:"error"`
	Logs       []string          `json:"logs"`
	DurationMS *float64          `json:"duration_ms"`
}

// The test route runs a source, or the current transformation, on a
// stored event or one given, and answers transformed, skipped or failed
// with what it logged; it stores nothing.
func TestTransformationTest(t *testing.T) {
	f := newTransformationFixture(t)
	f.seed(`{"customers": [{"company": "Zoë & Co"}]}`)
	if _, err := f.db.UpsertCustomers(context.Background(), f.org.ID, []domain.CustomerInput{{Company: "Stored Ltd"}}); err != nil {
		t.Fatal(err)
	}
	var eventID uuid.UUID
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT id FROM events WHERE org_id = $1 AND type = 'customer.created'
		ORDER BY created_at DESC LIMIT 1`, f.org.ID).Scan(&eventID); err != nil {
		t.Fatal(err)
	}
	reshape := `function transform(event) {
		console.log("type", event.type);
		if (event.data.company === "skip me") return null;
		return {body: {name: event.data.company, at: new Date().toISOString()}, headers: {"X-Partner": "p1"}};
	}`
	given := map[string]any{"type": "customer.created", "created_at": "2026-03-01T10:00:00Z", "data": map[string]any{"company": "Given"}}

	test := func(body map[string]any) (int, testAnswer, []byte) {
		t.Helper()
		status, raw := f.call("POST", f.sub+"/test", f.key, body)
		if status != 200 {
			return status, testAnswer{}, raw
		}
		return status, decode[testAnswer](t, raw), raw
	}

	status, a, raw := test(map[string]any{"source": reshape, "event": given})
	if status != 200 || a.Result != "transformed" || string(a.Body) != `{"name":"Given","at":"2026-03-01T10:00:00.000Z"}` ||
		a.Headers["X-Partner"] != "p1" || !slices.Equal(a.Logs, []string{"type customer.created"}) || a.DurationMS == nil || a.Error != nil {
		t.Fatalf("transformed: %d %s", status, raw)
	}
	status, a, raw = test(map[string]any{"source": reshape, "event_id": eventID})
	if status != 200 || a.Result != "transformed" || !strings.Contains(string(a.Body), `"name":"Stored Ltd"`) {
		t.Fatalf("a stored event: %d %s", status, raw)
	}
	status, a, raw = test(map[string]any{"source": `function transform(e) { return {body: "plain " + e.data.company}; }`, "event": given})
	if status != 200 || a.Result != "transformed" || string(a.Body) != `"plain Given"` || len(a.Headers) != 0 {
		t.Fatalf("a string body: %d %s", status, raw)
	}
	skip := map[string]any{"type": "customer.created", "data": map[string]any{"company": "skip me"}}
	status, a, raw = test(map[string]any{"source": reshape, "event": skip})
	if status != 200 || a.Result != "skipped" || a.Body != nil || len(a.Logs) != 1 {
		t.Fatalf("skipped: %d %s", status, raw)
	}
	status, a, raw = test(map[string]any{"source": "function transform(e) {\n  console.log('before');\n  return e.data.nope.x;\n}", "event": given})
	if status != 200 || a.Result != "failed" || a.Error == nil ||
		!strings.HasPrefix(*a.Error, "transformation failed: TypeError: ") || !strings.Contains(*a.Error, "(line 3:") ||
		!slices.Equal(a.Logs, []string{"before"}) {
		t.Fatalf("failed: %d %s", status, raw)
	}
	status, a, raw = test(map[string]any{"source": `function transform(e) { return {body: e, headers: {"Webhook-Id": "x"}}; }`, "event": given})
	if status != 200 || a.Result != "failed" || a.Error == nil || *a.Error != "transformation failed: header Webhook-Id is not allowed" {
		t.Fatalf("a protected header: %d %s", status, raw)
	}

	// Without source: the current transformation, once there is one.
	if status, _, raw = test(map[string]any{"event": given}); status != 400 || !strings.Contains(errorBody(t, raw), "no transformation") {
		t.Fatalf("no source, no transformation: %d %s", status, raw)
	}
	if status, body := f.call("PUT", f.sub, f.key, map[string]string{"source": reshape}); status != 201 {
		t.Fatalf("PUT: %d %s", status, body)
	}
	if status, a, raw = test(map[string]any{"event": skip}); status != 200 || a.Result != "skipped" {
		t.Fatalf("the current transformation: %d %s", status, raw)
	}

	for name, body := range map[string]map[string]any{
		"does not compile": {"source": "function (", "event": given},
		"both events":      {"source": reshape, "event": given, "event_id": eventID},
		"no event":         {"source": reshape},
		"unknown type":     {"source": reshape, "event": map[string]any{"type": "nope", "data": map[string]any{}}},
	} {
		if status, _, raw := test(body); status != 400 || errorBody(t, raw) == "" {
			t.Errorf("%s: %d %s", name, status, raw)
		}
	}
	if status, _, raw := test(map[string]any{"source": reshape, "event_id": uuid.New()}); status != 404 {
		t.Errorf("an unknown event: %d %s", status, raw)
	}
	if n := f.count(`SELECT count(*) FROM mapping_versions WHERE org_id = $1`); n != 1 {
		t.Fatalf("%d versions stored, want the one PUT made", n)
	}
}

// Writes need webhooks:write, reads and tests webhooks:read; another
// organisation's subscription is not found.
func TestTransformationScopes(t *testing.T) {
	f := newTransformationFixture(t)
	readOnly := f.newKey(domain.ScopeWebhooksRead)
	var granted []domain.Scope
	for _, s := range domain.AllScopes {
		if !strings.HasPrefix(string(s), "webhooks:") {
			granted = append(granted, s)
		}
	}
	none := f.newKey(granted...)
	put := map[string]string{"source": "function transform(e) { return {body: e}; }"}
	testBody := map[string]any{"source": put["source"], "event": map[string]any{"type": "customer.created", "data": map[string]any{}}}
	bodies := map[string]any{"PUT": put, "POST": testBody}
	for _, r := range transformationRoutes {
		path := strings.Replace(strings.Replace(r.path, "/api/v1/webhooks/subscriptions/{id}/transformation", f.sub, 1), "{id}", "", 1)
		if status, body := f.call(r.method, path, none, bodies[r.method]); status != 403 || !strings.Contains(errorBody(t, body), r.scope) {
			t.Errorf("%s %s without webhooks scopes: %d %s", r.method, r.path, status, body)
		}
		status, body := f.call(r.method, path, readOnly, bodies[r.method])
		if r.scope == "webhooks:write" && (status != 403 || !strings.Contains(errorBody(t, body), r.scope)) {
			t.Errorf("%s %s with webhooks:read: %d %s", r.method, r.path, status, body)
		}
		if r.scope == "webhooks:read" && status == 403 {
			t.Errorf("%s %s with webhooks:read: %d %s", r.method, r.path, status, body)
		}
		theirs := strings.Replace(path, f.sub, f.theirs, 1)
		if status, body := f.call(r.method, theirs, f.key, bodies[r.method]); status != 404 {
			t.Errorf("%s %s of another organisation: %d %s", r.method, r.path, status, body)
		}
	}
	if n := f.count(`SELECT count(*) FROM mapping_versions WHERE $1::uuid IS NOT NULL`); n != 0 {
		t.Fatalf("%d versions after refused writes", n)
	}
}

// A delivery's answer names the transformation version its last attempt
// ran, and (read alone) the body it sent; each attempt names its version.
func TestDeliveryShowsItsTransformation(t *testing.T) {
	f := newTransformationFixture(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	subID := strings.TrimSuffix(strings.TrimPrefix(f.sub, "/api/v1/webhooks/subscriptions/"), "/transformation")
	ev, delivery := uuid.New(), uuid.New()
	exec(`INSERT INTO events (id, org_id, type, data) VALUES ($1, $2, 'customer.created', '{}')`, ev, f.org.ID)
	exec(`INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, transformation_version, body_sent)
		VALUES ($1, $2, $3, $4, 'succeeded', 1, 2, 'name=Zoë')`, delivery, f.org.ID, ev, subID)
	exec(`INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, started_at, duration_ms, status_code, transformation_version)
		VALUES ($1, $2, $3, 1, now(), 12, 204, 2)`, uuid.New(), f.org.ID, delivery)

	status, body := f.call("GET", "/api/v1/webhooks/deliveries/"+delivery.String(), f.key, nil)
	if status != 200 || !strings.Contains(string(body), `"transformation_version":2,"body_sent":"name=Zoë"`) ||
		!strings.Contains(string(body), `"response_excerpt":null,"transformation_version":2`) {
		t.Fatalf("GET delivery: %d %s", status, body)
	}
	status, body = f.call("GET", "/api/v1/webhooks/deliveries", f.key, nil)
	if status != 200 || !strings.Contains(string(body), `"transformation_version":2`) || strings.Contains(string(body), "body_sent") {
		t.Fatalf("list deliveries: %d %s", status, body)
	}
}
