package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// Two relays claiming at the same moment never get the same delivery: while
// one holds its claim (starting the workflows), the other takes the next
// ones; both are marked started once. A claim commits before the workflows
// start, so no transaction is open meanwhile.
func TestConcurrentClaimersNeverGetTheSameDeliveries(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if _, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://receiver.example/h"}); err != nil {
		t.Fatal(err)
	}
	customers := make([]domain.CustomerInput, 6)
	for i := range customers {
		customers[i] = domain.CustomerInput{Company: string(rune('A' + i))}
	}
	if _, err := d.UpsertCustomers(ctx, org.ID, customers); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	ids := func(refs []domain.WebhookDeliveryRef) []uuid.UUID {
		var out []uuid.UUID
		for _, r := range refs {
			out = append(out, r.ID)
		}
		return out
	}

	first, err := d.ClaimWebhookDeliveries(ctx, 4)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	// The first still holds its claim (starting the workflows) while the
	// other claims. Bounds a claimer that would wait for the first one's rows.
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	second, err := d.ClaimWebhookDeliveries(wait, 4)
	if err != nil {
		t.Fatalf("second claim: %v", err)
	}
	if err := d.MarkWebhookDeliveriesStarted(ctx, ids(second)); err != nil {
		t.Fatal(err)
	}
	if err := d.MarkWebhookDeliveriesStarted(ctx, ids(first)); err != nil {
		t.Fatal(err)
	}
	if len(first) != 4 || len(second) != 2 {
		t.Fatalf("first claimed %d, second %d; want 4 and the other 2", len(first), len(second))
	}
	seen := map[uuid.UUID]bool{}
	for _, r := range append(first, second...) {
		if seen[r.ID] {
			t.Fatalf("delivery %s was claimed twice", r.ID)
		}
		seen[r.ID] = true
	}
	if left, err := d.UnstartedWebhookDeliveries(ctx, 10); err != nil || len(left) != 0 {
		t.Fatalf("%d deliveries left unstarted, %v", len(left), err)
	}
}

// A claim holds its deliveries from other relays until they are marked
// started, released (a start that failed: the next round takes them), or
// its lease runs out (a relay that stopped holding it).
func TestAClaimHoldsUntilStartedReleasedOrItsLeaseRunsOut(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if _, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://receiver.example/h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertCustomers(ctx, org.ID, []domain.CustomerInput{{Company: "A"}, {Company: "B"}, {Company: "C"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	claim := func() []uuid.UUID {
		t.Helper()
		refs, err := d.ClaimWebhookDeliveries(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []uuid.UUID
		for _, r := range refs {
			out = append(out, r.ID)
		}
		return out
	}
	held := claim()
	if len(held) != 3 {
		t.Fatalf("claimed %d, want 3", len(held))
	}
	if again := claim(); len(again) != 0 {
		t.Fatalf("claimed %d deliveries another claim holds", len(again))
	}
	// One started, one released, one left by a relay that stopped.
	if err := d.MarkWebhookDeliveriesStarted(ctx, held[:1]); err != nil {
		t.Fatal(err)
	}
	if err := d.ReleaseWebhookDeliveries(ctx, held[1:2]); err != nil {
		t.Fatal(err)
	}
	if got := claim(); len(got) != 1 || got[0] != held[1] {
		t.Fatalf("after a release, claimed %v; want only %s", got, held[1])
	}
	if _, err := d.Pool().Exec(ctx, `UPDATE webhook_deliveries SET start_claimed_until = now() - interval '1 second' WHERE id = $1`, held[2]); err != nil {
		t.Fatal(err)
	}
	if got := claim(); len(got) != 1 || got[0] != held[2] {
		t.Fatalf("after the lease ran out, claimed %v; want only %s", got, held[2])
	}
}
