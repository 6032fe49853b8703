package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/workflows"
)

// settings sets a subscription's delivery settings.
func (f *inboundFixture) settings(sub db.CreatedSubscription, ch db.SubscriptionChange) {
	f.T.Helper()
	if _, err := f.DB.UpdateSubscription(context.Background(), f.org.ID, sub.ID, ch); err != nil {
		f.T.Fatal(err)
	}
}

// customers upserts n customers at once: n customer.created events.
func (f *inboundFixture) customers(prefix string, n int) {
	f.T.Helper()
	in := make([]domain.CustomerInput, n)
	for i := range in {
		in[i] = domain.CustomerInput{Company: fmt.Sprintf("%s %02d", prefix, i)}
	}
	if _, err := f.DB.UpsertCustomers(context.Background(), f.org.ID, in); err != nil {
		f.T.Fatal(err)
	}
}

// startTimes is a Temporal client that notes when each workflow start was
// asked for: for the relay, the moment it starts a delivery.
type startTimes struct {
	client.Client
	mu sync.Mutex
	at []time.Time
}

func (s *startTimes) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	return s.Client.ExecuteWorkflow(ctx, opts, wf, args...)
}

// mostInASecond is the most of at (sorted) within any one second.
func mostInASecond(at []time.Time) int {
	most := 0
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < time.Second; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// With rate_limit_per_second 5, sixty deliveries made at once are started
// no more than 5 in any one second (one more allowed for the edges of a
// window: slots 200 ms apart, each start a little after its slot), and all
// arrive, over at least eleven seconds. What the receiver sees is logged,
// not asserted: the time from a start to its request varies with the
// worker's load, and one late request followed by one on time puts two
// in less than 200 ms, which says nothing about the rate kept.
func TestARateLimitedSubscriptionIsSentNoFasterThanItsRate(t *testing.T) {
	f := newInbound(t)
	rc := newReceiver(t, nil)
	sub := rc.subscribe(f, domain.EventCustomerCreated)
	rate := 5
	f.settings(sub, db.SubscriptionChange{RateLimitSet: true, RateLimit: &rate})
	starts := &startTimes{Client: f.Temporal}
	f.Workflows = workflows.NewClient(starts, f.Namespace)
	f.Outbox()
	f.customers("Rate", 60)
	f.eventuallyWithin(40*time.Second, "sixty deliveries", func() bool { return rc.count() == 60 })
	rc.mu.Lock()
	var at []time.Time
	for _, d := range rc.deliveries {
		at = append(at, d.at)
	}
	rc.mu.Unlock()
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	starts.mu.Lock()
	started := slices.Clone(starts.at)
	starts.mu.Unlock()
	slices.SortFunc(started, func(a, b time.Time) int { return a.Compare(b) })
	t.Logf("60 deliveries: %d starts, at most %d in any one second; received over %v, at most %d in any one second",
		len(started), mostInASecond(started), at[len(at)-1].Sub(at[0]), mostInASecond(at))
	if len(started) < 60 {
		t.Fatalf("%d workflow starts for 60 deliveries", len(started))
	}
	if most := mostInASecond(started); most > rate+1 {
		t.Fatalf("%d deliveries started within one second, the rate is %d", most, rate)
	}
	if span := at[len(at)-1].Sub(at[0]); span < 11*time.Second {
		t.Fatalf("sixty deliveries at 5 a second took %v", span)
	}
}

// With max_in_flight 2 and a receiver that takes a second to answer, never
// more than 2 requests are open at once.
func TestMaxInFlightCapsTheRequestsOpenAtOnce(t *testing.T) {
	f := newInbound(t)
	var open, most atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		n := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Second)
	})
	sub := rc.subscribe(f, domain.EventCustomerCreated)
	two := 2
	f.settings(sub, db.SubscriptionChange{MaxInFlight: &two})
	f.Outbox()
	f.customers("Slow", 8)
	f.eventuallyWithin(30*time.Second, "eight deliveries", func() bool { return rc.count() == 8 })
	if m := most.Load(); m != 2 {
		t.Fatalf("at most %d requests open at once, want 2 (the cap, and used)", m)
	}
	f.eventually("eight deliveries recorded", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded'`) == 8
	})
}

