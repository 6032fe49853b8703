package db_test

import (
	"context"
	"encoding/json"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestRelayMakesOneDeliveryPerMatchingActiveSubscription(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	other, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other"})
	sub := func(o domain.Organisation, types ...string) db.CreatedSubscription {
		s, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: o.ID, URL: "https://receiver.example/h", EventTypes: types})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	all := sub(org)
	customers := sub(org, domain.EventCustomerCreated)
	orders := sub(org, domain.EventOrderStatusChanged)
	disabled := sub(org)
	if _, err := d.SetSubscriptionActive(ctx, org.ID, disabled.ID, false); err != nil {
		t.Fatal(err)
	}
	sub(other) // another organisation's subscription hears nothing of Acme

	// Two customers created: two customer.created events, one transaction.
	if _, err := d.UpsertCustomers(ctx, org.ID, []domain.CustomerInput{{Company: "A"}, {Company: "B"}}); err != nil {
		t.Fatal(err)
	}
	// Several relays at once take each event once.
	var wg sync.WaitGroup
	taken := make([]int, 4)
	for i := range taken {
		wg.Go(func() {
			n, err := d.RelayEvents(ctx, 1)
			if err != nil {
				t.Error(err)
			}
			taken[i] = n
		})
	}
	wg.Wait()
	for {
		n, err := d.RelayEvents(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		taken = append(taken, n)
	}
	total := 0
	for _, n := range taken {
		total += n
	}
	if total != 2 {
		t.Fatalf("relays took %d events in all, want 2", total)
	}
	count := func(s db.CreatedSubscription) int {
		var n int
		_ = d.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1`, s.ID).Scan(&n)
		return n
	}
	if count(all) != 2 || count(customers) != 2 || count(orders) != 0 || count(disabled) != 0 {
		t.Fatalf("deliveries: all %d, customers %d, orders %d, disabled %d", count(all), count(customers), count(orders), count(disabled))
	}
	refs, err := d.UnstartedWebhookDeliveries(ctx, 10)
	if err != nil || len(refs) != 4 {
		t.Fatalf("%d unstarted deliveries, %v", len(refs), err)
	}
	if err := d.MarkWebhookDeliveriesStarted(ctx, []uuid.UUID{refs[0].ID}); err != nil {
		t.Fatal(err)
	}
	if refs, _ := d.UnstartedWebhookDeliveries(ctx, 10); len(refs) != 3 {
		t.Fatalf("%d unstarted after one started", len(refs))
	}

	// An attempt recorded twice (a retried activity) is one attempt.
	code := 500
	for range 2 {
		if _, err := d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: org.ID, DeliveryID: refs[0].ID, Attempt: 1,
			StartedAt: time.Now(), Duration: time.Second, StatusCode: &code, Status: domain.WebhookFailed}); err != nil {
			t.Fatal(err)
		}
	}
	x, err := d.GetWebhookDelivery(ctx, org.ID, refs[0].ID)
	if err != nil || x.Attempts != 1 || len(x.AttemptLog) != 1 || x.Status != domain.WebhookFailed || *x.LastStatusCode != 500 {
		t.Fatalf("delivery %+v, %v", x, err)
	}
}

// The body a receiver gets is the event envelope, its created_at in the
// service's timestamp format (RFC 3339, UTC, milliseconds).
func TestWebhookEnvelopeCarriesTheEventWithAMillisecondTimestamp(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if _, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://receiver.example/h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertCustomers(ctx, org.ID, []domain.CustomerInput{{Company: "A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	refs, err := d.UnstartedWebhookDeliveries(ctx, 10)
	if err != nil || len(refs) != 1 {
		t.Fatalf("%d deliveries, %v", len(refs), err)
	}
	target, err := d.WebhookTarget(ctx, refs[0].OrgID, refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(target.Event)
	var got map[string]any
	_ = json.Unmarshal(body, &got)
	stamp, _ := got["created_at"].(string)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(stamp) {
		t.Fatalf("created_at %q is not RFC 3339 UTC with milliseconds", stamp)
	}
	data, _ := got["data"].(map[string]any)
	if got["type"] != domain.EventCustomerCreated || got["id"] == nil || data["company"] != "A" {
		t.Fatalf("envelope %s", body)
	}
}
