package e2e

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

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// receiver is a webhook receiver that verifies every delivery with its
// subscription's secret, by both schemes, and records it.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	answer func(w http.ResponseWriter, r *http.Request)

	mu         sync.Mutex
	deliveries []delivered
	got        chan delivered
}

type delivered struct {
	// at is when the request arrived.
	at       time.Time
	header   http.Header
	envelope db.Envelope
	verified error
	// standard is what the Standard Webhooks library made of the delivery.
	standard error
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{t: t, answer: answer, got: make(chan delivered, 100)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivered{header: r.Header.Clone(), at: time.Now()}
		rc.mu.Lock()
		d.verified = signature.Verify(r.Header.Get(signature.Header), rc.secret, body, time.Now(), signature.DefaultTolerance)
		d.standard = verifyStandard(rc.secret, body, r.Header)
		rc.mu.Unlock()
		if err := json.Unmarshal(body, &d.envelope); err != nil {
			d.verified = err
		}
		rc.mu.Lock()
		rc.deliveries = append(rc.deliveries, d)
		rc.mu.Unlock()
		rc.got <- d
		if rc.answer != nil {
			rc.answer(w, r)
		}
	}))
	t.Cleanup(rc.srv.CloseClientConnections)
	t.Cleanup(rc.srv.Close)
	return rc
}

// verifyStandard verifies a delivery with the Standard Webhooks library.
func verifyStandard(secret string, body []byte, h http.Header) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(body, h)
}

// subscribe subscribes the receiver to the organisation's events.
func (rc *receiver) subscribe(f *inboundFixture, types ...string) db.CreatedSubscription {
	rc.t.Helper()
	s, err := f.DB.CreateSubscription(context.Background(), Sealer(), db.NewSubscription{OrgID: f.org.ID, URL: rc.srv.URL + "/hooks", EventTypes: types})
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = s.Secret
	rc.mu.Unlock()
	return s
}

// next waits up to 10 s for the next delivery.
func (rc *receiver) next() delivered {
	rc.t.Helper()
	select {
	case d := <-rc.got:
		return d
	case <-time.After(10 * time.Second):
		rc.t.Fatal("no delivery within 10 s")
		return delivered{}
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.deliveries)
}

