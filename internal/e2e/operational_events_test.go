package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/workflows"
)

// types counts the event types a receiver got, and reads the data of the
// last of a type.
func (rc *receiver) types() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]int{}
	for _, d := range rc.deliveries {
		out[d.envelope.Type]++
	}
	return out
}

func (rc *receiver) lastData(typ string) map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var m map[string]any
	for _, d := range rc.deliveries {
		if d.envelope.Type == typ {
			_ = json.Unmarshal(d.envelope.Data, &m)
		}
	}
	return m
}

// A receiver that is down: a delivery whose last attempt fails is
// webhook.delivery.exhausted; after the fifth failed attempt in a row a
// second subscription that asked for it hears webhook.subscription.failing,
// once, and later deliveries are held, with no attempt spent; ten
// failing posts on an endpoint within 15 minutes are
// inbound.endpoint.failing. Up again, the probe (the oldest held delivery)
// succeeds: webhook.subscription.recovered, and every held delivery arrives
// once, oldest first, as attempt 1, at the subscription's rate. A
// subscription to every event type hears none of the operational events,
// and the failing subscription none about itself.
func TestOperationalEventsReachTheSubscriptionsThatAskForThem(t *testing.T) {
	f := newInbound(t)
	// Nightly retries a second apart: a delivery is exhausted in seconds.
	f.Worker.Stop()
	f.Worker = f.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.Register(r, &nightlySoon{f.Activities()})
	})
	defer f.Outbox()()

	var up atomic.Bool
	down := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	downSub := down.subscribe(f, domain.EventInboundReceiptFailed, domain.EventSubscriptionFailing, domain.EventSubscriptionRecovered)
	rate := 5
	if _, err := f.DB.UpdateSubscription(context.Background(), f.org.ID, downSub.ID, db.SubscriptionChange{RateLimitSet: true, RateLimit: &rate}); err != nil {
		t.Fatal(err)
	}
	watcher := newReceiver(t, nil)
	watcher.subscribe(f, domain.EventSubscriptionFailing, domain.EventSubscriptionRecovered, domain.EventDeliveryExhausted,
		domain.EventEndpointFailing)
	everything := newReceiver(t, nil)
	everything.subscribe(f)

	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	post := func(n int) {
		t.Helper()
		for range n {
			if a := f.post(url, `{"order_ref": "SO-1"}`); a.status != http.StatusBadRequest {
				t.Fatalf("a post without its status: %d %s", a.status, a.raw)
			}
		}
	}
	// One failing post: its delivery fails 5 times (retries a second
	// apart here), is exhausted, and the fifth failure in a row makes the
	// subscription failing.
	post(1)
	f.eventuallyWithin(60*time.Second, "the watcher hears a delivery exhausted and the subscription failing", func() bool {
		got := watcher.types()
		return got[domain.EventDeliveryExhausted] == 1 && got[domain.EventSubscriptionFailing] == 1
	})
	if d := watcher.lastData(domain.EventSubscriptionFailing); d["subscription_id"] != downSub.ID.String() ||
		d["consecutive_failures"] != float64(domain.SubscriptionFailingAfter) || d["last_status"] != float64(503) {
		t.Fatalf("webhook.subscription.failing data %v", d)
	}
	if d := watcher.lastData(domain.EventDeliveryExhausted); d["subscription_id"] != downSub.ID.String() || d["attempts"] != float64(5) {
		t.Fatalf("webhook.delivery.exhausted data %v", d)
	}
	// Failing: the next nine deliveries are held, and spend no attempt.
	post(9)
	f.eventuallyWithin(60*time.Second, "the endpoint failing and nine deliveries held", func() bool {
		return watcher.types()[domain.EventEndpointFailing] == 1 &&
			f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND status = 'held' AND attempts = 0`,
				downSub.ID) == 9
	})
	if d := watcher.lastData(domain.EventEndpointFailing); d["endpoint_id"] != epID || d["failed_posts"] != float64(10) {
		t.Fatalf("inbound.endpoint.failing data %v", d)
	}
	if n := down.count(); n != 5 {
		t.Fatalf("the receiver got %d requests, want the exhausted delivery's 5 alone", n)
	}
	held := f.column(`SELECT e.id::text FROM webhook_deliveries w JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.status = 'held' ORDER BY e.created_at, e.id`, downSub.ID)

	// Up again. The probe is due a minute after the subscription became
	// failing; the test brings it forward rather than wait.
	up.Store(true)
	before := down.count()
	f.exec(`UPDATE webhook_subscriptions SET probe_at = now() WHERE org_id = $1 AND id = $2`, downSub.ID)
	f.eventually("the watcher hears the subscription recovered, and every held delivery arrives", func() bool {
		return watcher.types()[domain.EventSubscriptionRecovered] == 1 && down.count()-before == len(held)
	})
	down.mu.Lock()
	arrived := slices.Clone(down.deliveries[before:])
	down.mu.Unlock()
	for i, d := range arrived {
		t.Logf("arrival %d: %s at %s; held %s", i, d.envelope.ID, d.at.Format("15:04:05.000"), held[i])
	}
	for i, d := range arrived {
		if d.envelope.ID.String() != held[i] || d.header.Get(domain.HeaderAttempt) != "1" {
			t.Fatalf("arrival %d: event %s attempt %s; want %s (held deliveries oldest first), attempt 1",
				i, d.envelope.ID, d.header.Get(domain.HeaderAttempt), held[i])
		}
	}
	// The last delivery's success is recorded just after its receiver
	// answered it.
	f.eventually("every held delivery recorded succeeded at attempt 1", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND status = 'succeeded' AND attempts = 1`,
			downSub.ID) == len(held)
	})
	if d := watcher.lastData(domain.EventSubscriptionRecovered); d["subscription_id"] != downSub.ID.String() || d["failing_since"] == nil {
		t.Fatalf("webhook.subscription.recovered data %v", d)
	}
	if got := watcher.types(); got[domain.EventSubscriptionFailing] != 1 {
		t.Fatalf("the watcher heard %d failing events, want exactly 1", got[domain.EventSubscriptionFailing])
	}
	for typ := range everything.types() {
		if typ != domain.EventInboundReceiptFailed {
			t.Errorf("a subscription to every event type got %s", typ)
		}
	}
	for typ := range down.types() {
		if typ != domain.EventInboundReceiptFailed {
			t.Errorf("the failing subscription got %s about itself", typ)
		}
	}
}
