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
	var got []http.Header
	var body []byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		body, _ = io.ReadAll(r.Body)
	}))
	defer receiver.Close()
	sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: receiver.URL})
	if err != nil {
		t.Fatal(err)
	}
	deliveryID := customerDelivery(t, d, org.ID, "A")
	rotated, err := d.RotateSubscriptionSecret(ctx, sealer, org.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == sub.Secret || !strings.HasPrefix(rotated.Secret, secrets.SigningSecretPrefix) {
		t.Fatalf("new secret %q (old %q)", rotated.Secret, sub.Secret)
	}
	if overlap := time.Until(rotated.PreviousExpiresAt.Time); overlap < 23*time.Hour || overlap > 25*time.Hour {
		t.Fatalf("the old secret signs for %s, want 24 hours", overlap)
	}

	now := time.Now()
	a := &activities.Activities{DB: d.DB, Log: zap.NewNop(), Sealer: sealer, Webhooks: outbound.Client(outbound.AnyTarget),
		Delivery: domain.NewDeliveryPolicy(2 * time.Hour), Now: func() time.Time { return now }}
	attempt := func(n int, at time.Time) http.Header {
		t.Helper()
		now = at
		res, err := a.DeliverWebhook(ctx, domain.DeliverInput{OrgID: org.ID, DeliveryID: deliveryID, Attempt: n, Manual: true})
		if err != nil || !res.Succeeded {
			t.Fatalf("attempt %d: %+v %v", n, res, err)
		}
		return got[len(got)-1]
	}
	// verifies checks both schemes: X-Service-Signature and Standard
	// Webhooks' webhook-signature, each of which must carry one value per
	// secret that signs.
	verifies := func(h http.Header, secret string, at time.Time) (service, standard bool) {
		service = signature.Verify(h.Get(signature.Header), secret, body, at, signature.DefaultTolerance) == nil
		_, err := signature.StandardVerified(h.Get(signature.HeaderWebhookID), h.Get(signature.HeaderWebhookTimestamp),
			h.Get(signature.HeaderWebhookSignature), secret, body, at, signature.DefaultTolerance)
		return service, err == nil
	}
	signs := func(h http.Header, secret string, at time.Time) bool {
		service, standard := verifies(h, secret, at)
		return service && standard
	}
	signsNeither := func(h http.Header, secret string, at time.Time) bool {
		service, standard := verifies(h, secret, at)
		return !service && !standard
	}
	values := func(h http.Header) (int, int) {
		return strings.Count(h.Get(signature.Header), "v1="), len(strings.Fields(h.Get(signature.HeaderWebhookSignature)))
	}

	within := now.Add(23 * time.Hour)
	h := attempt(1, within)
	if service, standard := values(h); service != 2 || standard != 2 || !signs(h, rotated.Secret, within) || !signs(h, sub.Secret, within) {
		t.Fatalf("within 24 hours of the rotation: %v, want two signatures in each scheme, one per secret", h)
	}
	after := now.Add(25 * time.Hour)
	h = attempt(2, after)
	if service, standard := values(h); service != 1 || standard != 1 || !signs(h, rotated.Secret, after) || !signsNeither(h, sub.Secret, after) {
		t.Fatalf("after 24 hours: %v, want one signature in each scheme, made with the new secret only", h)
	}
}
