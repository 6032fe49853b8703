package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// An event names its entity in the feed, and each delivery made of it
// keeps the entity; a products batch is its own entity, named by the
// event's id.
func TestEventsNameTheirEntityAndDeliveriesKeepIt(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe()
	if _, err := f.d.UpsertCustomers(ctx, f.org, []domain.CustomerInput{{Company: "Entity Ltd"}}); err != nil {
		t.Fatal(err)
	}
	var customer string
	if err := f.d.Pool().QueryRow(ctx, `SELECT id::text FROM customers WHERE org_id = $1`, f.org).Scan(&customer); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.RelayEvents(ctx, 100); err != nil {
		t.Fatal(err)
	}
	events, err := f.d.ListEvents(ctx, f.org, db.EventFilter{Type: domain.EventCustomerCreated}, db.Page{Limit: 10})
	if err != nil || len(events) != 1 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	e := events[0]
	want := domain.Entity{Type: domain.EntityCustomer, ID: customer}
	if e.Entity == nil || *e.Entity != want {
		t.Fatalf("the event is about %+v, want %+v", e.Entity, want)
	}
	var entity string
	if err := f.d.Pool().QueryRow(ctx, `SELECT entity FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND event_id = $3`,
		f.org, sub, e.ID).Scan(&entity); err != nil || entity != want.Key() {
		t.Fatalf("the delivery's entity %q (%v), want %q", entity, err, want.Key())
	}
}

// Events of one entity are ordered as they were written, not as their
// transactions began: a transaction that began first but wrote its event
// after another committed one about the same entity (it waited for the
// entity's lock) comes after it. Otherwise the relay could deliver the
// later event before the earlier one existed, and per-entity ordering
// would send them out of order.
func TestEventsOfAnEntityAreOrderedAsWritten(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	entity := domain.Entity{Type: domain.EntityCustomer, ID: "C-1"}
	first, err := f.d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if _, err := first.Exec(ctx, `SELECT 1`); err != nil { // the transaction has begun
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	second, err := f.d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Emit(ctx, second, f.org, domain.Event{Type: domain.EventCustomerUpdated, Data: map[string]string{"n": "written first"}, Entity: entity}); err != nil {
		t.Fatal(err)
	}
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Emit(ctx, first, f.org, domain.Event{Type: domain.EventCustomerUpdated, Data: map[string]string{"n": "written second"}, Entity: entity}); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := f.d.Pool().Query(ctx, `SELECT data ->> 'n' FROM events WHERE org_id = $1 AND entity_id = 'C-1' ORDER BY created_at, id`, f.org)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "written first" || got[1] != "written second" {
		t.Fatalf("the entity's events in order: %v; want them as written", got)
	}
}
