// Package inbound benchmarks the latency of POST /api/in/{token} through the
// full API and an embedded Temporal server (the one `commerce dev` runs,
// SQLite-backed, with a worker in the same process), next to a bare net/http
// handler that does the same database work without Temporal: look the
// endpoint up and take from its rate limit, store the receipt, apply the
// action, record the outcome and the answer. Both run in the same process
// against the same database, interleaved.
//
//	go run ./bench/inbound [-posts 1000] [-clients 8] [-temporal-store sqlite]
//
// Each post is an order_invoice with a new invoice reference: a real write
// (the invoice row, its event and the effect record) every time. It uses
// BENCH_DATABASE_URL (default: database commerce_bench on the local server,
// created when missing) and drops its schema when done.
package inbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
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
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/tracing"
	"github.com/commerce-integration/commerce/workflows"
)

const (
	schema = "bench_inbound"
	// perEndpoint posts go to one endpoint before the next is used, below
	// the burst of 120 so that no post meets the rate limit.
	perEndpoint = 100
	block       = 50 // posts per path before switching to the other
)

// Options say how big a run is.
type Options struct {
	Posts   int // posts per path for the one-client latency run
	Clients int // concurrent clients for the throughput run (0 skips it)
	// Store is what the embedded Temporal server keeps its state in
	// (embedded.Stores).
	Store string
	// CPUProfile, when set, is where a CPU profile of the one-client runs
	// (both paths, interleaved) is written.
	CPUProfile string
	// Traced runs the path through Temporal with tracing on, as a process
	// whose environment names an OTLP collector: every span is exported,
	// over OTLP/HTTP, to a collector in this process that reads and drops
	// them. The direct path stays untraced: it is the run's yardstick.
	Traced bool
}

// Result is what a run measured: the one-client medians, and the posts per
// second of each path under Clients clients.
type Result struct {
	TemporalP50, DirectP50   time.Duration
	TemporalRate, DirectRate float64
	// ExportedPerPost is, in a traced run, the OTLP bytes exported per
	// post through Temporal.
	ExportedPerPost float64
}

// Run measures both paths.
func Run(ctx context.Context, o Options) (Result, error) {
	return run(ctx, o)
}

type bench struct {
	d        *db.DB
	org      uuid.UUID
	temporal string // base URL of the full API
	direct   string // base URL of the bare handler
	seq      int
	// throughTemporal counts the posts sent through Temporal.
	throughTemporal int
	mu              sync.Mutex
	// sent holds the one-client posts through Temporal, for phases.
	sent   []sentPost
	record bool
}

// sentPost is when a post through Temporal was sent and answered, and its
// receipt.
type sentPost struct {
	receipt     uuid.UUID
	start, done time.Time
}

