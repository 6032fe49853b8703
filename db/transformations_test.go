package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// A delivery its transformation skipped is over, not failed: under
// per_entity ordering its entity's next delivery goes, and the place it
// held among the attempts at once is given back.
func TestADeliverySkippedByItsTransformationLetsItsEntityGoOn(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerUpdated)
	ordering, one := db.OrderingPerEntity, 1
	if _, err := f.d.UpdateSubscription(ctx, f.org, sub, db.SubscriptionChange{Ordering: &ordering, MaxInFlight: &one}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tx, err := f.d.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Emit(ctx, tx, f.org, domain.Event{Type: domain.EventCustomerUpdated, Data: map[string]string{"id": "A"},
			Entity: domain.Entity{Type: domain.EntityCustomer, ID: "A"}}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f.relay()
	first := f.claim()
	if len(first) != 1 || len(f.claim()) != 0 {
		t.Fatalf("admitted %d, want the entity's first alone", len(first))
	}
	if err := f.d.SkipWebhookDeliveryByTransformation(ctx, f.org, first[0].ID, 3); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE id = $1 AND status = 'skipped' AND transformation_version = 3
		AND last_error = 'skipped by the subscription''s transformation (version 3)' AND attempts = 0`, first[0].ID); n != 1 {
		t.Fatal("the delivery does not read skipped by its transformation")
	}
	if n := f.count(`SELECT count(*) FROM webhook_in_flight WHERE delivery_id = $1`, first[0].ID); n != 0 {
		t.Fatal("the skipped delivery still holds its place")
	}
	if second := f.claim(); len(second) != 1 || second[0].ID == first[0].ID {
		t.Fatalf("admitted %d after the first was skipped, want the entity's second", len(second))
	}
}

// An attempt that made no request (its transformation failed) counts for
// its delivery, exhausting it on the last, but not in its subscription's
// run of failures, which is its receiver's.
func TestAnAttemptWithoutARequestLeavesTheSubscriptionsHealth(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerCreated)
	f.customersCreated(domain.SubscriptionFailingAfter + 1)
	refs := f.claim()
	if len(refs) != domain.SubscriptionFailingAfter+1 {
		t.Fatalf("%d deliveries", len(refs))
	}
	why, version := "transformation failed: Error: nope (line 1:30)", 1
	for _, r := range refs {
		if _, err := f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: r.ID, Attempt: 5, StartedAt: time.Now(),
			Error: &why, Status: domain.WebhookExhausted, TransformationVersion: &version, NoRequest: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.count(`SELECT count(*) FROM webhook_subscriptions WHERE id = $1 AND consecutive_failures = 0 AND failing_since IS NULL
		AND last_failure_error IS NULL`, sub); n != 1 {
		t.Fatal("attempts without a request changed the subscription's health")
	}
	if n := len(f.events(domain.EventDeliveryExhausted)); n != len(refs) {
		t.Fatalf("%d exhausted events, want %d", n, len(refs))
	}
	if n := f.count(`SELECT count(*) FROM webhook_attempts WHERE transformation_version = 1 AND status_code IS NULL AND error = $1`, why); n != len(refs) {
		t.Fatalf("%d attempts recorded with their version and error", n)
	}
}
