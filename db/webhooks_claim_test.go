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
// ones; both are marked started once.
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

	var first []domain.WebhookDeliveryRef
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := d.ClaimWebhookDeliveries(ctx, 4, func(refs []domain.WebhookDeliveryRef) ([]uuid.UUID, error) {
			first = refs
			close(holding)
			<-release // still holding the claim while the other claims
			return ids(refs), nil
		})
		done <- err
	}()
	<-holding
	// Bounds a claimer that would wait for the first one's rows.
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var second []domain.WebhookDeliveryRef
	claimed, started, err := d.ClaimWebhookDeliveries(wait, 4, func(refs []domain.WebhookDeliveryRef) ([]uuid.UUID, error) {
		second = refs
		return ids(refs), nil
	})
	close(release)
	if err != nil {
		t.Fatalf("second claim: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if len(first) != 4 || claimed != 2 || started != 2 {
		t.Fatalf("first claimed %d, second %d (started %d); want 4 and the other 2", len(first), claimed, started)
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
