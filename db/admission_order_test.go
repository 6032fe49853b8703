package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// Under per_entity ordering, with one entity's 300 deliveries waiting
// behind the first (in flight), the statement that picks a subscription's
// deliveries to admit asks whether anything earlier is open with one index
// probe per waiting delivery, not a read of every open delivery of the
// entity for each: about two rows read per delivery, planned without
// statistics of the table and with them. (Joining each open delivery to
// its event, as the check did before event_at, read 300 for each: 90,000.)
func TestPerEntityAdmissionProbesOnceForEachWaitingDelivery(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerUpdated)
	ordering := db.OrderingPerEntity
	if _, err := f.d.UpdateSubscription(ctx, f.org, sub, db.SubscriptionChange{Ordering: &ordering}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	tx, err := f.d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := db.Emit(ctx, tx, f.org, domain.Event{Type: domain.EventCustomerUpdated, Data: map[string]string{"id": "A"},
			Entity: domain.Entity{Type: domain.EntityCustomer, ID: "A"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.relay()
	first := f.claim()
	if len(first) != 1 {
		t.Fatalf("admitted %d of one entity's %d deliveries, want its first alone", len(first), n)
	}
	if got := f.count(`SELECT count(*) FROM webhook_deliveries w JOIN events e ON e.id = w.event_id
		WHERE w.subscription_id = $1 AND w.event_at IS DISTINCT FROM e.created_at`, sub); got != 0 {
		t.Fatalf("%d deliveries without their event's time", got)
	}
	var earliest uuid.UUID
	if err := f.d.Pool().QueryRow(ctx, `SELECT w.id FROM webhook_deliveries w JOIN events e ON e.id = w.event_id
		WHERE w.subscription_id = $1 ORDER BY e.created_at, e.id LIMIT 1`, sub).Scan(&earliest); err != nil {
		t.Fatal(err)
	}
	if first[0].ID != earliest {
		t.Fatalf("admitted %s, want the entity's first in event order, %s", first[0].ID, earliest)
	}

	for _, analyzed := range []bool{false, true} {
		if analyzed {
			f.exec(`ANALYZE webhook_deliveries`)
		}
		plan, raw := f.explain(db.AdmitSQL(domain.EntityBlockers(ordering)), f.org, sub, domain.AwaitingAdmission, 100)
		if got, _ := plan["Actual Rows"].(float64); got != 0 {
			t.Fatalf("analyzed %v: the statement picked %.0f deliveries while the entity's first is in flight", analyzed, got)
		}
		if read := rowsRead(plan, "webhook_deliveries"); read > 3*n {
			t.Errorf("analyzed %v: the statement read %.0f deliveries for %d waiting behind one, want about two each; its plan: %s", analyzed, read, n-1, raw)
		}
	}
}

// explain runs sql with args under EXPLAIN ANALYZE in a transaction it
// rolls back, and returns the plan's top node and the whole answer.
func (f *opsFixture) explain(sql string, args ...any) (map[string]any, []byte) {
	f.t.Helper()
	ctx := context.Background()
	tx, err := f.d.Pool().Begin(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var raw []byte
	if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+sql, args...).Scan(&raw); err != nil {
		f.t.Fatal(err)
	}
	var plans []struct {
		Plan map[string]any `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		f.t.Fatalf("EXPLAIN answered %s (%v)", raw, err)
	}
	return plans[0].Plan, raw
}

// A delivery written without its event's time, as the release before
// migration 029 writes them while its replicas run on the new schema,
// takes it from its event; so does one written before the migration that
// opens again (a resend); the open ones the migration found have it.
func TestADeliveryWithoutItsEventTimeTakesItFromItsEvent(t *testing.T) {
	ctx := context.Background()
	u, conn, org, _ := olderSchema(t, 28, "upsert_customers")
	sub := uuid.New()
	if _, err := conn.Exec(ctx, `INSERT INTO webhook_subscriptions (id, org_id, url, secret_sealed) VALUES ($1, $2, 'https://r.example', '\x00')`, sub, org); err != nil {
		t.Fatal(err)
	}
	event := func(at time.Time) uuid.UUID {
		id := uuid.New()
		if _, err := conn.Exec(ctx, `INSERT INTO events (id, org_id, type, data, created_at) VALUES ($1, $2, 'customer.updated', '{}', $3)`, id, org, at); err != nil {
			t.Fatal(err)
		}
		return id
	}
	delivery := func(ev uuid.UUID, status string) uuid.UUID {
		id := uuid.New()
		if _, err := conn.Exec(ctx, `INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, entity) VALUES ($1, $2, $3, $4, $5, 'customer:A')`,
			id, org, ev, sub, status); err != nil {
			t.Fatal(err)
		}
		return id
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	open := delivery(event(base), "pending")
	done := delivery(event(base.Add(time.Second)), "succeeded")
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	eventAt := func(id uuid.UUID) *time.Time {
		t.Helper()
		var at *time.Time
		if err := conn.QueryRow(ctx, `SELECT event_at FROM webhook_deliveries WHERE id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := eventAt(open); at == nil || !at.Equal(base) {
		t.Fatalf("the open delivery the migration found has event_at %v, want its event's %v", at, base)
	}
	if at := eventAt(done); at != nil {
		t.Fatalf("a delivered one was given %v: the migration fills only the open ones", at)
	}
	// Opened again by a resend: it takes its event's time.
	if _, err := conn.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending' WHERE id = $1`, done); err != nil {
		t.Fatal(err)
	}
	if at := eventAt(done); at == nil || !at.Equal(base.Add(time.Second)) {
		t.Fatalf("the resent delivery has event_at %v, want %v", at, base.Add(time.Second))
	}
	// Written as the previous release writes one, without it.
	later := delivery(event(base.Add(2*time.Second)), "pending")
	if at := eventAt(later); at == nil || !at.Equal(base.Add(2*time.Second)) {
		t.Fatalf("a delivery written without event_at has %v, want %v", at, base.Add(2*time.Second))
	}
}
