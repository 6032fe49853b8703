package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"

	"github.com/commerce-integration/commerce/bench/internal/procs"
)

// Options size the runs.
type Options struct {
	Runs       int
	Posts      int     // inbound posts in the burst
	Deliveries int     // webhook deliveries in the burst (at least Posts)
	Clients    int     // posts in flight at once
	KillAt     float64 // fraction of posts applied + deliveries made when the worker is killed
	Settle     time.Duration
	// TemporalStore is the embedded Temporal server's persistence.
	TemporalStore string
	// Bin is a commerce binary to run as the worker; when empty, Run
	// builds one from the module.
	Bin string
	Out io.Writer
}

// perEndpoint posts go to one endpoint: below its burst of 120, so that
// none meets the rate limit.
const perEndpoint = 100

// customersPerCall is how many customers one REST call creates, for the
// deliveries beyond the posts'.
const customersPerCall = 10

// eventTypes are what the subscription receives: the posts' invoices and
// the customers created through the REST API.
var eventTypes = []string{domain.EventOrderInvoiceRecorded, domain.EventCustomerCreated}

func (o Options) validate() error {
	switch {
	case o.Runs < 1, o.Posts < 1, o.Clients < 1:
		return errors.New("-runs, -posts and -clients must be at least 1")
	case o.Deliveries < o.Posts:
		return fmt.Errorf("-deliveries (%d) must be at least -posts (%d): each post's invoice is delivered", o.Deliveries, o.Posts)
	case o.KillAt <= 0 || o.KillAt >= 1:
		return errors.New("-kill-at must be between 0 and 1")
	}
	switch o.TemporalStore {
	case "sqlite", "postgres", "":
		return nil
	}
	return fmt.Errorf("-temporal-store %q: want sqlite or postgres", o.TemporalStore)
}

// temporalStore configures the embedded Temporal server's persistence: a
// SQLite file in dir, or two Postgres databases beside the run's database
// (dbURL), which the run drops at its end.
func temporalStore(store, dir, dbURL string) (devtemporal.Config, func(), error) {
	switch store {
	case "sqlite", "":
		return devtemporal.Config{DBFile: filepath.Join(dir, "temporal.db")}, func() {}, nil
	case "postgres":
		p, err := devtemporal.PostgresFor(dbURL)
		if err != nil {
			return devtemporal.Config{}, nil, err
		}
		return devtemporal.Config{Postgres: &p}, func() { _ = p.Drop() }, nil
	default:
		return devtemporal.Config{}, nil, fmt.Errorf("-temporal-store %q: want sqlite or postgres", store)
	}
}

// Run builds the commerce binary and makes opts.Runs runs, printing one
// table row for each.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "crash-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := opts.Bin
	if bin == "" {
		fmt.Fprint(opts.Out, "building commerce ... ")
		started := time.Now()
		if bin, err = build(ctx, dir); err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Out, "%.1fs\n", time.Since(started).Seconds())
	}
	var results []Result
	for i := range opts.Runs {
		fmt.Fprintf(opts.Out, "\nrun %d: %d posts, %d deliveries, %d clients, worker killed at %.0f%% of the work\n",
			i+1, opts.Posts, opts.Deliveries, opts.Clients, opts.KillAt*100)
		res, err := runOnce(ctx, bin, opts)
		if err != nil {
			return results, fmt.Errorf("run %d: %w", i+1, err)
		}
		res.Run = i + 1
		results = append(results, res)
		res.printProblems(opts.Out)
	}
	printTable(opts.Out, results)
	return results, nil
}

// setup is one run's service: its database, Temporal server, API, worker
// environment, organisation and receiver.
type setup struct {
	opts     Options
	bin      string
	dir      string
	d        *db.DB
	tc       client.Client
	org      uuid.UUID
	apiURL   string
	apiKey   string
	tokens   []string
	rc       *receiver
	env      []string
	stops    []func()
	workers  int
	worker   *workerProc
	workerMu sync.Mutex
}

func (s *setup) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func runOnce(ctx context.Context, bin string, opts Options) (Result, error) {
	s := &setup{opts: opts, bin: bin}
	defer s.close()
	if err := s.start(ctx); err != nil {
		return Result{}, err
	}
	return s.burst(ctx)
}

