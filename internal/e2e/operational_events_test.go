package e2e

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

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

// A receiver that is down: after its fifth failed attempt in a row a
// second subscription that asked for it hears webhook.subscription.failing,
// once; each delivery whose last attempt fails is webhook.delivery.exhausted;
// ten failing posts on an endpoint within 15 minutes are
// inbound.endpoint.failing; the receiver's first success is
// webhook.subscription.recovered. A subscription to every event type hears
// none of them, and the failing subscription none about itself.
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
	watcher := newReceiver(t, nil)
	watcher.subscribe(f, domain.EventSubscriptionFailing, domain.EventSubscriptionRecovered, domain.EventDeliveryExhausted,
		domain.EventEndpointFailing)
	everything := newReceiver(t, nil)
	everything.subscribe(f)

	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	for range 10 {
		if a := f.post(url, `{"order_ref": "SO-1"}`); a.status != http.StatusBadRequest {
			t.Fatalf("a post without its status: %d %s", a.status, a.raw)
		}
	}
	f.eventuallyWithin(60*time.Second, "the watcher hears the endpoint failing, the subscription failing and a delivery exhausted", func() bool {
		got := watcher.types()
		return got[domain.EventEndpointFailing] == 1 && got[domain.EventSubscriptionFailing] == 1 && got[domain.EventDeliveryExhausted] >= 1
	})
	if d := watcher.lastData(domain.EventSubscriptionFailing); d["subscription_id"] != downSub.ID.String() ||
		d["consecutive_failures"] != float64(domain.SubscriptionFailingAfter) || d["last_status"] != float64(503) {
		t.Fatalf("webhook.subscription.failing data %v", d)
	}
	if d := watcher.lastData(domain.EventEndpointFailing); d["endpoint_id"] != epID || d["failed_posts"] != float64(10) {
		t.Fatalf("inbound.endpoint.failing data %v", d)
	}
	// Every delivery to the receiver exhausted: one event each.
	f.eventuallyWithin(60*time.Second, "all ten deliveries exhausted", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND status = 'exhausted'`,
			downSub.ID) == 10 && watcher.types()[domain.EventDeliveryExhausted] == 10
	})

	// Up again: the next delivery succeeds, and the watcher hears it.
	up.Store(true)
	if a := f.post(url, `{"order_ref": "SO-1"}`); a.status != http.StatusBadRequest {
		t.Fatalf("a post without its status: %d %s", a.status, a.raw)
	}
	f.eventually("the watcher hears the subscription recovered", func() bool {
		return watcher.types()[domain.EventSubscriptionRecovered] == 1
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
