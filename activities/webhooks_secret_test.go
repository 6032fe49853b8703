package activities_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// A subscription secret sealed under another key can never be opened:
// the attempt fails for good (no retry every few minutes for ever), nothing
// is sent, and the delivery ends exhausted with the reason.
func TestDeliveryWhoseSecretCannotBeOpenedFailsForGood(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealedUnder, _ := secrets.NewSealer(make([]byte, secrets.KeySize))
	other := make([]byte, secrets.KeySize)
	other[0] = 1
	worker, _ := secrets.NewSealer(other)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if _, err := d.CreateSubscription(ctx, sealedUnder, db.NewSubscription{OrgID: org.ID, URL: "https://h.example/hook"}); err != nil {
		t.Fatal(err)
	}
	deliveryID := customerDelivery(t, d, org.ID, "A")
	sent := false
	client := outbound.Client(outbound.AnyTarget)
	client.Transport = roundTrip(func(*http.Request) (*http.Response, error) { sent = true; return nil, errors.New("no") })
	a := &activities.Activities{DB: d.DB, Log: zap.NewNop(), Sealer: worker, Webhooks: client, Delivery: domain.NewDeliveryPolicy(2 * time.Hour)}

	_, err := a.DeliverWebhook(ctx, domain.DeliverInput{OrgID: org.ID, DeliveryID: deliveryID, Attempt: 1})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != activities.ErrSecretUnopenable {
		t.Fatalf("err %v, want a non-retryable %s application error", err, activities.ErrSecretUnopenable)
	}
	if sent {
		t.Fatal("a request was sent")
	}
	x, err := d.GetWebhookDelivery(ctx, org.ID, deliveryID)
	if err != nil || x.Status != domain.WebhookExhausted || x.LastError == nil || *x.LastError != appErr.Message() {
		t.Fatalf("delivery %+v, %v", x, err)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