// start brings up everything but the worker's kill: database, Temporal,
// API, data, receiver and the first worker.
func (s *setup) start(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "crash-run-")
	if err != nil {
		return err
	}
	s.dir = dir
	s.stops = append(s.stops, func() { _ = os.RemoveAll(dir) })

	dbURL, drop, err := procs.Database(ctx, "CRASH_DATABASE_URL", "crash")
	if err != nil {
		return err
	}
	s.stops = append(s.stops, drop)
	if _, err := db.Migrate(ctx, dbURL); err != nil {
		return err
	}
	if s.d, err = db.Connect(ctx, dbURL, 0); err != nil {
		return err
	}
	s.stops = append(s.stops, s.d.Close)

	serviceKey := secrets.NewServiceKey()
	key, err := secrets.ParseServiceKey(serviceKey)
	if err != nil {
		return err
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		return err
	}

	// The organisation, an order the invoices name, one order_invoice
	// endpoint per 100 posts, a key for the customers route, and the
	// subscription to the receiver.
	org, _, err := s.d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Crash Ltd", OwnerEmail: "owner@crash.example"})
	if err != nil {
		return err
	}
	s.org = org.ID
	seed, err := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-CRASH", "status": "confirmed",
		"lines": [{"description": "Bolts", "qty": 1000000, "unit_price_minor": 1000}]}]}`))
	if err != nil {
		return err
	}
	if _, err := s.d.Seed(ctx, s.org, seed); err != nil {
		return err
	}
	for i := 0; i < s.opts.Posts; i += perEndpoint {
		e, err := s.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: s.org, AsEmail: "owner@crash.example",
			Name: fmt.Sprintf("invoices %d", i/perEndpoint+1), Action: domain.ActionOrderInvoice})
		if err != nil {
			return err
		}
		s.tokens = append(s.tokens, e.Token)
	}
	if _, s.apiKey, err = s.d.CreateAPIKey(ctx, s.org, "crash", []domain.Scope{domain.ScopeCustomersWrite}); err != nil {
		return err
	}
	s.rc = newReceiver()
	receiverURL, stopReceiver, err := serve(s.rc)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stopReceiver)
	sub, err := s.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: s.org, URL: receiverURL + "/hooks", EventTypes: eventTypes})
	if err != nil {
		return err
	}
	s.rc.secret = sub.Secret

	// The Temporal server lives in this process, so the worker's death
	// does not touch it.
	tcfg, dropStore, err := temporalStore(s.opts.TemporalStore, dir, dbURL)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, dropStore)
	// The server picks its frontend port itself, just before it binds it.
	tcfg.Namespace, tcfg.FrontendPort, tcfg.UIPort = "default", -1, -1
	tcfg.Logger, tcfg.SearchAttributes = zap.NewNop(), workflows.SearchAttributes()
	tsrv, err := devtemporal.Start(ctx, tcfg)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, tsrv.Stop)
	if s.tc, err = client.DialContext(ctx, client.Options{HostPort: tsrv.FrontendAddress(), Namespace: "default", Logger: quiet{}}); err != nil {
		return err
	}
	s.stops = append(s.stops, s.tc.Close)

	// The API in this process; the worker in its own.
	h := api.New(api.Deps{DB: s.d, Temporal: s.tc, Namespace: "default", Logger: zap.NewNop(), Cursors: cursor.New(key),
		Sealer: sealer, BaseURL: "http://crash.example", Targets: outbound.AnyTarget}).Handler()
	var stopAPI func()
	if s.apiURL, stopAPI, err = serve(h); err != nil {
		return err
	}
	s.stops = append(s.stops, stopAPI)
	s.env = []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + tsrv.FrontendAddress(), "TEMPORAL_NAMESPACE=default",
		"COMMERCE_SECRET_KEY=" + serviceKey, "COMMERCE_ALLOW_PRIVATE_TARGETS=true", "COMMERCE_BASE_URL=http://crash.example",
		"COMMERCE_LOG_FORMAT=json", "COMMERCE_LOG_LEVEL=info"}
	s.stops = append(s.stops, func() {
		s.workerMu.Lock()
		w := s.worker
		s.workerMu.Unlock()
		if w != nil {
			w.stop()
		}
	})
	_, err = s.startWorker(ctx)
	return err
}

// startWorker starts the next `commerce worker` process.
func (s *setup) startWorker(ctx context.Context) (*workerProc, error) {
	s.workers++
	w, err := startWorker(ctx, s.bin, s.env, filepath.Join(s.dir, "worker-"+strconv.Itoa(s.workers)+".log"))
	if err != nil {
		return nil, err
	}
	s.workerMu.Lock()
	s.worker = w
	s.workerMu.Unlock()
	return w, nil
}

// answer is what one post got back.
type answer struct {
	status  int
	outcome string
	err     error
}

// kill is when, and into what, the worker was killed.
type kill struct {
	after     time.Duration
	applied   int
	delivered int
	answered  int
	down      time.Duration // from the kill until the new worker polled
}

// burst sends the posts and the customers, kills the worker part-way,
// starts another, waits for everything to settle and checks it.
func (s *setup) burst(ctx context.Context) (Result, error) {
	out := s.opts.Out
	start := time.Now()
	answers := make([]answer, s.opts.Posts)
	var answered sync.WaitGroup
	var nAnswered counter
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: s.opts.Clients}}

	jobs := make(chan int)
	for range s.opts.Clients {
		answered.Go(func() {
			for i := range jobs {
				answers[i] = s.post(ctx, hc, i)
				nAnswered.add(1)
			}
		})
	}
	go func() {
		defer close(jobs)
		for i := range s.opts.Posts {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	customerErr := make(chan error, 1)
	go func() { customerErr <- s.customers(ctx, hc) }()

	// Kill the worker once the given share of the work is done.
	var k kill
	target := int(s.opts.KillAt * float64(s.opts.Posts+s.opts.Deliveries))
	killBy := time.Now().Add(s.opts.Settle)
	for {
		applied, delivered, err := s.progress(ctx)
		if err != nil {
			return Result{}, err
		}
		if applied+delivered >= target {
			k = kill{after: time.Since(start), applied: applied, delivered: delivered, answered: nAnswered.get()}
			break
		}
		if time.Now().After(killBy) {
			return Result{}, fmt.Errorf("%d posts applied and %d deliveries made after %s, short of the %d to kill the worker at:\n%s",
				applied, delivered, s.opts.Settle, target, s.worker.logTail(20))
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.workerMu.Lock()
	old := s.worker
	s.workerMu.Unlock()
	killedAt := time.Now()
	old.kill()
	fmt.Fprintf(out, "  %5.1fs  SIGKILL worker pid %d: %d/%d posts applied, %d answered, %d/%d delivered\n",
		k.after.Seconds(), old.pid(), k.applied, s.opts.Posts, k.answered, k.delivered, s.opts.Deliveries)
	w, err := s.startWorker(ctx)
	if err != nil {
		return Result{}, err
	}
	k.down = time.Since(killedAt)
	fmt.Fprintf(out, "  %5.1fs  worker pid %d polling, %.1fs after the kill\n", time.Since(start).Seconds(), w.pid(), k.down.Seconds())

	postsDone := make(chan struct{})
	go func() { answered.Wait(); close(postsDone) }()
	// Settle: every post answered and final, every event relayed and
	// delivered, no workflow running.
	deadline := time.Now().Add(s.opts.Settle)
	lastPrint := time.Now()
	settled := false
	for !settled {
		st, err := s.state(ctx)
		if err != nil {
			return Result{}, err
		}
		done := false
		select {
		case <-postsDone:
			done = true
		default:
		}
		settled = done && st.quiet()
		if settled || time.Since(lastPrint) >= 5*time.Second {
			fmt.Fprintf(out, "  %5.1fs  %d/%d answered, %d applied, %d pending; %d events unrelayed, %d/%d delivered, %d pending, %d received; %d workflows running\n",
				time.Since(start).Seconds(), nAnswered.get(), s.opts.Posts, st.applied, st.pendingReceipts,
				st.unrelayed, st.delivered, s.opts.Deliveries, st.pendingDeliveries, s.rc.events(), st.running)
			lastPrint = time.Now()
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(out, "  not settled after %s: checking what is there\n", s.opts.Settle)
			break
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	select {
	case <-postsDone:
	case <-time.After(5 * time.Minute):
		return Result{}, errors.New("posts still unanswered 5 minutes after the settling ended")
	}
	if err := <-customerErr; err != nil {
		return Result{}, err
	}
	res, err := s.check(ctx, answers)
	if err != nil {
		return Result{}, err
	}
	res.Kill, res.Settled, res.TimedOut = k, elapsed, !settled
	if res.Failed() {
		fmt.Fprintf(out, "  the last worker's log ends:\n%s\n", s.worker.logTail(10))
	}
	return res, nil
}

// post sends post i: an invoice with its own reference to its endpoint,
// with an Idempotency-Key.
func (s *setup) post(ctx context.Context, c *http.Client, i int) answer {
	body := fmt.Sprintf(`{"order_ref": "SO-CRASH", "invoice_ref": %q, "amount_minor": 100, "currency": "GBP"}`, invoiceRef(i))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apiURL+"/api/in/"+s.tokens[i/perEndpoint], bytes.NewReader([]byte(body)))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.IdempotencyKeyHeader, "crash-post-"+strconv.Itoa(i))
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	var a struct {
		Outcome string `json:"outcome"`
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &a)
	return answer{status: resp.StatusCode, outcome: a.Outcome}
}

func invoiceRef(i int) string { return fmt.Sprintf("CRASH-%05d", i) }

func customerRef(i int) string { return fmt.Sprintf("CRASH-C-%05d", i) }

// customers creates the customers whose customer.created events make the
// deliveries beyond the posts', through the REST API, a few per call; a
// call refused for the rate limit or failing is sent again with its
// Idempotency-Key.
func (s *setup) customers(ctx context.Context, c *http.Client) error {
	n := s.opts.Deliveries - s.opts.Posts
	for first := 0; first < n; first += customersPerCall {
		var batch []map[string]string
		for i := first; i < min(n, first+customersPerCall); i++ {
			batch = append(batch, map[string]string{"company": "Crash customer " + customerRef(i), "external_id": customerRef(i)})
		}
		body, _ := json.Marshal(map[string]any{"customers": batch})
		for try := 0; ; try++ {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apiURL+"/api/v1/customers", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.apiKey)
			req.Header.Set(api.IdempotencyKeyHeader, "crash-customers-"+strconv.Itoa(first))
			resp, err := c.Do(req)
			status := 0
			if err == nil {
				status = resp.StatusCode
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if status >= 200 && status < 300 {
				break
			}
			if try == 20 || ctx.Err() != nil || (status != 0 && status != http.StatusTooManyRequests && status != http.StatusConflict && status < 500) {
				return fmt.Errorf("POST /api/v1/customers: %d %v", status, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// progress counts the posts applied and the deliveries made.
func (s *setup) progress(ctx context.Context) (applied, delivered int, err error) {
	err = s.d.Pool().QueryRow(ctx, `
		SELECT (SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'applied'),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded')`, s.org).Scan(&applied, &delivered)
	return applied, delivered, err
}

