package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// managementRoutes are the routes of docs/design.md#the-management-api (and stopping a
// bulk replay): method, path, scope, success status and the other statuses
// each documents.
var managementRoutes = []struct {
	method, path, scope string
	success             int
	statuses            []int
}{
	{"GET", "/api/v1/inbound/endpoints", "inbound:read", 200, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/inbound/endpoints/{id}", "inbound:read", 200, []int{401, 403, 404, 429}},
	{"PUT", "/api/v1/inbound/endpoints/{id}/verification", "inbound:write", 200, []int{400, 401, 403, 404, 409, 429}},
	{"GET", "/api/v1/inbound/receipts", "inbound:read", 200, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/inbound/receipts/{id}", "inbound:read", 200, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/inbound/receipts/{id}/replay", "inbound:replay", 200, []int{400, 401, 403, 404, 409, 429}},
	{"POST", "/api/v1/inbound/receipts/{id}/cancel", "inbound:replay", 200, []int{401, 403, 404, 409, 429}},
	{"POST", "/api/v1/inbound/replays", "inbound:replay", 202, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/inbound/replays/{id}", "inbound:read", 200, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/inbound/replays/{id}/stop", "inbound:replay", 200, []int{401, 403, 404, 409, 429}},
	{"GET", "/api/v1/webhooks/subscriptions", "webhooks:read", 200, []int{400, 401, 403, 429}},
	{"POST", "/api/v1/webhooks/subscriptions", "webhooks:write", 201, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/webhooks/subscriptions/{id}", "webhooks:read", 200, []int{401, 403, 404, 429}},
	{"PATCH", "/api/v1/webhooks/subscriptions/{id}", "webhooks:write", 200, []int{400, 401, 403, 404, 429}},
	{"DELETE", "/api/v1/webhooks/subscriptions/{id}", "webhooks:write", 204, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/webhooks/subscriptions/{id}/rotate-secret", "webhooks:write", 200, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/webhooks/subscriptions/{id}/recover", "webhooks:write", 202, []int{400, 401, 403, 404, 429}},
	{"GET", "/api/v1/webhooks/deliveries", "webhooks:read", 200, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/webhooks/deliveries/{id}", "webhooks:read", 200, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/webhooks/deliveries/{id}/resend", "webhooks:write", 202, []int{401, 403, 404, 429}},
	{"POST", "/api/v1/webhooks/deliveries/{id}/skip", "webhooks:write", 200, []int{401, 403, 404, 409, 429}},
	{"POST", "/api/v1/webhooks/resends", "webhooks:write", 202, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/webhooks/resends/{id}", "webhooks:read", 200, []int{401, 403, 404, 429}},
	{"GET", "/api/v1/events", "events:read", 200, []int{400, 401, 403, 429}},
	{"GET", "/api/v1/events/{id}", "events:read", 200, []int{401, 403, 404, 429}},
}

func TestManagementRoutesAreDocumentedWithTheirScopesAndStatuses(t *testing.T) {
	f := newFixture(t)
	doc, _ := f.openAPI(t)
	for _, r := range managementRoutes {
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
	for _, s := range []domain.Scope{domain.ScopeInboundRead, domain.ScopeInboundReplay, domain.ScopeInboundWrite, domain.ScopeWebhooksRead,
		domain.ScopeWebhooksWrite, domain.ScopeEventsRead} {
		if all, _ := domain.ParseScopes("all"); !slices.Contains(all, s) {
			t.Errorf("--scopes all lacks %s", s)
		}
	}
}

// managed is one record of each kind the management routes name.
type managed struct {
	endpoint, receipt, batch, subscription, delivery, event, resend uuid.UUID
}

// managedRecords makes an endpoint with a receipt, a bulk replay, a bulk resend, a
// subscription, an event and its delivery in the organisation.
func (f *fixture) managedRecords(t *testing.T, orgID uuid.UUID) managed {
	t.Helper()
	ctx := context.Background()
	var m managed
	owner, err := f.db.Owner(ctx, orgID)
	if err != nil {
		owner, err = f.db.AddUser(ctx, orgID, "owner@"+orgID.String()+".example", domain.UserOwner)
		if err != nil {
			t.Fatal(err)
		}
	}
	ep, err := f.db.CreateEndpoint(ctx, f.sealer, db.NewEndpoint{OrgID: orgID, AsEmail: owner.Email, Name: "erp", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	m.endpoint = ep.ID
	m.receipt, err = f.db.StoreReceipt(ctx, db.NewReceipt{OrgID: orgID, EndpointID: ep.ID, Action: domain.ActionERPOrderStatus,
		ReceivedAt: time.Now(), Body: []byte(`{"order_ref": "SO-9", "status": "processing"}`), Size: 44, BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	msg := "order SO-9 not found"
	if err := f.db.UpdateReceipt(ctx, orgID, m.receipt, db.ReceiptUpdate{Outcome: domain.OutcomeFailed, Error: &msg, Status: 422,
		Response: []byte(`{"error": "order SO-9 not found"}`)}); err != nil {
		t.Fatal(err)
	}
	if m.batch, _, err = f.db.CreateReplayBatch(ctx, db.NewReplayBatch{OrgID: orgID, Outcomes: []domain.Outcome{domain.OutcomeFailed}, CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	sub, err := f.db.CreateSubscription(ctx, f.sealer, db.NewSubscription{OrgID: orgID, URL: "https://hooks.example/in"})
	if err != nil {
		t.Fatal(err)
	}
	m.subscription = sub.ID
	if _, err := f.db.RelayEvents(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT w.id, w.event_id FROM webhook_deliveries w WHERE w.org_id = $1 LIMIT 1`, orgID).Scan(&m.delivery, &m.event); err != nil {
		t.Fatal(err)
	}
	if m.resend, _, err = f.db.CreateResendBatch(ctx, db.NewResendBatch{OrgID: orgID, CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m managed) path(p string) string {
	for _, r := range []struct {
		prefix string
		id     uuid.UUID
	}{
		{"/inbound/endpoints/", m.endpoint}, {"/inbound/receipts/", m.receipt}, {"/inbound/replays/", m.batch}, {"/webhooks/subscriptions/", m.subscription},
		{"/webhooks/deliveries/", m.delivery}, {"/events/", m.event}, {"/webhooks/resends/", m.resend},
	} {
		if strings.Contains(p, r.prefix+"{id}") {
			return strings.Replace(p, "{id}", r.id.String(), 1)
		}
	}
	return p
}

// bodyOf is a valid body for each write.
func bodyOf(method, path string) string {
	switch {
	case strings.HasSuffix(path, "/recover"):
		return `{"since": "2026-01-01T00:00:00Z"}`
	case path == "/api/v1/inbound/replays":
		return `{"outcome": "failed"}`
	case path == "/api/v1/webhooks/subscriptions":
		return `{"url": "https://hooks.example/other"}`
	case method == "PATCH":
		return `{"active": false}`
	case strings.HasSuffix(path, "/replay"):
		return `{"dry_run": true}`
	case strings.HasSuffix(path, "/verification"):
		return `{"kind": "none"}`
	}
	return `{}`
}

// Every management route refuses a key without its scope (403), and each
// route that names a record answers 404 for another organisation's.
func TestManagementRoutesRefuseWithoutScopeAndHideOtherOrganisations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other, _, err := f.db.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other Ltd", OwnerEmail: "owner@other.example"})
	if err != nil {
		t.Fatal(err)
	}
	theirs := f.managedRecords(t, other.ID)
	var granted []domain.Scope
	for _, s := range domain.AllScopes {
		if !strings.HasPrefix(string(s), "inbound:") && !strings.HasPrefix(string(s), "webhooks:") && !strings.HasPrefix(string(s), "events:") {
			granted = append(granted, s)
		}
	}
	unscoped := f.newKey(granted...)
	for _, r := range managementRoutes {
		path := theirs.path(r.path)
		status, _, body := f.do(r.method, path, unscoped, strings.NewReader(bodyOf(r.method, r.path)))
		if status != http.StatusForbidden || !strings.Contains(errorBody(t, body), r.scope) {
			t.Errorf("%s %s without %s: %d %s", r.method, r.path, r.scope, status, body)
		}
		if !strings.Contains(r.path, "{id}") {
			continue
		}
		status, _, body = f.do(r.method, path, f.key, strings.NewReader(bodyOf(r.method, r.path)))
		if status != http.StatusNotFound || errorBody(t, body) == "" {
			t.Errorf("%s %s with another organisation's id: %d %s", r.method, path, status, body)
		}
		if status, _, _ = f.do(r.method, strings.Replace(r.path, "{id}", "not-a-uuid", 1), f.key, strings.NewReader(bodyOf(r.method, r.path))); status != http.StatusNotFound {
			t.Errorf("%s %s with an id that is not a UUID: %d", r.method, r.path, status)
		}
	}
	// Nothing of theirs moved.
	if n := f.count(`SELECT count(*) FROM webhook_subscriptions WHERE org_id = $2 AND active AND $1::uuid IS NOT NULL`, other.ID); n != 1 {
		t.Fatalf("%d of their subscriptions active, want 1", n)
	}
	if n := f.count(`SELECT count(*) FROM audit_log WHERE $1::uuid IS NOT NULL`); n != 0 {
		t.Fatalf("%d audit entries after refused writes", n)
	}
}

// The reads answer exactly their documented shape, a dry-run replay shows
// the changes without making them, and the writes that need no workflow
// are recorded in the audit log.
func TestManagementReadsAndWritesWithoutWorkflows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ours := f.managedRecords(t, f.org.ID)
	_, validate := f.openAPI(t)
	for _, r := range managementRoutes {
		if r.method != "GET" {
			continue
		}
		path := ours.path(r.path)
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		status, hdr, body := f.do("GET", path, f.key, nil)
		if status != 200 {
			t.Errorf("GET %s: %d %s", path, status, body)
			continue
		}
		if err := validate(req, status, hdr, body); err != nil {
			t.Errorf("GET %s: the answer is not the documented shape: %v\n%s", path, err, body)
		}
	}
	status, _, body := f.do("GET", "/api/v1/inbound/receipts?outcome=failed&ref=SO-9", f.key, nil)
	if status != 200 || !strings.Contains(string(body), ours.receipt.String()) {
		t.Fatalf("receipts by ref: %d %s", status, body)
	}
	if status, _, body = f.do("GET", "/api/v1/inbound/receipts?ref=SO-404", f.key, nil); status != 200 || strings.Contains(string(body), ours.receipt.String()) {
		t.Fatalf("receipts by another ref: %d %s", status, body)
	}
	// References are searched in any case, and a receipt by its id; the
	// list items carry them.
	for _, ref := range []string{"so-9", ours.receipt.String()} {
		status, _, body = f.do("GET", "/api/v1/inbound/receipts?ref="+ref, f.key, nil)
		var page struct {
			Receipts []struct {
				ID   uuid.UUID `json:"id"`
				Refs []string  `json:"refs"`
			} `json:"receipts"`
		}
		if err := json.Unmarshal(body, &page); status != 200 || err != nil || len(page.Receipts) != 1 ||
			page.Receipts[0].ID != ours.receipt || !slices.Contains(page.Receipts[0].Refs, "SO-9") {
			t.Fatalf("receipts by ref %q: %d %s", ref, status, body)
		}
	}
	if status, _, body = f.do("GET", "/api/v1/inbound/receipts?outcome=nope", f.key, nil); status != 400 {
		t.Fatalf("an unknown outcome: %d %s", status, body)
	}

	f.seed(`{"orders": [{"number": "SO-9", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	events := f.count(`SELECT count(*) FROM events WHERE org_id = $1`)
	status, _, body = f.do("POST", "/api/v1/inbound/receipts/"+ours.receipt.String()+"/replay", f.key, strings.NewReader(`{"dry_run": true}`))
	if status != 200 || !strings.Contains(string(body), `"dry_run":true`) || !strings.Contains(string(body), `"to":"in_progress"`) ||
		!strings.Contains(string(body), `"receipt":null`) {
		t.Fatalf("dry run: %d %s", status, body)
	}
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-9'`) != "confirmed" ||
		f.count(`SELECT count(*) FROM events WHERE org_id = $1`) != events ||
		f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1`) != 1 {
		t.Fatal("the dry run wrote something")
	}

	if status, _, body = f.do("POST", "/api/v1/webhooks/subscriptions", f.key, strings.NewReader(`{"url": "http://127.0.0.1/x"}`)); status != 400 {
		t.Fatalf("a loopback URL: %d %s", status, body)
	}
	status, _, body = f.do("POST", "/api/v1/webhooks/subscriptions", f.key, strings.NewReader(`{"url": "https://hooks.example/b", "events": ["order.status_changed"]}`))
	if status != 201 || !strings.Contains(string(body), `"secret":"whsec_`) {
		t.Fatalf("create subscription: %d %s", status, body)
	}
	if status, _, body = f.do("POST", "/api/v1/webhooks/subscriptions", f.key, strings.NewReader(`{"url": "https://hooks.example/b", "events": ["nope"]}`)); status != 400 {
		t.Fatalf("an unknown event type: %d %s", status, body)
	}
	sub := "/api/v1/webhooks/subscriptions/" + ours.subscription.String()
	if status, _, body = f.do("PATCH", sub, f.key, strings.NewReader(`{"active": false, "events": ["customer.created"]}`)); status != 200 ||
		!strings.Contains(string(body), `"active":false`) || !strings.Contains(string(body), `"events":["customer.created"]`) {
		t.Fatalf("patch: %d %s", status, body)
	}
	if status, _, body = f.do("POST", sub+"/rotate-secret", f.key, nil); status != 200 || !strings.Contains(string(body), `"previous_secret_expires_at"`) {
		t.Fatalf("rotate: %d %s", status, body)
	}
	if status, _, body = f.do("DELETE", sub, f.key, nil); status != 204 || len(body) != 0 {
		t.Fatalf("delete: %d %s", status, body)
	}
	if status, _, _ = f.do("GET", sub, f.key, nil); status != 404 {
		t.Fatalf("deleted subscription: %d", status)
	}
	entries, err := f.db.ListAudit(ctx, f.org.ID, db.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Actor, "key:") {
			t.Errorf("audit entry %s by %q, want the key", e.Action, e.Actor)
		}
		actions = append(actions, e.Action+" "+e.TargetType)
	}
	want := []string{"subscription.delete subscription", "subscription.rotate_secret subscription", "subscription.update subscription",
		"subscription.create subscription"}
	if !slices.Equal(actions, want) {
		t.Fatalf("audit log %v, want %v", actions, want)
	}
}

// A subscription's delivery settings: set at creation or by PATCH, where
// null lifts the rate limit and an absent field stays as it is; each is
// checked against its range; list and detail carry them with the state
// and the backlog, in the documented shape.
func TestSubscriptionDeliverySettings(t *testing.T) {
	f := newFixture(t)
	_, validate := f.openAPI(t)
	status, _, body := f.do("POST", "/api/v1/webhooks/subscriptions", f.key, strings.NewReader(
		`{"url": "https://hooks.example/s", "rate_limit_per_second": 5, "max_in_flight": 2, "ordering": "per_entity"}`))
	var created struct {
		ID                 uuid.UUID `json:"id"`
		RateLimitPerSecond *int      `json:"rate_limit_per_second"`
		MaxInFlight        int       `json:"max_in_flight"`
		Ordering           string    `json:"ordering"`
		State              string    `json:"state"`
		Backlog            struct{ Pending, Failed, Held int }
	}
	if err := json.Unmarshal(body, &created); status != 201 || err != nil || created.RateLimitPerSecond == nil || *created.RateLimitPerSecond != 5 ||
		created.MaxInFlight != 2 || created.Ordering != "per_entity" || created.State != "healthy" {
		t.Fatalf("create with settings: %d %s", status, body)
	}
	sub := "/api/v1/webhooks/subscriptions/" + created.ID.String()
	patch := func(body string) (int, string) {
		status, _, b := f.do("PATCH", sub, f.key, strings.NewReader(body))
		return status, string(b)
	}
	// Absent fields stay; a rate is changed.
	if status, body := patch(`{"rate_limit_per_second": 7}`); status != 200 || !strings.Contains(body, `"rate_limit_per_second":7`) ||
		!strings.Contains(body, `"max_in_flight":2`) || !strings.Contains(body, `"ordering":"per_entity"`) {
		t.Fatalf("patch the rate: %d %s", status, body)
	}
	if status, body := patch(`{"max_in_flight": 3}`); status != 200 || !strings.Contains(body, `"rate_limit_per_second":7`) || !strings.Contains(body, `"max_in_flight":3`) {
		t.Fatalf("patch the cap, the rate left: %d %s", status, body)
	}
	// null lifts the limit.
	if status, body := patch(`{"rate_limit_per_second": null, "ordering": "none"}`); status != 200 || !strings.Contains(body, `"rate_limit_per_second":null`) ||
		!strings.Contains(body, `"ordering":"none"`) {
		t.Fatalf("patch the rate to null: %d %s", status, body)
	}
	for _, bad := range []string{`{"rate_limit_per_second": 0}`, `{"rate_limit_per_second": 1001}`, `{"max_in_flight": 0}`,
		`{"max_in_flight": 101}`, `{"ordering": "fifo"}`, `{"rate_limit_per_second": "5"}`} {
		if status, body := patch(bad); status != 400 && status != 422 || !strings.Contains(body, `"error"`) {
			t.Errorf("PATCH %s: %d %s, want a refusal", bad, status, body)
		}
	}
	if f.one(`SELECT coalesce(rate_limit_per_second::text, 'null') || ' ' || max_in_flight || ' ' || ordering FROM webhook_subscriptions WHERE id = $2 AND org_id = $1`,
		created.ID) != "null 3 none" {
		t.Fatal("a refused PATCH changed the subscription")
	}
	// The backlog counts the deliveries not delivered yet, by status.
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Pool().Exec(context.Background(), sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []string{"pending", "failed", "failed", "held", "held", "held", "succeeded", "exhausted"} {
		ev := uuid.New()
		exec(`INSERT INTO events (id, org_id, type, data) VALUES ($1, $2, 'customer.created', '{}')`, ev, f.org.ID)
		exec(`INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status) VALUES ($1, $2, $3, $4, $5)`,
			uuid.New(), f.org.ID, ev, created.ID, st)
	}
	exec(`UPDATE webhook_subscriptions SET failing_since = now() WHERE org_id = $1 AND id = $2`, f.org.ID, created.ID)
	for _, path := range []string{sub, "/api/v1/webhooks/subscriptions"} {
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		status, hdr, body := f.do("GET", path, f.key, nil)
		if err := validate(req, status, hdr, body); status != 200 || err != nil {
			t.Fatalf("GET %s: %d %v %s", path, status, err, body)
		}
		if !strings.Contains(string(body), `"state":"failing"`) || !strings.Contains(string(body), `"backlog":{"pending":1,"failed":2,"held":3}`) {
			t.Fatalf("GET %s: state or backlog %s", path, body)
		}
	}
}
