package activities_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v85/webhook"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/signature"
)

// captured is a delivery as the receiver got it.
type captured struct {
	header http.Header
	body   []byte
}

// deliverOnce subscribes a receiver that records what it gets, makes an
// event, and sends its delivery's first attempt with DeliverWebhook. With
// secret set, the subscription's secret is replaced by it (a secret issued
// in an earlier format). It returns the secret and what the receiver got.
func deliverOnce(t *testing.T, secret string) (string, captured) {
	t.Helper()
	ctx := context.Background()
	got := make(chan captured, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- captured{header: r.Header.Clone(), body: body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, secrets.KeySize))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: srv.URL + "/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	if secret == "" {
		secret = sub.Secret
	} else {
		sealed := sealer.Seal(secret, secrets.Binding{Table: "webhook_subscriptions", Row: sub.ID.String()})
		if _, err := d.Pool().Exec(ctx, `UPDATE webhook_subscriptions SET secret_sealed = $2 WHERE id = $1`, sub.ID, sealed); err != nil {
			t.Fatal(err)
		}
	}
	deliveryID := customerDelivery(t, d, org.ID, "Zoë & Co")
	a := &activities.Activities{DB: d.DB, Log: zap.NewNop(), Sealer: sealer, Webhooks: outbound.Client(outbound.AnyTarget), Delivery: domain.NewDeliveryPolicy(2 * time.Hour)}
	res, err := a.DeliverWebhook(ctx, domain.DeliverInput{OrgID: org.ID, DeliveryID: deliveryID, Attempt: 1})
	if err != nil || !res.Succeeded {
		t.Fatalf("delivery: %+v, %v", res, err)
	}
	return secret, <-got
}

// The promise of docs/design.md#signatures: a delivery, as the service sends
// it, verifies with the Standard Webhooks Go library given the
// subscription's secret exactly as issued, and with stripe-go's
// ValidatePayload given the same secret; both headers are signed at the
// same second, and webhook-id is the event id.
func TestDeliveryVerifiesWithStandardWebhooksAndStripe(t *testing.T) {
	secret, d := deliverOnce(t, "")
	if !strings.HasPrefix(secret, "whsec_") || len(secret) != 50 || !strings.HasSuffix(secret, "=") {
		t.Fatalf("secret %q is not whsec_ + standard base64 of 32 bytes", secret)
	}

	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the Standard Webhooks library does not take the secret as issued: %v", err)
	}
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Fatalf("Standard Webhooks: %v (headers %v)", err, d.header)
	}
	if err := webhook.ValidatePayload(d.body, d.header.Get(signature.Header), secret); err != nil {
		t.Fatalf("stripe-go ValidatePayload: %v (header %s)", err, d.header.Get(signature.Header))
	}

	if id := d.header.Get(standardwebhooks.HeaderWebhookID); id == "" || id != d.header.Get(domain.HeaderEventID) {
		t.Fatalf("webhook-id %q, event id %q", id, d.header.Get(domain.HeaderEventID))
	}
	ts := d.header.Get(standardwebhooks.HeaderWebhookTimestamp)
	if t0, _, _ := strings.Cut(strings.TrimPrefix(d.header.Get(signature.Header), "t="), ","); ts == "" || t0 != ts {
		t.Fatalf("webhook-timestamp %q, X-Service-Signature %q", ts, d.header.Get(signature.Header))
	}

	// Neither library lets a tampered body or another secret through.
	tampered := []byte(strings.Replace(string(d.body), "Zo", "Xo", 1))
	if wh.Verify(tampered, d.header) == nil || webhook.ValidatePayload(tampered, d.header.Get(signature.Header), secret) == nil {
		t.Fatal("a tampered body verified")
	}
	other, _ := standardwebhooks.NewWebhook(secrets.NewSigningSecret())
	if other.Verify(d.body, d.header) == nil || webhook.ValidatePayload(d.body, d.header.Get(signature.Header), secrets.NewSigningSecret()) == nil {
		t.Fatal("another secret verified")
	}
}

// A subscription whose secret was issued in the earlier format (base64url,
// no padding) keeps its X-Service-Signature as it was, and its
// webhook-signature is keyed with the bytes the secret encodes: the
// Standard Webhooks library verifies it given those bytes, or the secret
// rewritten in standard base64 (signature.StandardSecret).
func TestDeliveryWithAnEarlierSecretVerifiesByBothSchemes(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(250 - i) // base64url "-" and "_" among its characters
	}
	earlier := "whsec_" + base64.RawURLEncoding.EncodeToString(key)
	if !strings.ContainsAny(earlier, "-_") {
		t.Fatalf("secret %s has no base64url-only character", earlier)
	}
	_, d := deliverOnce(t, earlier)

	if err := webhook.ValidatePayload(d.body, d.header.Get(signature.Header), earlier); err != nil {
		t.Fatalf("stripe-go ValidatePayload with the earlier secret: %v", err)
	}
	raw, _ := standardwebhooks.NewWebhookRaw(key)
	if err := raw.Verify(d.body, d.header); err != nil {
		t.Fatalf("Standard Webhooks with the secret's bytes: %v", err)
	}
	rewritten, err := signature.StandardSecret(earlier)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(rewritten)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Fatalf("Standard Webhooks with the secret rewritten (%s): %v", rewritten, err)
	}
	if _, err := strconv.ParseInt(d.header.Get(standardwebhooks.HeaderWebhookTimestamp), 10, 64); err != nil {
		t.Fatalf("webhook-timestamp %q", d.header.Get(standardwebhooks.HeaderWebhookTimestamp))
	}
}