func TestInboundChangeIsDeliveredSignedWithinSeconds(t *testing.T) {
	f := newInbound(t)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	sub := rc.subscribe(f, domain.EventOrderStatusChanged)
	f.Outbox()
	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)

	posted := time.Now()
	a := f.post(url, `{"order_ref": "SO-1", "status": "processing"}`)
	if a.status != 200 {
		t.Fatalf("post: %d %s", a.status, a.raw)
	}
	d := rc.next()
	// Tracing is off: no trace is recorded or sent.
	if tp := d.header.Get("traceparent"); tp != "" || f.receipt(a.receipt).TraceID != nil {
		t.Fatalf("tracing off, yet the delivery carries traceparent %q or the receipt a trace id", tp)
	}
	t.Logf("delivered %v after the post", time.Since(posted))
	if d.verified != nil || d.standard != nil {
		t.Fatalf("the delivery does not verify with the subscription secret: %v; Standard Webhooks: %v", d.verified, d.standard)
	}
	eventID := f.one(`SELECT id::text FROM events WHERE org_id = $1 AND type = 'order.status_changed'`)
	deliveryID := f.one(`SELECT id::text FROM webhook_deliveries WHERE org_id = $1 AND event_id = $2`, eventID)
	h := d.header
	if h.Get("Content-Type") != "application/json" || h.Get(domain.HeaderEventID) != eventID ||
		h.Get(domain.HeaderEventType) != "order.status_changed" || h.Get(domain.HeaderDeliveryID) != deliveryID ||
		h.Get(domain.HeaderAttempt) != "1" || h.Get(signature.HeaderWebhookID) != eventID {
		t.Fatalf("headers %v (event %s, delivery %s)", h, eventID, deliveryID)
	}
	var data map[string]any
	_ = json.Unmarshal(d.envelope.Data, &data)
	if d.envelope.ID.String() != eventID || d.envelope.Type != "order.status_changed" || d.envelope.CreatedAt.IsZero() ||
		data["number"] != "SO-1" || data["to"] != "in_progress" {
		t.Fatalf("envelope %+v, data %v", d.envelope, data)
	}
	// A tampered body, or another secret, does not verify.
	if signature.Verify(h.Get(signature.Header), "whsec_other", []byte(`{}`), time.Now(), signature.DefaultTolerance) == nil {
		t.Fatal("a signature verified with the wrong secret")
	}
	f.eventually("the delivery recorded as succeeded", func() bool {
		return f.one(`SELECT status || ' ' || attempts || ' ' || last_status_code FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, deliveryID) == "succeeded 1 200"
	})
	if f.one(`SELECT response_excerpt FROM webhook_attempts WHERE org_id = $1 AND delivery_id = $2`, deliveryID) != `{"ok": true}` {
		t.Fatal("the answer was not logged")
	}
	// Events the subscription did not ask for are not delivered to it.
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2`, sub.ID); n != 1 {
		t.Fatalf("%d deliveries to a subscription of order.status_changed only", n)
	}
}

func TestSlowOrFailingReceiverIsAFailedAttemptRetriedAtNight(t *testing.T) {
	f := newInbound(t)
	slow := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select { // 11 s, unless the sender gave up first
		case <-r.Context().Done():
		case <-time.After(11 * time.Second):
		}
	})
	broken := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, strings.Repeat("x", 3000))
	})
	slowSub, brokenSub := slow.subscribe(f, domain.EventCustomerCreated), broken.subscribe(f, domain.EventCustomerCreated)
	f.Outbox()
	if _, err := f.DB.UpsertCustomers(context.Background(), f.org.ID, []domain.CustomerInput{{Company: "Slow Co"}}); err != nil {
		t.Fatal(err)
	}
	slow.next()
	broken.next()
	state := func(sub uuid.UUID) string {
		return f.one(`SELECT status || ' ' || attempts || ' ' || coalesce(last_status_code::text, '-') || ' ' || coalesce(last_error, '-')
			FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2`, sub)
	}
	f.eventuallyWithin(30*time.Second, "the slow receiver's attempt failing", func() bool {
		return state(slowSub.ID) == "failed 1 - no answer within 10 s"
	})
	f.eventually("the broken receiver's attempt failing", func() bool {
		return state(brokenSub.ID) == "failed 1 500 the receiver answered 500"
	})
	// Both wait for their own time in the hour after the next 02:00 UTC,
	// and the answer's first 1 KB is kept.
	for _, sub := range []uuid.UUID{slowSub.ID, brokenSub.ID} {
		var id uuid.UUID
		var next time.Time
		if err := f.DB.Pool().QueryRow(context.Background(), `SELECT id, next_attempt_at FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2`,
			f.org.ID, sub).Scan(&id, &next); err != nil || !next.Equal(domain.NextNightlyFor(time.Now(), NightlyAt, id)) {
			t.Fatalf("next attempt at %v (%v), want %v", next, err, domain.NextNightlyFor(time.Now(), NightlyAt, id))
		}
	}
	if n := f.count(`SELECT length(response_excerpt) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE a.org_id = $1 AND d.subscription_id = $2`, brokenSub.ID); n != 1024 {
		t.Fatalf("kept %d bytes of the answer, want 1024", n)
	}
	if ms := f.count(`SELECT duration_ms FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE a.org_id = $1 AND d.subscription_id = $2`, slowSub.ID); ms < 9900 || ms > 10900 {
		t.Fatalf("the slow attempt took %d ms, want about 10 s", ms)
	}
}

