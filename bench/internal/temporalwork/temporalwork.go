// Package temporalwork counts the Temporal work the service asks for per
// inbound post and per webhook delivery, one kind at a time, on the
// embedded Temporal server of `commerce dev` (bench/internal/embedded):
// history events by type, workflow tasks, activities, local activities,
// timers and search attribute upserts, read from each workflow's history,
// and the server's persistence requests by operation, read from its
// Prometheus counters before and after each batch.
//
//	go run ./bench/temporalwork [-n 20] [-temporal-store sqlite]
//
// Posts go through the full API (update-with-start, as in production);
// deliveries through the outbox relay (eager start) to a local receiver.
// It uses BENCH_DATABASE_URL (default: database commerce_bench on the local
// server, created when missing) and drops its schema when done.
package temporalwork

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

const schema = "bench_temporalwork"

// flush is longer than the server's metrics reporting interval.
const flush = 1500 * time.Millisecond

// Options say how big a run is and where it reports.
type Options struct {
	N     int    // items of each kind
	Store string // embedded.Stores
	Out   io.Writer
}

// Kinds of item, in the order they are run.
const (
	KindApplied   = "post applied"
	KindFailed    = "post refused (failed)"
	KindParked    = "post parked (open, waiting)"
	KindWoken     = "parked post woken, applied"
	KindDelivered = "delivery, succeeded first time"
	KindRetried   = "delivery, failed, retried, succeeded"
)

// Row is one kind's work, summed over its N items.
type Row struct {
	Kind  string
	Items int
	Work  Work
}

// Result is every kind's row, and the persistence requests the server
// made while idle for IdleFor (its own background work, which each
// batch's counts include too).
type Result struct {
	Rows    []Row
	Idle    map[string]float64
	IdleFor time.Duration
}

type run struct {
	o       Options
	d       *db.DB
	org     uuid.UUID
	tc      client.Client
	metrics string
	api     string
	rc      *receiver
	seq     int
}

