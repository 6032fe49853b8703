package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// Deleting a subscription while its deliveries' attempts are being
// recorded (each locks its delivery, then the subscription's health) ends
// in the delete, never in a deadlock answered as a fault.
func TestDeletingASubscriptionWhileAttemptsAreRecordedDoesNotDeadlock(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	for round := range 10 {
		sub := f.subscribe(domain.EventCustomerCreated)
		f.customersCreated(8)
		rows, err := f.d.Pool().Query(ctx, `SELECT id FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2`, f.org, sub)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for rows.Next() {
			var id uuid.UUID
			_ = rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, id := range ids {
			wg.Go(func() {
				<-start
				code, why := 503, "the receiver answered 503"
				// Its delivery may be gone already: that error is expected.
				_, _ = f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: id, Attempt: 1, StartedAt: time.Now(),
					Status: domain.WebhookFailed, StatusCode: &code, Error: &why})
			})
		}
		close(start)
		if err := f.d.DeleteSubscription(ctx, f.org, sub); err != nil {
			t.Fatalf("round %d: deleting the subscription: %v", round, err)
		}
		wg.Wait()
	}
}
