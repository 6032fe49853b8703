package activities_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
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

// transformFixture is a subscription to a receiver that records what it
// gets, with a delivery of a customer.created event waiting for its
// first attempt.
type transformFixture struct {
	t        *testing.T
	d        *testdb.DB
	org      uuid.UUID
	sub      db.CreatedSubscription
	delivery uuid.UUID
	acts     *activities.Activities

	mu  sync.Mutex
	got []captured
}

func newTransformFixture(t *testing.T) *transformFixture {
	t.Helper()
	ctx := context.Background()
	f := &transformFixture{t: t}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, captured{header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	f.d = testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, secrets.KeySize))
	org, _, _ := f.d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	f.org = org.ID
	var err error
	if f.sub, err = f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: srv.URL + "/hooks"}); err != nil {
		t.Fatal(err)
	}
	f.delivery = customerDelivery(t, f.d, org.ID, "Zoë & Co")
	f.acts = &activities.Activities{DB: f.d.DB, Log: zap.NewNop(), Sealer: sealer, Webhooks: outbound.Client(outbound.AnyTarget),
		Delivery: domain.NewDeliveryPolicy(2 * time.Hour)}
	return f
}

// transformWith gives the subscription a new version of its
// transformation (nil: none).
func (f *transformFixture) transformWith(source *string) {
	f.t.Helper()
	if _, err := f.d.AddMappingVersion(context.Background(), f.org, db.MappingOfSubscription, f.sub.ID, source, "test"); err != nil {
		f.t.Fatal(err)
	}
}

// deliver makes the delivery's attempt.
func (f *transformFixture) deliver(attempt int, last bool) domain.DeliverResult {
	f.t.Helper()
	res, err := f.acts.DeliverWebhook(context.Background(), domain.DeliverInput{OrgID: f.org, DeliveryID: f.delivery, Attempt: attempt, Last: last})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *transformFixture) requests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]captured(nil), f.got...)
}

func (f *transformFixture) record() db.WebhookDelivery {
	f.t.Helper()
	x, err := f.d.GetWebhookDelivery(context.Background(), f.org, f.delivery)
	if err != nil {
		f.t.Fatal(err)
	}
	return x
}

func ptr[T any](v T) *T { return &v }

// A subscription's transformation makes the body sent, with the headers it
// adds; the signatures cover exactly the bytes sent, as the Standard
// Webhooks library and stripe-go verify them, and the delivery keeps the
// version that ran and the body.
func TestTransformedDeliveryIsSignedOverTheBodySent(t *testing.T) {
	for _, c := range []struct {
		name, source, want string
	}{
		{"object", `function transform(event) {
			console.log("reshaping", event.type);
			return {body: {kind: event.type, name: event.data.company, at: new Date().toISOString()}, headers: {"X-Partner-Key": "k-1"}};
		}`, `{"kind":"customer.created","name":"Zoë & Co","at":"%s"}`},
		{"string", `function transform(event) {
			return {body: "company=" + encodeURIComponent(event.data.company), headers: {"x-partner-key": "k-1"}};
		}`, `company=Zo%C3%AB%20%26%20Co`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTransformFixture(t)
			f.transformWith(&c.source)
			if res := f.deliver(1, false); !res.Succeeded {
				t.Fatalf("attempt: %+v", res)
			}
			got := f.requests()
			if len(got) != 1 {
				t.Fatalf("the receiver got %d requests", len(got))
			}
			r := got[0]
			want := c.want
			if strings.Contains(want, "%s") {
				// Date's clock is the event's created_at.
				var created time.Time
				if err := f.d.Pool().QueryRow(context.Background(), `SELECT e.created_at FROM events e JOIN webhook_deliveries w ON w.event_id = e.id
					WHERE w.id = $1`, f.delivery).Scan(&created); err != nil {
					t.Fatal(err)
				}
				want = strings.Replace(want, "%s", created.UTC().Format("2006-01-02T15:04:05.000Z"), 1)
			}
			if string(r.body) != want {
				t.Fatalf("body %s, want %s", r.body, want)
			}
			if r.header.Get("X-Partner-Key") != "k-1" || r.header.Get(domain.HeaderEventID) == "" || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("headers %v", r.header)
			}
			wh, err := standardwebhooks.NewWebhook(f.sub.Secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(r.body, r.header); err != nil {
				t.Fatalf("Standard Webhooks: %v", err)
			}
			if err := webhook.ValidatePayload(r.body, r.header.Get(signature.Header), f.sub.Secret); err != nil {
				t.Fatalf("stripe-go ValidatePayload: %v", err)
			}

			x := f.record()
			if x.Status != domain.WebhookSucceeded || x.TransformationVersion == nil || *x.TransformationVersion != 1 ||
				string(x.BodySent) != want || len(x.AttemptLog) != 1 || x.AttemptLog[0].TransformationVersion == nil {
				t.Fatalf("delivery %+v", x)
			}
		})
	}
}