func run(ctx context.Context, o Options) (Result, error) {
	posts, clients := o.Posts, o.Clients
	var res Result
	tr, collector, err := tracingFor(ctx, o.Traced)
	if err != nil {
		return res, err
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	d, done, err := harness.TracedDatabase(ctx, schema, tr.SQL())
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

	acts := &activities.Activities{DB: d, Log: zap.NewNop(), BaseURL: "http://bench"}
	tc, stopTemporal, err := embedded.Temporal(ctx, acts, o.Store, tr.Temporal()...)
	if err != nil {
		return res, err
	}
	defer stopTemporal()

	service := integrations.New(integrations.Deps{DB: d, Workflows: workflows.NewClient(tc, "default"), BaseURL: "http://bench", Namespace: "default"})
	full, err := harness.Listen(api.New(api.Deps{DB: d, Service: service, Temporal: tc, Logger: zap.NewNop(),
		Cursors: cursor.New(make([]byte, 32)), BaseURL: "http://bench", Tracing: tr}).Handler())
	if err != nil {
		return res, err
	}
	directDB := d
	if o.Traced {
		// The direct path's database work goes through an untraced pool.
		untraced, doneUntraced, err := harness.ReusedDatabase(ctx, schema, true)
		if err != nil {
			return res, err
		}
		defer doneUntraced()
		directDB = untraced
	}
	direct, err := harness.Listen(&directHandler{d: directDB, acts: &activities.Activities{DB: directDB, Log: zap.NewNop(), BaseURL: "http://bench"}})
	if err != nil {
		return res, err
	}
	b := &bench{d: d, org: org.ID, temporal: full, direct: direct}

	// Warm both paths (connections, plans, the workflow cache).
	for _, base := range []string{b.temporal, b.direct} {
		if _, err := b.sequence(ctx, base, 30); err != nil {
			return res, err
		}
	}

	fmt.Printf("\none client, %d posts per path, interleaved in blocks of %d\n\n", posts, block)
	var tLat, dLat []time.Duration
	stopProfile := harness.CPUProfile(o.CPUProfile)
	for len(tLat) < posts {
		n := min(block, posts-len(tLat))
		b.record = true
		t, err := b.sequence(ctx, b.temporal, n)
		b.record = false
		if err != nil {
			return res, err
		}
		dd, err := b.sequence(ctx, b.direct, n)
		if err != nil {
			return res, err
		}
		tLat, dLat = append(tLat, t...), append(dLat, dd...)
	}
	stopProfile()
	res.TemporalP50, res.DirectP50 = pct(tLat, 50), pct(dLat, 50)
	fmt.Printf("%-36s %9s %9s %9s %9s\n", "path", "p50", "p90", "p99", "max")
	row := func(name string, l []time.Duration) {
		slices.Sort(l)
		fmt.Printf("%-36s %7.2fms %7.2fms %7.2fms %7.2fms\n", name, ms(pct(l, 50)), ms(pct(l, 90)), ms(pct(l, 99)), ms(l[len(l)-1]))
	}
	row("API + Temporal workflow", tLat)
	row("same database work, no Temporal", dLat)
	fmt.Printf("%-36s %8.2fx %8.2fx %8.2fx\n", "ratio Temporal / direct",
		ratio(pct(tLat, 50), pct(dLat, 50)), ratio(pct(tLat, 90), pct(dLat, 90)), ratio(pct(tLat, 99), pct(dLat, 99)))
	if err := b.phases(ctx, tc); err != nil {
		return res, err
	}

	if clients > 0 {
		fmt.Printf("\n%d clients, 10 s per path (each client on its own endpoints)\n\n", clients)
		fmt.Printf("%-36s %10s %9s %9s\n", "path", "posts/s", "p50", "p99")
		for i, p := range []struct{ name, base string }{{"API + Temporal workflow", b.temporal}, {"same database work, no Temporal", b.direct}} {
			rate, lat, err := b.concurrent(ctx, p.base, clients, 10*time.Second)
			if err != nil {
				return res, err
			}
			if i == 0 {
				res.TemporalRate = rate
			} else {
				res.DirectRate = rate
			}
			slices.Sort(lat)
			fmt.Printf("%-36s %10.0f %7.2fms %7.2fms\n", p.name, rate, ms(pct(lat, 50)), ms(pct(lat, 99)))
		}
	}
	if o.Traced {
		// Every span ended is exported before the count is read.
		if err := tr.Shutdown(ctx); err != nil {
			return res, err
		}
		res.ExportedPerPost = float64(collector.bytes.Load()) / float64(b.throughTemporal)
		fmt.Printf("\ntracing on: %.1f KB of OTLP exported per post through Temporal (%d posts)\n", res.ExportedPerPost/1024, b.throughTemporal)
	}
	return res, nil
}

// sequence makes n posts one after another and returns their latencies.
func (b *bench) sequence(ctx context.Context, base string, n int) ([]time.Duration, error) {
	var out []time.Duration
	var token string
	for i := range n {
		if i%perEndpoint == 0 {
			var err error
			if token, err = b.endpoint(ctx); err != nil {
				return nil, err
			}
		}
		t, err := b.post(base, token)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// concurrent runs clients posting for d and returns posts per second and
// the latencies.
func (b *bench) concurrent(ctx context.Context, base string, clients int, d time.Duration) (float64, []time.Duration, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			var mine []time.Duration
			var token string
			for i := 0; time.Now().Before(deadline); i++ {
				var err error
				if i%perEndpoint == 0 {
					token, err = b.endpoint(ctx)
				}
				var t time.Duration
				if err == nil {
					t, err = b.post(base, token)
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, t)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(len(all)) / time.Since(start).Seconds(), all, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// endpoint creates a fresh order_invoice endpoint (outside the timing).
func (b *bench) endpoint(ctx context.Context) (string, error) {
	e, err := b.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: b.org, AsEmail: "o@bench.example", Name: "bench",
		Action: domain.ActionOrderInvoice})
	return e.Token, err
}

// post sends one invoice with a new reference and checks it was applied.
func (b *bench) post(base, token string) (time.Duration, error) {
	b.mu.Lock()
	b.seq++
	ref := b.seq
	if base == b.temporal {
		b.throughTemporal++
	}
	b.mu.Unlock()
	body := fmt.Sprintf(`{"order_ref": "SO-B", "invoice_ref": "INV-%07d", "amount_minor": 100, "currency": "GBP"}`, ref)
	start := time.Now()
	resp, err := http.Post(base+"/api/in/"+token, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	done := time.Now()
	elapsed := done.Sub(start)
	if id, err := uuid.Parse(resp.Header.Get("X-Receipt-Id")); err == nil && b.record && base == b.temporal {
		b.mu.Lock()
		b.sent = append(b.sent, sentPost{receipt: id, start: start, done: done})
		b.mu.Unlock()
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"outcome":"applied"`)) {
		return 0, fmt.Errorf("%s: %d %s", base, resp.StatusCode, raw)
	}
	return elapsed, nil
}

// directHandler does an inbound post's database work in the request, with
// the activities the workflow runs called as plain functions: the baseline.
type directHandler struct {
	d    *db.DB
	acts *activities.Activities
}

func (h *directHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	received := time.Now()
	token := strings.TrimPrefix(r.URL.Path, "/api/in/")
	post, err := h.d.PostToEndpoint(ctx, secrets.Hash(token))
	if err != nil || !post.Rate.Allowed {
		http.Error(w, `{"error":"refused"}`, http.StatusTooManyRequests)
		return
	}
	ep := post.Endpoint
	body, err := io.ReadAll(io.LimitReader(r.Body, domain.MaxInboundBody+1))
	if err != nil {
		http.Error(w, `{"error":"read"}`, http.StatusBadRequest)
		return
	}
	if _, err := domain.ParseInbound(ep.Action, body); err != nil {
		http.Error(w, `{"error":"shape"}`, http.StatusBadRequest)
		return
	}
	id, err := h.d.StoreReceipt(ctx, db.NewReceipt{OrgID: ep.OrgID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: received,
		Headers: map[string]string{"Content-Type": r.Header.Get("Content-Type")}, Body: body, Size: len(body), BodyComplete: true})
	if err != nil {
		http.Error(w, `{"error":"store"}`, http.StatusInternalServerError)
		return
	}
	in := domain.InboundInput{OrgID: ep.OrgID, EndpointID: ep.ID, ReceiptID: id, Source: id, Action: ep.Action}
	// The action and its outcome with the answer, in the one step the
	// workflow takes.
	step, err := h.acts.ApplyInboundStep(ctx, domain.InboundStepInput{Post: in, KeepAnswer: true})
	out := domain.InboundOutcome{Result: &step.Result}
	if err == nil && !step.Recorded {
		err = errors.New("the step did not record the outcome")
	}
	if err != nil {
		http.Error(w, `{"error":"apply"}`, http.StatusInternalServerError)
		return
	}
	status, answer := out.HTTPAnswer(id, ep.Action)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

func pct(sorted []time.Duration, p int) time.Duration {
	s := slices.Clone(sorted)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// phases reads the histories of the one-client posts through Temporal and
// prints the median time of each step of a post, from the client's send to
// its answer: the API's work before the workflow starts (the endpoint's
// lookup and the receipt, then update-with-start), the first workflow task's
// dispatch to the worker, the worker's task (the action and the outcome,
// as local activities, and the workflow's completion), and the answer's
// way back (the update's result to the API, the answer recorded on the
// receipt, the HTTP response). The server and the client share a clock.
func (b *bench) phases(ctx context.Context, c client.Client) error {
	var api, dispatch, task, back []time.Duration
	for _, p := range b.sent {
		var started, taskStarted, taskDone time.Time
		it := c.GetWorkflowHistory(ctx, domain.InboundWorkflowID(p.receipt), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return fmt.Errorf("history of %s: %w", p.receipt, err)
			}
			at := e.GetEventTime().AsTime()
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				started = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				if taskStarted.IsZero() {
					taskStarted = at
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if taskDone.IsZero() {
					taskDone = at
				}
			}
		}
		if started.IsZero() || taskStarted.IsZero() || taskDone.IsZero() {
			return fmt.Errorf("history of %s: no first workflow task", p.receipt)
		}
		api = append(api, started.Sub(p.start))
		dispatch = append(dispatch, taskStarted.Sub(started))
		task = append(task, taskDone.Sub(taskStarted))
		back = append(back, p.done.Sub(taskDone))
	}
	if len(api) == 0 {
		return nil
	}
	fmt.Printf("\nwhere a post through Temporal spends its time (median of %d posts)\n\n", len(api))
	for _, ph := range []struct {
		name string
		d    []time.Duration
	}{
		{"API: endpoint, receipt, update-with-start", api},
		{"first workflow task reaches the worker", dispatch},
		{"worker: action + outcome, task completed", task},
		{"answer back: update result, receipt, HTTP", back},
	} {
		fmt.Printf("  %-44s %7.2fms\n", ph.name, ms(pct(ph.d, 50)))
	}
	return nil
}

// tracingFor is the run's tracing: off, or on as FromEnv makes it for a
// process whose environment names an OTLP/HTTP collector, here one in this
// process that counts what it is sent and drops it.
func tracingFor(ctx context.Context, on bool) (*tracing.Tracing, *collector, error) {
	if !on {
		return nil, nil, nil
	}
	c := &collector{}
	url, err := harness.Listen(c)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_TRACES_SAMPLER": "always_on"} {
		if err := os.Setenv(k, v); err != nil {
			return nil, nil, err
		}
	}
	tr, err := tracing.FromEnv(ctx, "commerce-bench")
	return tr, c, err
}

// collector is an OTLP/HTTP trace receiver that counts the bytes it is
// sent and answers success.
type collector struct{ bytes atomic.Int64 }

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	c.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}
