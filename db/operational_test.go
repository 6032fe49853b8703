package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// opsFixture is an organisation whose events, deliveries and receipts the
// operational events are read from.
type opsFixture struct {
	t   *testing.T
	d   *testdb.DB
	org uuid.UUID
}

func (f *opsFixture) subscribe(events ...string) uuid.UUID {
	f.t.Helper()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	s, err := f.d.CreateSubscription(context.Background(), sealer, db.NewSubscription{OrgID: f.org, URL: "https://erp.example.com/hooks/" + uuid.NewString() + "?apikey=secret",
		EventTypes: events})
	if err != nil {
		f.t.Fatal(err)
	}
	_ = sealer
	return s.ID
}

func (f *opsFixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.d.Pool().Exec(context.Background(), sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

// events lists the events of a type, oldest first, with their data.
func (f *opsFixture) events(typ string) []map[string]any {
	f.t.Helper()
	rows, err := f.d.Pool().Query(context.Background(), `SELECT data FROM events WHERE org_id = $1 AND type = $2 ORDER BY created_at, id`, f.org, typ)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var raw []byte
		var m map[string]any
		if err := rows.Scan(&raw); err != nil {
			f.t.Fatal(err)
		}
		_ = json.Unmarshal(raw, &m)
		out = append(out, m)
	}
	return out
}

// deliveriesTo lists the event types delivered to a subscription.
func (f *opsFixture) deliveriesTo(sub uuid.UUID) []string {
	f.t.Helper()
	rows, err := f.d.Pool().Query(context.Background(), `SELECT e.type FROM webhook_deliveries w JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		WHERE w.org_id = $1 AND w.subscription_id = $2 ORDER BY e.created_at, e.id`, f.org, sub)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

func (f *opsFixture) relay() {
	f.t.Helper()
	for {
		n, err := f.d.RelayEvents(context.Background(), 100)
		if err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func newOpsFixture(t *testing.T) *opsFixture {
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Acme", Currency: "EUR", OwnerEmail: "o@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	return &opsFixture{t: t, d: d, org: org.ID}
}

func TestSubscriptionFailingRecoveredAndExhaustedEvents(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	down := f.subscribe(domain.EventCustomerCreated, domain.EventSubscriptionFailing)
	watcher := f.subscribe(domain.EventSubscriptionFailing, domain.EventSubscriptionRecovered, domain.EventDeliveryExhausted)
	everything := f.subscribe()
	// Six business events, each delivered to down and to everything.
	for range 6 {
		f.exec(`INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', '{}')`, f.org)
	}
	f.relay()
	rows, err := f.d.Pool().Query(ctx, `SELECT id FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 ORDER BY created_at, id`, f.org, down)
	if err != nil {
		t.Fatal(err)
	}
	var deliveries []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		_ = rows.Scan(&id)
		deliveries = append(deliveries, id)
	}
	rows.Close()
	if len(deliveries) != 6 {
		t.Fatalf("%d deliveries to the subscription, want 6", len(deliveries))
	}
	status503, why := 503, "the receiver answered 503"
	attempt := func(delivery uuid.UUID, n int, status domain.WebhookStatus) {
		t.Helper()
		rec := db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: delivery, Attempt: n, StartedAt: time.Now(), Status: status}
		if status != domain.WebhookSucceeded {
			rec.StatusCode, rec.Error = &status503, &why
		}
		if _, err := f.d.RecordWebhookAttempt(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	// Four failures: not yet failing; the fourth recorded twice (a retried
	// activity) counts once.
	for i := range 4 {
		attempt(deliveries[i], 1, domain.WebhookFailed)
	}
	attempt(deliveries[3], 1, domain.WebhookFailed)
	if n := len(f.events(domain.EventSubscriptionFailing)); n != 0 {
		t.Fatalf("%d failing events after four failures", n)
	}
	attempt(deliveries[4], 1, domain.WebhookFailed)
	attempt(deliveries[5], 1, domain.WebhookFailed)
	failing := f.events(domain.EventSubscriptionFailing)
	if len(failing) != 1 || failing[0]["subscription_id"] != down.String() || failing[0]["consecutive_failures"] != float64(5) ||
		failing[0]["last_status"] != float64(503) || failing[0]["last_error"] != why || failing[0]["since"] == nil {
		t.Fatalf("failing events %v; want one, at the fifth failure", failing)
	}
	// The events name the subscription by its origin, never its path or
	// query string (which carry the receiver's credentials here).
	if failing[0]["url"] != "https://erp.example.com" {
		t.Fatalf("the failing event's url %v; want the origin only", failing[0]["url"])
	}
	s, err := f.d.GetSubscription(ctx, f.org, down)
	if err != nil || s.FailingSince == nil || s.ConsecutiveFailures != 6 || s.LastFailureStatus == nil || *s.LastFailureStatus != 503 {
		t.Fatalf("subscription %+v, %v; want failing after 6 failures", s, err)
	}

	// A success: recovered, with the deliveries still waiting: failed, or
	// held (one marked so here, as a retry held while failing is).
	f.exec(`UPDATE webhook_deliveries SET status = 'held' WHERE id = $1`, deliveries[5])
	attempt(deliveries[0], 2, domain.WebhookSucceeded)
	recovered := f.events(domain.EventSubscriptionRecovered)
	if len(recovered) != 1 || recovered[0]["held_deliveries"] != float64(5) || recovered[0]["failing_since"] != failing[0]["since"] {
		t.Fatalf("recovered events %v", recovered)
	}
	if recovered[0]["url"] != "https://erp.example.com" {
		t.Fatalf("the recovered event's url %v; want the origin only", recovered[0]["url"])
	}
	if s, _ := f.d.GetSubscription(ctx, f.org, down); s.FailingSince != nil || s.ConsecutiveFailures != 0 {
		t.Fatalf("subscription after a success %+v", s)
	}
	// A last attempt that fails: exhausted.
	attempt(deliveries[1], 5, domain.WebhookExhausted)
	exhausted := f.events(domain.EventDeliveryExhausted)
	if len(exhausted) != 1 || exhausted[0]["delivery_id"] != deliveries[1].String() || exhausted[0]["attempts"] != float64(5) ||
		exhausted[0]["event_type"] != "customer.created" || exhausted[0]["subscription_id"] != down.String() {
		t.Fatalf("exhausted events %v", exhausted)
	}

	// Operational events go to the subscription that names them, never to
	// one for every event type, nor to the one they are about (down names
	// webhook.subscription.failing, but this one is its own).
	f.relay()
	want := []string{domain.EventSubscriptionFailing, domain.EventSubscriptionRecovered, domain.EventDeliveryExhausted}
	if got := f.deliveriesTo(watcher); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("the watcher got %v, want %v", got, want)
	}
	for _, typ := range f.deliveriesTo(everything) {
		if typ != domain.EventCustomerCreated {
			t.Fatalf("an every-event subscription got %s", typ)
		}
	}
	for _, typ := range f.deliveriesTo(down) {
		if typ != domain.EventCustomerCreated {
			t.Fatalf("the failing subscription got its own %s", typ)
		}
	}
}

func TestEndpointFailingAndRecoveredEvents(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	ep, err := f.d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: f.org, AsEmail: "o@acme.example", Name: "erp", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	post := func(refused bool) uuid.UUID {
		t.Helper()
		r := db.NewReceipt{OrgID: f.org, EndpointID: ep.ID, Action: domain.ActionERPOrderStatus, ReceivedAt: time.Now(), Body: []byte(`{}`), Size: 2}
		if refused {
			r.Refusal = &db.Refusal{Stage: domain.StageShape, Status: 400, Message: "status is required"}
		}
		id, err := f.d.StoreReceipt(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Nine refused posts: under ten in the window, not failing.
	for range 9 {
		post(true)
	}
	if n := len(f.events(domain.EventEndpointFailing)); n != 0 {
		t.Fatalf("%d failing events after nine posts", n)
	}
	post(true)
	post(true)
	failing := f.events(domain.EventEndpointFailing)
	if len(failing) != 1 || failing[0]["endpoint_id"] != ep.ID.String() || failing[0]["window_posts"] != float64(10) ||
		failing[0]["failed_posts"] != float64(10) || failing[0]["name"] != "erp" {
		t.Fatalf("failing events %v; want one, at the tenth failed post", failing)
	}
	if e, _ := f.d.Endpoint(ctx, f.org, ep.ID); e.FailingSince == nil {
		t.Fatal("the endpoint does not read failing")
	}
	// Applied posts: still more than half failed until the twelfth.
	for i := range 11 {
		id := post(false)
		if err := f.d.UpdateReceipt(ctx, f.org, id, db.ReceiptUpdate{Outcome: domain.OutcomeApplied}); err != nil {
			t.Fatal(err)
		}
		if n := len(f.events(domain.EventEndpointRecovered)); (n == 1) != (i == 10) {
			t.Fatalf("after %d applied posts (11 failed): %d recovered events", i+1, n)
		}
	}
	if e, _ := f.d.Endpoint(ctx, f.org, ep.ID); e.FailingSince != nil {
		t.Fatal("the endpoint still reads failing")
	}

	// Failing again, then no more posts: once the failures are older than
	// the window, judging again recovers it without a post.
	for range 12 {
		post(true)
	}
	if n := len(f.events(domain.EventEndpointFailing)); n != 2 {
		t.Fatalf("%d failing events, want a second spell", n)
	}
	if n, err := f.d.RejudgeFailingEndpoints(ctx); err != nil || n != 0 {
		t.Fatalf("judged again within the window: %d recovered, %v", n, err)
	}
	f.exec(`UPDATE inbound_receipts SET received_at = received_at - interval '20 minutes' WHERE org_id = $1`, f.org)
	if n, err := f.d.RejudgeFailingEndpoints(ctx); err != nil || n != 1 {
		t.Fatalf("judged again past the window: %d recovered, %v", n, err)
	}
	if n := len(f.events(domain.EventEndpointRecovered)); n != 2 {
		t.Fatalf("%d recovered events, want 2", n)
	}
	f.relay()
}
