package activities_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/google/uuid"
)

// A failed attempt is retried at the time the delivery's policy gives: the
// one its workflow handed it, or, for a run that carries none (started
// before policies were handed over), the worker's. The delivery records the
// same time it returns.
func TestAFailedAttemptIsRetriedWhenItsPolicySays(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, secrets.KeySize))
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer receiver.Close()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	worker := domain.NewDeliveryPolicy(2 * time.Hour)
	handed := domain.DeliveryPolicy{Attempts: 3, NightlyAt: 4 * time.Hour, Spread: time.Minute}
	a := &activities.Activities{DB: d.DB, Log: zap.NewNop(), Sealer: sealer, Webhooks: outbound.Client(outbound.AnyTarget),
		Delivery: worker, Now: func() time.Time { return now }}
	for _, c := range []struct {
		name   string
		policy *domain.DeliveryPolicy
		want   domain.DeliveryPolicy
	}{
		{"handed by the workflow", &handed, handed},
		{"none handed: the worker's", nil, worker},
	} {
		org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: c.name})
		if _, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: receiver.URL}); err != nil {
			t.Fatal(err)
		}
		id := customerDelivery(t, d, org.ID, c.name)
		if err := d.MarkWebhookDeliveriesStarted(ctx, []uuid.UUID{id}); err != nil {
			t.Fatal(err)
		}
		res, err := a.DeliverWebhook(ctx, domain.DeliverInput{OrgID: org.ID, DeliveryID: id, Attempt: 1, Policy: c.policy})
		if err != nil {
			t.Fatal(err)
		}
		want := c.want.RetryAt(now, id)
		x, err := d.GetWebhookDelivery(ctx, org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Succeeded || res.RetryAt == nil || !res.RetryAt.Equal(want) || x.NextAttemptAt == nil || !x.NextAttemptAt.Time.Equal(want) {
			t.Errorf("%s: retry at %v, recorded %v; want %v", c.name, res.RetryAt, x.NextAttemptAt, want)
		}
	}
}
