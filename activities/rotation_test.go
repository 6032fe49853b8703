package activities_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/signature"
)

// After a rotation, a delivery is signed with both secrets (two v1 values)
// for 24 hours, so a receiver holding either verifies it; after that, with
// the new one only. The clock is injected: each attempt signs at "now".
func TestRotatedSecretSignsBesideTheNewOneFor24Hours(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, secrets.KeySize))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	var got []string
	var body []byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(signature.Header))
		body, _ = io.ReadAll(r.Body)
	}))
	defer receiver.Close()
	sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: receiver.URL})
	if err != nil {
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
	rotated, err := d.RotateSubscriptionSecret(ctx, sealer, org.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == sub.Secret || !strings.HasPrefix(rotated.Secret, secrets.SigningSecretPrefix) {
		t.Fatalf("new secret %q (old %q)", rotated.Secret, sub.Secret)
	}
	if overlap := rotated.PreviousExpiresAt.Sub(time.Now()); overlap < 23*time.Hour || overlap > 25*time.Hour {
		t.Fatalf("the old secret signs for %s, want 24 hours", overlap)
	}

	now := time.Now()
	a := &activities.Activities{DB: d.DB, Log: zap.NewNop(), Sealer: sealer, Webhooks: outbound.Client(true),
		NightlyAt: 2 * time.Hour, Now: func() time.Time { return now }}
	attempt := func(n int, at time.Time) string {
		t.Helper()
		now = at
		res, err := a.DeliverWebhook(ctx, domain.DeliverInput{OrgID: org.ID, DeliveryID: refs[0].ID, Attempt: n, Manual: true})
		if err != nil || !res.Succeeded {
			t.Fatalf("attempt %d: %+v %v", n, res, err)
		}
		return got[len(got)-1]
	}
	verifies := func(header, secret string, at time.Time) bool {
		return signature.Verify(header, secret, body, at, signature.DefaultTolerance) == nil
	}

	within := now.Add(23 * time.Hour)
	h := attempt(1, within)
	if strings.Count(h, "v1=") != 2 || !verifies(h, rotated.Secret, within) || !verifies(h, sub.Secret, within) {
		t.Fatalf("within 24 hours of the rotation: %s, want two v1 values, one per secret", h)
	}
	after := now.Add(25 * time.Hour)
	h = attempt(2, after)
	if strings.Count(h, "v1=") != 1 || !verifies(h, rotated.Secret, after) || verifies(h, sub.Secret, after) {
		t.Fatalf("after 24 hours: %s, want one v1, made with the new secret only", h)
	}
}