// state is where the run stands while it settles.
type state struct {
	applied, pendingReceipts                int
	unrelayed, delivered, pendingDeliveries int
	running                                 int64
}

// quiet reports that nothing is left to happen: no post waiting for its
// outcome, no event waiting for the relay, no delivery waiting for an
// attempt, no workflow running.
func (st state) quiet() bool {
	return st.pendingReceipts == 0 && st.unrelayed == 0 && st.pendingDeliveries == 0 && st.running == 0
}

func (s *setup) state(ctx context.Context) (state, error) {
	var st state
	err := s.d.Pool().QueryRow(ctx, `
		SELECT (SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'applied'),
		       (SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'pending'),
		       (SELECT count(*) FROM events WHERE org_id = $1 AND relayed_at IS NULL),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded'),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'pending')`, s.org).
		Scan(&st.applied, &st.pendingReceipts, &st.unrelayed, &st.delivered, &st.pendingDeliveries)
	if err != nil {
		return st, err
	}
	st.running, err = s.countWorkflows(ctx, "ExecutionStatus = 'Running'")
	return st, err
}

func (s *setup) countWorkflows(ctx context.Context, query string) (int64, error) {
	resp, err := s.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: query})
	if err != nil {
		return 0, fmt.Errorf("count workflows (%s): %w", query, err)
	}
	return resp.GetCount(), nil
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add(n int) { c.mu.Lock(); c.n += n; c.mu.Unlock() }
func (c *counter) get() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// quiet is a Temporal SDK logger that drops everything.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