// A transformation that answers null skips the event for the subscription:
// the delivery ends skipped, with no request and no attempt.
func TestTransformationAnsweringNullSkipsTheDelivery(t *testing.T) {
	f := newTransformFixture(t)
	f.transformWith(ptr(`function transform(event) { return event.type === "customer.created" ? null : {body: event}; }`))
	res := f.deliver(1, false)
	if !res.Skipped || res.Succeeded || res.RetryAt != nil {
		t.Fatalf("result %+v", res)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
	x := f.record()
	if x.Status != domain.WebhookSkipped || x.Attempts != 0 || len(x.AttemptLog) != 0 || x.LastError == nil ||
		*x.LastError != "skipped by the subscription's transformation (version 1)" || x.TransformationVersion == nil || *x.TransformationVersion != 1 {
		t.Fatalf("delivery %+v", x)
	}
}

// A transformation that fails (a throw, a limit, an answer that cannot be
// sent, a header the service sets) fails the attempt with why, making no
// request; the retry schedule goes on, the last attempt exhausts the
// delivery, and the subscription's health, which is its receiver's, is
// untouched. After a fix, the next attempt sends.
func TestFailingTransformationFailsTheAttemptWithoutARequest(t *testing.T) {
	for _, c := range []struct {
		name, source, want string
	}{
		{"throw", "function transform(event) {\n  throw new Error(\"no mapping for \" + event.type);\n}",
			"transformation failed: Error: no mapping for customer.created (line 2:"},
		{"type error", "function transform(event) {\n  return {body: event.data.missing.field};\n}",
			"transformation failed: TypeError: cannot read property 'field' of undefined (line 2:"},
		{"cpu", "function transform(event) { for (;;) {} }", "transformation failed: cpu time exceeded"},
		{"protected header", `function transform(event) { return {body: event, headers: {"webhook-signature": "v1,forged"}}; }`,
			"transformation failed: header webhook-signature is not allowed"},
		{"protected header in another case", `function transform(event) { return {body: event, headers: {"X-SERVICE-SIGNATURE": "t=1,v1=00"}}; }`,
			"transformation failed: header X-SERVICE-SIGNATURE is not allowed"},
		{"content type", `function transform(event) { return {body: "a=1", headers: {"Content-Type": "text/plain"}}; }`,
			"transformation failed: header Content-Type is not allowed"},
		{"too many headers", `function transform(event) { const h = {}; for (let i = 0; i < 11; i++) h["x-h" + i] = "v"; return {body: event, headers: h}; }`,
			"transformation failed: 11 headers: at most 10 may be added"},
		{"no body", `function transform(event) { return {headers: {}}; }`, "transformation failed: the returned object has no body"},
		{"a number", `function transform(event) { return {body: 42}; }`, "transformation failed: body must be an object, an array or a string"},
		{"no function", `const x = 1;`, "transformation failed: TypeError: the script defines no function transform"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTransformFixture(t)
			f.transformWith(&c.source)
			res := f.deliver(1, false)
			if res.Succeeded || res.Skipped || res.RetryAt == nil || !strings.HasPrefix(res.Error, c.want) {
				t.Fatalf("result %+v, want a failure %q", res, c.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Fatalf("the receiver got %d requests", n)
			}
			x := f.record()
			if x.Status != domain.WebhookFailed || x.Attempts != 1 || len(x.AttemptLog) != 1 || x.AttemptLog[0].StatusCode != nil ||
				x.AttemptLog[0].Error == nil || *x.AttemptLog[0].Error != res.Error || x.NextAttemptAt == nil || x.BodySent != nil {
				t.Fatalf("delivery %+v", x)
			}
			var failures int
			if err := f.d.Pool().QueryRow(context.Background(), `SELECT consecutive_failures FROM webhook_subscriptions WHERE id = $1`,
				f.sub.ID).Scan(&failures); err != nil || failures != 0 {
				t.Fatalf("the subscription counts %d failures (%v)", failures, err)
			}
		})
	}

	t.Run("fixed, then removed", func(t *testing.T) {
		f := newTransformFixture(t)
		f.transformWith(ptr(`function transform(e) { throw "broken"; }`))
		if res := f.deliver(1, false); res.Error != "transformation failed: broken" {
			t.Fatalf("attempt 1: %+v", res)
		}
		f.transformWith(ptr(`function transform(e) { return {body: {id: e.id}}; }`))
		if res := f.deliver(2, false); !res.Succeeded {
			t.Fatalf("attempt 2, after the fix: %+v", res)
		}
		f.transformWith(nil)
		if res := f.deliver(3, false); !res.Succeeded {
			t.Fatalf("attempt 3, without a transformation: %+v", res)
		}
		got := f.requests()
		var event map[string]any
		if len(got) != 2 || json.Unmarshal(got[1].body, &event) != nil || event["type"] != "customer.created" ||
			!strings.HasPrefix(string(got[0].body), `{"id":"`) || len(got[0].body) > 50 {
			t.Fatalf("the receiver got %d requests: %q", len(got), got)
		}
		x := f.record()
		if x.TransformationVersion != nil || x.BodySent != nil || len(x.AttemptLog) != 3 || *x.AttemptLog[1].TransformationVersion != 2 ||
			x.AttemptLog[2].TransformationVersion != nil {
			t.Fatalf("delivery %+v", x)
		}
	})

	t.Run("last attempt", func(t *testing.T) {
		f := newTransformFixture(t)
		f.transformWith(ptr(`function transform(e) { throw new RangeError("late"); }`))
		res := f.deliver(5, true)
		if res.RetryAt != nil || !strings.HasPrefix(res.Error, "transformation failed: RangeError: late") {
			t.Fatalf("result %+v", res)
		}
		if x := f.record(); x.Status != domain.WebhookExhausted {
			t.Fatalf("delivery %+v", x)
		}
		var exhausted int
		if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'webhook.delivery.exhausted'`).Scan(&exhausted); err != nil || exhausted != 1 {
			t.Fatalf("%d exhausted events (%v)", exhausted, err)
		}
	})
}