// Run counts the work of each kind.
func Run(ctx context.Context, o Options) (Result, error) {
	var res Result
	if o.Out == nil {
		o.Out = io.Discard
	}
	d, done, err := harness.Database(ctx, schema)
	if err != nil {
		return res, err
	}
	defer done()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Bench Ltd", OwnerEmail: "o@bench.example"})
	if err != nil {
		return res, err
	}
	seed, err := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-B", "status": "confirmed",
		"lines": [{"description": "Bolts", "qty": 1000000, "unit_price_minor": 1000}]}]}`))
	if err != nil {
		return res, err
	}
	if _, err := d.Seed(ctx, org.ID, seed); err != nil {
		return res, err
	}
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	rc := &receiver{failed: map[string]bool{}}
	receiverURL, err := harness.Listen(rc)
	if err != nil {
		return res, err
	}
	// Only the events the delivery batches write (not the orders the
	// woken posts wait for), and room for every delivery of a batch in
	// flight at once.
	inFlight := 100
	if _, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: receiverURL + "/hooks",
		EventTypes: []string{domain.EventCustomerCreated}, MaxInFlight: &inFlight}); err != nil {
		return res, err
	}
	acts := &activities.Activities{DB: d, Log: zap.NewNop(), BaseURL: "http://bench", Sealer: sealer,
		Webhooks: outbound.Client(outbound.AnyTarget), Delivery: domain.NewDeliveryPolicy(2 * time.Hour)}
	tc, srv, stop, err := embedded.Server(ctx, acts, o.Store)
	if err != nil {
		return res, err
	}
	defer stop()
	service := integrations.New(integrations.Deps{DB: d, Workflows: workflows.NewClient(tc, "default"), BaseURL: "http://bench", Namespace: "default"})
	full, err := harness.Listen(api.New(api.Deps{DB: d, Service: service, Temporal: tc, Logger: zap.NewNop(),
		Cursors: cursor.New(make([]byte, 32)), BaseURL: "http://bench"}).Handler())
	if err != nil {
		return res, err
	}
	r := &run{o: o, d: d, org: org.ID, tc: tc, metrics: srv.MetricsURL(), api: full, rc: rc}

	// The server's own background work, while nothing is asked of it.
	res.IdleFor = 2 * time.Second
	before, err := harness.ScrapeCounter(ctx, r.metrics, "persistence_requests")
	if err != nil {
		return res, err
	}
	time.Sleep(res.IdleFor)
	after, err := harness.ScrapeCounter(ctx, r.metrics, "persistence_requests")
	if err != nil {
		return res, err
	}
	res.Idle = harness.CounterDiff(before, after)

	parkedIDs := []string{}
	for _, k := range []struct {
		kind string
		do   func(context.Context) ([]string, error)
	}{
		{KindApplied, func(ctx context.Context) ([]string, error) { return r.posts(ctx, "SO-B", "GBP", "applied") }},
		{KindFailed, func(ctx context.Context) ([]string, error) { return r.posts(ctx, "SO-B", "EUR", "failed") }},
		{KindParked, func(ctx context.Context) ([]string, error) {
			ids, err := r.posts(ctx, "SO-P", "GBP", "parked")
			parkedIDs = ids
			return ids, err
		}},
		{KindWoken, func(ctx context.Context) ([]string, error) { return r.wake(ctx, parkedIDs) }},
		{KindDelivered, func(ctx context.Context) ([]string, error) { return r.deliveries(ctx, false) }},
		{KindRetried, func(ctx context.Context) ([]string, error) { return r.deliveries(ctx, true) }},
	} {
		row, err := r.batch(ctx, k.kind, k.do)
		if err != nil {
			return res, fmt.Errorf("%s: %w", k.kind, err)
		}
		res.Rows = append(res.Rows, row)
	}
	if rc.bad > 0 {
		return res, fmt.Errorf("%d deliveries did not verify", rc.bad)
	}
	return res, nil
}

// batch runs one kind's items, waits until their workflows are settled,
// and counts their histories and the server's persistence requests meanwhile.
func (r *run) batch(ctx context.Context, kind string, do func(context.Context) ([]string, error)) (Row, error) {
	row := Row{Kind: kind}
	before, err := harness.ScrapeCounter(ctx, r.metrics, "persistence_requests")
	if err != nil {
		return row, err
	}
	ids, err := do(ctx)
	if err != nil {
		return row, err
	}
	for _, id := range ids {
		if err := settled(ctx, r.tc, id); err != nil {
			return row, err
		}
	}
	// The server's counters reach its /metrics when its metrics scope
	// reports, every second.
	time.Sleep(flush)
	after, err := harness.ScrapeCounter(ctx, r.metrics, "persistence_requests")
	if err != nil {
		return row, err
	}
	row.Work.Persistence = harness.CounterDiff(before, after)
	for _, id := range ids {
		w, err := history(ctx, r.tc, id)
		if err != nil {
			return row, err
		}
		row.Work.add(w)
	}
	row.Items = len(ids)
	fmt.Fprintf(r.o.Out, "  %-40s %3d items: %5.1f events, %4.1f workflow tasks, %5.1f persistence requests each\n", kind, row.Items,
		per(row.Work.Events, row.Items), per(row.Work.WorkflowTasks, row.Items), row.Work.PersistenceTotal()/float64(max(1, row.Items)))
	return row, nil
}

func per(n, items int) float64 { return float64(n) / float64(max(1, items)) }

// posts sends N order_invoice posts to orderRef in currency, one at a
// time, each with a new invoice reference (a parked post's order
// reference is its own, SO-P-n), checks each answer's outcome and returns
// their workflow IDs.
func (r *run) posts(ctx context.Context, orderRef, currency, outcome string) ([]string, error) {
	e, err := r.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: r.org, AsEmail: "o@bench.example", Name: "bench",
		Action: domain.ActionOrderInvoice})
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := range r.o.N {
		r.seq++
		ref := orderRef
		if outcome == "parked" {
			ref = fmt.Sprintf("%s-%d", orderRef, i)
		}
		body := fmt.Sprintf(`{"order_ref": %q, "invoice_ref": "INV-%07d", "amount_minor": 100, "currency": %q}`, ref, r.seq, currency)
		resp, err := http.Post(r.api+"/api/in/"+e.Token, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id, err := uuid.Parse(resp.Header.Get("X-Receipt-Id"))
		answered := strings.Contains(string(raw), `"outcome":"`+outcome+`"`)
		if outcome == "failed" {
			answered = resp.StatusCode == http.StatusUnprocessableEntity
		}
		if err != nil || !answered {
			return nil, fmt.Errorf("post: %d %s", resp.StatusCode, raw)
		}
		ids = append(ids, domain.InboundWorkflowID(id))
	}
	return ids, nil
}

// wake creates the orders the parked posts wait for and sends the wakes
// the relay would; the posts then apply.
func (r *run) wake(ctx context.Context, parked []string) ([]string, error) {
	var b strings.Builder
	b.WriteString(`{"orders": [`)
	for i := range parked {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"number": "SO-P-%d", "status": "confirmed", "lines": [{"description": "Bolts", "qty": 10, "unit_price_minor": 1000}]}`, i)
	}
	b.WriteString(`]}`)
	seed, err := domain.ParseSeed([]byte(b.String()))
	if err != nil {
		return nil, err
	}
	if _, err := r.d.Seed(ctx, r.org, seed); err != nil {
		return nil, err
	}
	w := &relay.Waiters{DB: r.d, Workflows: workflows.NewClient(r.tc, "default"), Log: zap.NewNop()}
	if n := w.Drain(ctx); n != len(parked) {
		return nil, fmt.Errorf("%d wakes sent for %d parked posts", n, len(parked))
	}
	for _, id := range parked {
		if err := closed(ctx, r.tc, id); err != nil {
			return nil, err
		}
	}
	return parked, nil
}

