package db_test

import (
	"context"
	"testing"

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