func TestCrashBetweenChangeAndDeliveryLosesAndDoublesNothing(t *testing.T) {
	f := newInbound(t)
	rc := newReceiver(t, nil)
	rc.subscribe(f)
	ctx := context.Background()
	change := func(company string) {
		t.Helper()
		if _, err := f.DB.UpsertCustomers(ctx, f.org.ID, []domain.CustomerInput{{Company: company}}); err != nil {
			t.Fatal(err)
		}
	}
	// No worker and no relay: the process is down.
	f.Worker.Stop()
	// A change the relay never saw.
	change("Unseen Ltd")
	// A change whose delivery was recorded, and then the relay died before
	// starting its workflow.
	change("Recorded Ltd")
	if n, err := f.DB.RelayEvents(ctx, 100); err != nil || n != 2 {
		t.Fatalf("relayed %d: %v", n, err)
	}
	change("Third Ltd")
	// A relay comes back, and starts workflows while no worker runs.
	stopRelay := f.Outbox()
	f.eventually("every delivery's workflow started", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND workflow_started_at IS NOT NULL`) == 3
	})
	stopRelay()
	if rc.count() != 0 {
		t.Fatal("delivered without a worker")
	}
	// Two processes come back at once: two relays and a worker.
	f.Outbox()
	f.Outbox()
	f.StartWorker()
	change("After Ltd")
	f.eventually("four deliveries", func() bool { return rc.count() == 4 })
	time.Sleep(2 * time.Second) // time for a duplicate to show
	perDelivery := map[string]int{}
	rc.mu.Lock()
	got := append([]delivered(nil), rc.deliveries...)
	rc.mu.Unlock()
	for _, d := range got {
		perDelivery[d.header.Get(domain.HeaderDeliveryID)]++
		if d.verified != nil {
			t.Errorf("delivery %s does not verify: %v", d.header.Get(domain.HeaderDeliveryID), d.verified)
		}
	}
	if len(perDelivery) != 4 || rc.count() != 4 {
		t.Fatalf("%d requests for %d delivery ids: %v", rc.count(), len(perDelivery), perDelivery)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded' AND attempts = 1`); n != 4 {
		t.Fatalf("%d deliveries succeeded at the first attempt, want 4", n)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND relayed_at IS NULL`); n != 0 {
		t.Fatalf("%d events never relayed", n)
	}
}

func TestSupportSeesAndResendsDeliveriesThroughTheCLI(t *testing.T) {
	f := newInbound(t)
	var mu sync.Mutex
	up := false
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	rc.subscribe(f, domain.EventCustomerCreated)
	f.Outbox()
	if _, err := f.DB.UpsertCustomers(context.Background(), f.org.ID, []domain.CustomerInput{{Company: "Resend Ltd"}}); err != nil {
		t.Fatal(err)
	}
	rc.next()
	f.eventually("the first attempt failing", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'failed'`) == 1
	})

	code, out, errOut := f.cliRun("webhook", "deliveries", "--org", f.org.ID.String(), "--status", "failed", "--json")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("webhook deliveries: %d %s %s", code, out, errOut)
	}
	for _, field := range []string{"id", "event_id", "event_type", "subscription_id", "status", "attempts", "last_status_code", "next_attempt_at"} {
		if _, ok := list[0][field]; !ok {
			t.Errorf("webhook deliveries entry has no %q", field)
		}
	}
	id := list[0]["id"].(string)
	if list[0]["last_status_code"] != 503.0 || list[0]["next_attempt_at"] == nil {
		t.Fatalf("failed delivery: %v", list[0])
	}

	// The receiver is fixed; support resends rather than wait for the night.
	mu.Lock()
	up = true
	mu.Unlock()
	resend := func() map[string]any {
		t.Helper()
		code, out, errOut := f.cliRun(append([]string{"webhook", "resend", id, "--json"}, f.temporalFlags()...)...)
		var x map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &x) != nil {
			t.Fatalf("webhook resend: %d %s %s", code, out, errOut)
		}
		return x
	}
	x := resend()
	log, _ := x["attempt_log"].([]any)
	if x["status"] != "succeeded" || x["attempts"] != 2.0 || len(log) != 2 || log[1].(map[string]any)["manual"] != true {
		t.Fatalf("after the resend: %v", x)
	}
	if d := rc.next(); d.header.Get(domain.HeaderAttempt) != "2" || d.header.Get(domain.HeaderDeliveryID) != id {
		t.Fatalf("resent delivery headers %v", d.header)
	}
	// A delivery that succeeded can be sent once more on request.
	if x := resend(); x["status"] != "succeeded" || x["attempts"] != 3.0 {
		t.Fatalf("resend of a succeeded delivery: %v", x)
	}
	code, out, _ = f.cliRun("webhook", "show", id)
	if code != 0 || !strings.Contains(out, "attempt 1 ") || !strings.Contains(out, "status 503") || !strings.Contains(out, "attempt 3 (resent)") {
		t.Fatalf("webhook show lacks the attempt log: %s", out)
	}
}