// failGroup is how many deliveries of a failing batch go at once: the
// subscription turns failing (and holds its retries) after 5 failed
// attempts in a row, so a batch of failing deliveries goes in groups
// below that, each group's retries succeeding before the next.
const failGroup = 4

// deliveries writes N events (customer.created), relays them as the
// outbox relay does, and waits for every delivery's workflow to close.
// With fail, the receiver answers 500 to each delivery's first attempt,
// the delivery policy puts the nightly retry 8 seconds ahead, and the
// deliveries go failGroup at a time.
func (r *run) deliveries(ctx context.Context, fail bool) ([]string, error) {
	group := r.o.N
	if fail {
		group = failGroup
	}
	var ids []string
	for len(ids) < r.o.N {
		got, err := r.deliveryGroup(ctx, min(group, r.o.N-len(ids)), fail)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

func (r *run) deliveryGroup(ctx context.Context, n int, fail bool) ([]string, error) {
	policy := domain.NewDeliveryPolicy(2 * time.Hour)
	if fail {
		now := time.Now().UTC()
		midnight := now.Truncate(24 * time.Hour)
		policy.NightlyAt = (now.Add(8 * time.Second).Sub(midnight)) % (24 * time.Hour)
		policy.Spread = 0
	}
	seen := r.rc.expect(n, fail)
	var batch []domain.CustomerInput
	for i := range n {
		r.seq++
		batch = append(batch, domain.CustomerInput{Company: fmt.Sprintf("Customer %06d-%d", r.seq, i)})
	}
	if _, err := r.d.UpsertCustomers(ctx, r.org, batch); err != nil {
		return nil, err
	}
	out := &relay.Outbox{DB: r.d, Workflows: workflows.NewClient(r.tc, "").WithDelivery(policy), Log: zap.NewNop()}
	if _, err := out.Drain(ctx); err != nil {
		return nil, err
	}
	var ids []string
	select {
	case got := <-seen:
		for _, id := range got {
			ids = append(ids, domain.WebhookWorkflowPrefix+id)
		}
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("not every delivery reached the receiver in a minute")
	}
	for _, id := range ids {
		if err := closed(ctx, r.tc, id); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// receiver answers deliveries; in a failing round each delivery's first
// attempt gets a 500. It reports the delivery ids once each has
// succeeded.
type receiver struct {
	mu     sync.Mutex
	fail   bool
	failed map[string]bool
	ok     []string
	want   int
	done   chan []string
	bad    int
}

func (rc *receiver) expect(n int, fail bool) <-chan []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.fail, rc.ok, rc.want = fail, nil, n
	rc.done = make(chan []string, 1)
	return rc.done
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	id := r.Header.Get(domain.HeaderDeliveryID)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, err := uuid.Parse(id); err != nil {
		rc.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if rc.fail && !rc.failed[id] {
		rc.failed[id] = true
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rc.ok = append(rc.ok, id)
	if len(rc.ok) == rc.want && rc.done != nil {
		rc.done <- rc.ok
		rc.done = nil
	}
	w.WriteHeader(http.StatusNoContent)
}