// With ordering per_entity, twenty updates of one customer and twenty of
// another, and a receiver that fails the third request once: each
// customer's events arrive in event order, and the other customer's are not
// held up while the failed one waits for its retry.
func TestPerEntityOrderingHoldsOnlyTheFailedEntity(t *testing.T) {
	f := newInbound(t)
	// Retries a second after a failure, not at night.
	f.Worker.Stop()
	f.Worker = f.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.Register(r, &nightlySoon{f.Activities()})
	})
	var requests atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		if requests.Add(1) == 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	sub := rc.subscribe(f, domain.EventCustomerCreated, domain.EventCustomerUpdated)
	order := db.OrderingPerEntity
	f.settings(sub, db.SubscriptionChange{Ordering: &order})
	for i := range 20 {
		if _, err := f.DB.UpsertCustomers(context.Background(), f.org.ID, []domain.CustomerInput{
			{ExternalID: new("ent-a"), Company: fmt.Sprintf("A %02d", i)},
			{ExternalID: new("ent-b"), Company: fmt.Sprintf("B %02d", i)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	f.Outbox()
	f.eventuallyWithin(40*time.Second, "forty deliveries, and the failed one again", func() bool { return rc.count() == 41 })

	type arrival struct {
		company string
		at      time.Time
		failed  bool
	}
	var arrivals []arrival
	rc.mu.Lock()
	for i, d := range rc.deliveries {
		var data struct{ Company string }
		_ = json.Unmarshal(d.envelope.Data, &data)
		arrivals = append(arrivals, arrival{data.Company, d.at, i == 2})
	}
	rc.mu.Unlock()
	var failed arrival
	seen := map[string][]string{}
	for _, a := range arrivals {
		if a.failed {
			failed = a
			continue
		}
		e := a.company[:1]
		seen[e] = append(seen[e], a.company)
	}
	for _, e := range []string{"A", "B"} {
		var want []string
		for i := range 20 {
			want = append(want, fmt.Sprintf("%s %02d", e, i))
		}
		if !slices.Equal(seen[e], want) {
			t.Fatalf("customer %s's events arrived as %v, want %v", e, seen[e], want)
		}
	}
	// The other customer's deliveries went on while the failed one waited.
	var retried time.Time
	for _, a := range arrivals {
		if !a.failed && a.company == failed.company {
			retried = a.at
		}
	}
	other := "A"
	if strings.HasPrefix(failed.company, "A") {
		other = "B"
	}
	meanwhile := 0
	for _, a := range arrivals {
		if strings.HasPrefix(a.company, other) && a.at.After(failed.at) && a.at.Before(retried) {
			meanwhile++
		}
	}
	t.Logf("%s failed at %s, retried at %s; %d of %s's arrived meanwhile", failed.company,
		failed.at.Format("15:04:05.000"), retried.Format("15:04:05.000"), meanwhile, other)
	if meanwhile == 0 {
		t.Fatalf("no delivery of customer %s arrived while %s waited for its retry", other, failed.company)
	}
}

// With per_entity ordering, a delivery that keeps failing holds its
// entity's later ones until support skips it (an audited action); then
// they go, in order, and the skipped one is not sent again.
func TestSkippingAFailedDeliveryLetsItsEntityGoOn(t *testing.T) {
	f := newInbound(t)
	var failing atomic.Value // the event id the receiver refuses
	failing.Store("")
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(domain.HeaderEventID) == failing.Load().(string) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	sub := rc.subscribe(f, domain.EventCustomerCreated, domain.EventCustomerUpdated)
	order := db.OrderingPerEntity
	f.settings(sub, db.SubscriptionChange{Ordering: &order})
	for i := range 5 {
		if _, err := f.DB.UpsertCustomers(context.Background(), f.org.ID, []domain.CustomerInput{
			{ExternalID: new("ent-a"), Company: fmt.Sprintf("A %02d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	first := f.one(`SELECT id::text FROM events WHERE org_id = $1 AND data->>'company' = 'A 00'`)
	failing.Store(first)
	f.Outbox()
	f.eventually("the deliveries made", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND event_id = $2`, first) == 1
	})
	delivery := f.one(`SELECT id::text FROM webhook_deliveries WHERE org_id = $1 AND event_id = $2`, first)
	f.eventually("the first delivery failed", func() bool {
		return f.one(`SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, delivery) == "failed"
	})
	time.Sleep(2 * time.Second) // time for a later one to slip past
	if n := rc.count(); n != 1 {
		t.Fatalf("%d requests while the entity's first delivery waits for its retry, want only that one", n)
	}
	key := f.apiKey()
	var skipped struct{ Status string }
	if code, raw := f.call("POST", "/api/v1/webhooks/deliveries/"+delivery+"/skip", key, "", &skipped); code != 200 || skipped.Status != "skipped" {
		t.Fatalf("skip: %d %s", code, raw)
	}
	if code, raw := f.call("POST", "/api/v1/webhooks/deliveries/"+delivery+"/skip", key, "", nil); code != 409 {
		t.Fatalf("skip again: %d %s, want 409", code, raw)
	}
	f.eventually("the entity's four later deliveries", func() bool { return rc.count() == 5 })
	rc.mu.Lock()
	var got []string
	for _, d := range rc.deliveries[1:] {
		var data struct{ Company string }
		_ = json.Unmarshal(d.envelope.Data, &data)
		got = append(got, data.Company)
	}
	rc.mu.Unlock()
	if want := []string{"A 01", "A 02", "A 03", "A 04"}; !slices.Equal(got, want) {
		t.Fatalf("after the skip, %v arrived; want %v", got, want)
	}
	if n := f.count(`SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'delivery.skip' AND target_id = $2`, delivery); n != 1 {
		t.Fatalf("%d audit entries of the skip", n)
	}
}
