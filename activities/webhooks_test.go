package activities_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// customerDelivery creates a customer (an event), relays it, and returns
// the one delivery that makes.
func customerDelivery(t *testing.T, d *testdb.DB, orgID uuid.UUID, company string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	if _, err := d.UpsertCustomers(ctx, orgID, []domain.CustomerInput{{Company: company}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	refs, err := d.UnstartedWebhookDeliveries(ctx, 10)
	if err != nil || len(refs) != 1 {
		t.Fatalf("%d deliveries, %v", len(refs), err)
	}
	return refs[0].ID
}

// However an attempt fails, what is kept of it (the result recorded in the
// workflow history, the attempt log, the delivery's last error, the log
// line) names the receiver by scheme://host[:port] at most: never the
// path or query of its URL, which may carry its credentials.
func TestFailedAttemptNeverRecordsTheSubscriptionURLsPathOrQuery(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedAddr := closed.Listener.Addr().String()
	closed.Close()
	// unreachable dials a closed port whatever the host, as a receiver
	// that is down would answer.
	unreachable := outbound.Client(outbound.AnyTarget)
	unreachable.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, closedAddr)
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusBadGateway)
	}))
	defer failing.Close()

	for _, c := range []struct {
		name   string
		url    string
		client *http.Client
		want   string
	}{
		{"receiver down", "https://h.example/hook?token=SECRET", unreachable, `Post "https://h.example": dial tcp`},
		{"path credentials", "https://h.example/hooks/SECRET?token=SECRET", unreachable, `Post "https://h.example": dial tcp`},
		{"refused address", "https://127.0.0.1/hook?token=SECRET", outbound.Client(outbound.PublicTargets), "target address refused"},
		{"not a URL any more", "https://h.example/hook?token=SECRET\x7f", outbound.Client(outbound.AnyTarget), "the subscription URL is not valid"},
		{"receiver refuses", failing.URL + "/hook?token=SECRET", outbound.Client(outbound.AnyTarget), "the receiver answered 502"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			d := testdb.New(t)
			sealer, _ := secrets.NewSealer(make([]byte, secrets.KeySize))
			org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
			sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://h.example/hook"})
			if err != nil {
				t.Fatal(err)
			}
			// Stored as it is: URLs are checked when added, and this one may
			// have been added before the checks it now fails.
			if _, err := d.Pool().Exec(ctx, `UPDATE webhook_subscriptions SET url = $2 WHERE id = $1`, sub.ID, c.url); err != nil {
				t.Fatal(err)
			}
			deliveryID := customerDelivery(t, d, org.ID, "A")
			core, logs := observer.New(zap.DebugLevel)
			a := &activities.Activities{DB: d.DB, Log: zap.New(core), Sealer: sealer, Webhooks: c.client, Delivery: domain.NewDeliveryPolicy(2 * time.Hour)}

			res, err := a.DeliverWebhook(ctx, domain.DeliverInput{OrgID: org.ID, DeliveryID: deliveryID, Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Succeeded || !strings.Contains(res.Error, c.want) {
				t.Fatalf("result %+v, want a failure saying %q", res, c.want)
			}
			kept, _ := json.Marshal(res)
			x, err := d.GetWebhookDelivery(ctx, org.ID, deliveryID)
			if err != nil || len(x.AttemptLog) != 1 || x.AttemptLog[0].Error == nil {
				t.Fatalf("delivery %+v, %v", x, err)
			}
			x.URL = "" // the subscription's own URL, shown to support as configured
			record, _ := json.Marshal(x)
			kept = append(kept, record...)
			for _, e := range logs.All() {
				line, _ := json.Marshal(e.ContextMap())
				kept = append(append(kept, e.Message...), line...)
			}
			if s := string(kept); strings.Contains(s, "SECRET") || strings.Contains(s, "/hook") || strings.Contains(s, "token") {
				t.Fatalf("the URL's path or query was kept: %s", s)
			}
		})
	}
}
