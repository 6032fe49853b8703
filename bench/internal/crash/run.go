package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/internal/health"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"

	"github.com/commerce-integration/commerce/bench/internal/harness"
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
	// builds one from the module (embedded shape only).
	Bin string
	// Shape is ShapeEmbedded (the default) or ShapeProd.
	Shape string
	// APIs and Workers are how many `commerce serve` and `commerce worker`
	// processes the production shape runs (2 each by default).
	APIs, Workers int
	// Faults are struck in this order: the first at KillAt of the work,
	// each next one FaultEvery later. The embedded shape takes only
	// FaultWorker.
	Faults     []Fault
	FaultEvery float64
	// TemporalDown is how long the Temporal server stays down before it
	// is started again (FaultTemporal).
	TemporalDown time.Duration
	Out          io.Writer
	// Upgrade is a git ref of a previous release: the run is a rolling
	// upgrade from it to this checkout (RunUpgrade) instead of faults.
	Upgrade string
	// Env is more environment for the commerce processes, TemporalEnv for
	// the Temporal server (prod shape): a soak turns profiles and metrics on.
	Env, TemporalEnv []string
	// TemporalCache, when set, replaces the compose file's host-level
	// workflow cache size of the Temporal server (prod shape).
	TemporalCache int
	// Idle, when set, has the run's processes (prod shape) sit with
	// nothing to do for Idle before the burst, then measures their CPU
	// over another Idle (Result.IdleCPU).
	Idle time.Duration
	// TemporalMetrics, when set, is the Temporal server's Prometheus
	// endpoint (its PROMETHEUS_ENDPOINT, in TemporalEnv too): the run
	// counts its visibility-store requests over the burst
	// (Result.Visibility).
	TemporalMetrics string
}

// Fault is what a run breaks in the middle of its burst.
type Fault string

const (
	// FaultWorker: a worker gets SIGKILL, and a new one is started.
	FaultWorker Fault = "worker"
	// FaultAPI: an API replica gets SIGKILL with requests in flight, and a
	// new one is started on its port; the clients whose requests it cut
	// send them again, with their Idempotency-Key, to another replica.
	FaultAPI Fault = "api"
	// FaultTemporal: the Temporal server gets SIGKILL and is started
	// again on the same databases.
	FaultTemporal Fault = "temporal"
)

// perEndpoint posts go to one endpoint: below its burst of 120, so that
// none meets the rate limit.
const perEndpoint = 100

// subscriptionRate is the subscriptions' rate_limit_per_second.
const subscriptionRate = 20

// customersPerCall is how many customers one REST call creates, for the
// deliveries beyond the posts'.
const customersPerCall = 10

// eventTypes are what the subscription receives: the posts' invoices and
// the customers created through the REST API.
var eventTypes = []string{domain.EventOrderInvoiceRecorded, domain.EventCustomerCreated}

func (o *Options) validate() error {
	if o.Shape == "" {
		o.Shape = ShapeEmbedded
	}
	if o.Faults == nil {
		o.Faults = []Fault{FaultWorker}
	}
	if o.FaultEvery == 0 {
		o.FaultEvery = 0.2
	}
	if o.APIs == 0 {
		o.APIs = 2
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	switch {
	case o.Runs < 1, o.Posts < 1, o.Clients < 1:
		return errors.New("-runs, -posts and -clients must be at least 1")
	case o.Deliveries < o.Posts:
		return fmt.Errorf("-deliveries (%d) must be at least -posts (%d): each post's invoice is delivered", o.Deliveries, o.Posts)
	case len(o.Faults) > 0 && (o.KillAt <= 0 || o.KillAt+o.FaultEvery*float64(len(o.Faults)-1) >= 1):
		return errors.New("-kill-at and -fault-every must strike every fault between 0 and 1 of the work")
	case o.Shape != ShapeEmbedded && o.Shape != ShapeProd:
		return fmt.Errorf("-shape %q: want embedded or prod", o.Shape)
	case o.Shape == ShapeProd && (o.APIs < 1 || o.Workers < 1):
		return errors.New("-apis and -workers must be at least 1")
	}
	for _, f := range o.Faults {
		switch {
		case f != FaultWorker && f != FaultAPI && f != FaultTemporal && !netFault(f):
			return fmt.Errorf("fault %q: want worker, api, temporal, postgres, postgres-restart, latency, partition-db or partition-temporal", f)
		case f != FaultWorker && o.Shape == ShapeEmbedded:
			return fmt.Errorf("fault %q needs -shape prod: the embedded shape runs the API and Temporal in the harness's process", f)
		case f == FaultAPI && o.APIs < 2:
			return errors.New("fault api needs at least two API replicas: the clients go on with the other")
		}
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

// Run builds the binaries and makes opts.Runs runs, printing one table row
// for each.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "crash-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := func(format string, args ...any) { fmt.Fprintf(opts.Out, format, args...) }
	var bins prodBins
	var cf compose
	if opts.Shape == ShapeProd {
		if cf, err = readCompose(ctx); err != nil {
			return nil, err
		}
		if bins, err = buildProd(ctx, dir, out); err != nil {
			return nil, err
		}
		if opts.Bin != "" {
			bins.commerce = opts.Bin
		}
	} else if bins.commerce = opts.Bin; bins.commerce == "" {
		out("building commerce ... ")
		started := time.Now()
		if bins.commerce, err = build(ctx, dir); err != nil {
			return nil, err
		}
		out("%.1fs\n", time.Since(started).Seconds())
	}
	var results []Result
	for i := range opts.Runs {
		faults := "no faults"
		if len(opts.Faults) > 0 {
			faults = fmt.Sprintf("faults %v from %.0f%% of the work, every %.0f%%", opts.Faults, opts.KillAt*100, opts.FaultEvery*100)
		}
		out("\nrun %d (%s shape): %d posts, %d deliveries, %d clients; %s\n",
			i+1, opts.Shape, opts.Posts, opts.Deliveries, opts.Clients, faults)
		s := &setup{opts: opts, bins: bins, compose: cf}
		res, err := s.run(ctx)
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

// setup is one run's service: its database, Temporal server, APIs,
// workers, organisation and receiver.
type setup struct {
	opts    Options
	bins    prodBins
	compose compose
	dir     string
	dbURL   string
	d       *db.DB
	tc      client.Client
	org     uuid.UUID
	apiKey  string
	tokens  []string
	rc      *receiver
	sub     uuid.UUID
	// down is a second subscriber, to the invoices alone, whose receiver
	// answers 503 until the faults have been struck: its subscription
	// becomes failing and holds its deliveries (downSub).
	down    *receiver
	downSub uuid.UUID
	stops   []func()

	// The processes, which faults replace.
	mu        sync.Mutex
	apiURLs   []string
	apiPorts  []int
	apis      []*proc
	workers   []*proc
	temporal  *temporalServer
	started   int // processes started, for their log names
	workerEnv []string
	apiEnv    []string
	peakConns int
	// The peaks of each side: the service's database, Temporal's two.
	peakService, peakTemporal int
	maxConns                  int
	sampleStop                chan struct{}
	// held are the down subscription's deliveries seen held (sampled
	// every 100 ms); resent are its failed deliveries the harness resent.
	held, resent map[uuid.UUID]bool
	// cpu adds up each kind of process's CPU over the burst (prod shape).
	cpu *cpuBook
	// keepLogs keeps the run's directory (its processes' logs) when it
	// lost or doubled anything, or a fault's outage broke its bounds.
	keepLogs bool
	// migrate and prepare, when set, stand in for db.Migrate and data (a
	// rolling upgrade migrates with, and makes its data for, the release
	// it starts from).
	migrate func(ctx context.Context, dbURL string) error
	prepare func(ctx context.Context, sealer *secrets.Sealer) error
	// orders, when more than one, spreads the posts' invoices over that
	// many orders (orderRef); otherwise every invoice is on SO-CRASH, so
	// that the per-entity subscription's order check sees them all.
	orders int
	// net: the private Postgres and toxiproxy of the database and network
	// faults (dbfaults.go).
	net *netSetup
	// server, when set, is the Postgres server the run makes its
	// databases on (the service's and Temporal's); otherwise the one
	// CRASH_DATABASE_URL names, or the local one.
	server string
}

func (s *setup) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func (s *setup) run(ctx context.Context) (Result, error) {
	defer s.close()
	if err := s.start(ctx); err != nil {
		return Result{}, err
	}
	return s.burst(ctx)
}

// start brings up everything: database, Temporal, the APIs, the data, the
// receiver and the workers.
func (s *setup) start(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "crash-run-")
	if err != nil {
		return err
	}
	s.dir = dir
	s.stops = append(s.stops, func() {
		if s.keepLogs {
			fmt.Fprintf(s.opts.Out, "  the run's process logs are kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	var dbURL string
	var drop func()
	if s.server != "" {
		dbURL, drop, err = procs.DatabaseOn(ctx, s.server, "crash")
	} else {
		dbURL, drop, err = procs.Database(ctx, "CRASH_DATABASE_URL", "crash")
	}
	if err != nil {
		return err
	}
	s.stops = append(s.stops, drop)
	sharedURL := dbURL // Temporal's databases stay beside it
	if dbURL, err = s.privateDatabase(ctx, dbURL); err != nil {
		return err
	}
	s.dbURL = dbURL
	migrate := s.migrate
	if migrate == nil {
		migrate = func(ctx context.Context, dbURL string) error { _, err := db.Migrate(ctx, dbURL); return err }
	}
	if err := migrate(ctx, dbURL); err != nil {
		return err
	}
	// The harness's own connections are named, so that their CPU is not
	// counted as the service's.
	own, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	q := own.Query()
	q.Set("application_name", harnessApp)
	own.RawQuery = q.Encode()
	if s.d, err = db.Connect(ctx, own.String(), 4); err != nil {
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
	if err := s.data(ctx, sealer); err != nil {
		return err
	}
	if err := s.makeReadKey(ctx); err != nil {
		return err
	}

	var temporalAddress string
	if s.opts.Shape == ShapeProd {
		started := time.Now()
		if s.opts.TemporalCache > 0 {
			s.compose = s.compose.withHostCache(s.opts.TemporalCache)
		}
		t, dropTemporal, err := setupTemporal(ctx, s.bins, s.compose, sharedURL, dir)
		if err != nil {
			return err
		}
		s.stops = append(s.stops, dropTemporal)
		t.env = append(t.env, s.opts.TemporalEnv...)
		s.temporal = t
		s.stops = append(s.stops, func() {
			if t.proc != nil {
				t.proc.stop()
			}
		})
		if err := t.start(ctx); err != nil {
			return err
		}
		if err := setupNamespace(ctx, t.address, "default"); err != nil {
			return err
		}
		temporalAddress = t.address
		fmt.Fprintf(s.opts.Out, "  Temporal server up, schemas, namespace and search attributes set up, in %.1fs\n", time.Since(started).Seconds())
	} else {
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
		temporalAddress = tsrv.FrontendAddress()
	}
	if s.tc, err = client.DialContext(ctx, client.Options{HostPort: temporalAddress, Namespace: "default", Logger: quiet{}}); err != nil {
		return err
	}
	s.stops = append(s.stops, s.tc.Close)

	env := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + temporalAddress, "TEMPORAL_NAMESPACE=default",
		"COMMERCE_SECRET_KEY=" + serviceKey, "COMMERCE_ALLOW_PRIVATE_TARGETS=true", "COMMERCE_BASE_URL=http://crash.example",
		"COMMERCE_LOG_FORMAT=json", "COMMERCE_LOG_LEVEL=info", "COMMERCE_METRICS_LISTEN=127.0.0.1:0"}
	s.workerEnv = append(append(slices.Clone(env), s.compose.envOf("worker")...), s.opts.Env...)
	s.apiEnv = append(append(slices.Clone(env), s.compose.envOf("api")...), s.opts.Env...)
	if err := s.routeThroughProxies(ctx, temporalAddress); err != nil {
		return err
	}
	s.stops = append(s.stops, func() {
		s.mu.Lock()
		ps := append(slices.Clone(s.apis), s.workers...)
		s.mu.Unlock()
		for _, p := range ps {
			if p != nil { // not started
				p.stop()
			}
		}
	})

	if s.opts.Shape == ShapeProd {
		if s.apiPorts, err = devtemporal.FreePorts("127.0.0.1", s.opts.APIs); err != nil {
			return err
		}
		for i := range s.opts.APIs {
			s.apiURLs = append(s.apiURLs, "http://127.0.0.1:"+strconv.Itoa(s.apiPorts[i]))
			s.apis = append(s.apis, nil)
			if _, err := s.startAPI(ctx, i); err != nil {
				return err
			}
		}
	} else {
		// The API in this process; the worker in its own.
		service := integrations.New(integrations.Deps{DB: s.d, Workflows: workflows.NewClient(s.tc, "default"), Sealer: sealer,
			BaseURL: "http://crash.example", Namespace: "default", Targets: outbound.AnyTarget})
		h := api.New(api.Deps{DB: s.d, Service: service, Temporal: s.tc, Logger: zap.NewNop(), Cursors: cursor.New(key),
			BaseURL: "http://crash.example"}).Handler()
		apiURL, stopAPI, err := harness.Serve(h)
		if err != nil {
			return err
		}
		s.stops = append(s.stops, stopAPI)
		s.apiURLs = []string{apiURL}
	}
	workers := 1
	if s.opts.Shape == ShapeProd {
		workers = s.opts.Workers
	}
	for i := range workers {
		s.workers = append(s.workers, nil)
		if _, err := s.startWorker(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// data makes the organisation, an order the invoices name, one
// order_invoice endpoint per 100 posts, a key for the customers route, and
// the subscription to the receiver.
func (s *setup) data(ctx context.Context, sealer *secrets.Sealer) error {
	if s.prepare != nil {
		return s.prepare(ctx, sealer)
	}
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
	if _, s.apiKey, err = s.d.CreateAPIKey(ctx, s.org, "crash", []domain.Scope{domain.ScopeCustomersWrite, domain.ScopeWebhooksWrite}); err != nil {
		return err
	}
	s.rc = newReceiver()
	receiverURL, stopReceiver, err := harness.Serve(s.rc)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stopReceiver)
	// Rate-limited and ordered per entity: the killed worker must not make
	// the relays start faster than the rate, or an order's invoices arrive
	// out of their order (all the posts' invoices are about one order).
	rate, ordering := subscriptionRate, db.OrderingPerEntity
	sub, err := s.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: s.org, URL: receiverURL + "/hooks", EventTypes: eventTypes,
		RateLimit: &rate, Ordering: &ordering})
	if err != nil {
		return err
	}
	s.rc.secret, s.sub = sub.Secret, sub.ID

	if len(s.opts.Faults) == 0 {
		return nil // runs without faults measure the work alone
	}
	// The receiver that is down: after its fifth failed attempt in a row
	// the subscription is failing, and the invoices' later deliveries are
	// held, with no attempt spent, until it is up and one succeeds.
	s.down = newReceiver()
	s.down.setDown(true)
	downURL, stopDown, err := harness.Serve(s.down)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stopDown)
	downSub, err := s.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: s.org, URL: downURL + "/hooks",
		EventTypes: []string{domain.EventOrderInvoiceRecorded}, RateLimit: &rate})
	if err != nil {
		return err
	}
	s.down.secret, s.downSub = downSub.Secret, downSub.ID
	s.held, s.resent = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	return nil
}

// harnessApp is the application_name of the harness's own connections.
const harnessApp = "crash-harness"

// logPath names the next process's log.
func (s *setup) logPath(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started++
	return filepath.Join(s.dir, fmt.Sprintf("%02d-%s.log", s.started, name))
}

// startWorker starts `commerce worker` number i, in place of the one
// before it.
func (s *setup) startWorker(ctx context.Context, i int) (*proc, error) {
	p, err := startWorker(ctx, s.bins.commerce, s.workerEnv, s.logPath("worker-"+strconv.Itoa(i+1)))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.workers[i] = p
	s.mu.Unlock()
	return p, nil
}

// startAPI starts `commerce serve` number i on its port.
func (s *setup) startAPI(ctx context.Context, i int) (*proc, error) {
	p, err := startAPI(ctx, s.bins.commerce, s.apiEnv, s.apiPorts[i], s.logPath("api-"+strconv.Itoa(i+1)))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.apis[i] = p
	s.mu.Unlock()
	return p, nil
}

// answer is what one post got back, and when.
type answer struct {
	status     int
	outcome    string
	err        error
	sent, done time.Time
	tries      int // requests sent: more than one when a replica cut one
}

// FaultResult is one fault a run struck and how the service came back.
type FaultResult struct {
	Fault     Fault
	After     time.Duration // from the first post
	Applied   int           // posts applied when it struck
	Delivered int           // deliveries made when it struck
	Answered  int           // posts answered when it struck
	// Back is from the fault until its replacement was up: the new
	// worker polling, the new API replica ready, the Temporal server's
	// frontend answering.
	Back time.Duration
	// Stall is from the fault until the next post was applied; Slowest is
	// the longest wait of a post that was in flight at the fault.
	Stall, Slowest time.Duration
	// Cut is how many requests the killed API replica left unanswered.
	Cut int
	// ReadyWhileDown: with the Temporal server down, every API replica's
	// /readyz answered 200 and its verbose answer named Temporal down.
	ReadyWhileDown bool
	// Outage: a database or network fault's checks (dbfaults.go).
	Outage *Outage
}

// readyWithTemporalDown asks every API replica's /readyz and
// /readyz?verbose=1.
func (s *setup) readyWithTemporalDown() bool {
	s.mu.Lock()
	urls := slices.Clone(s.apiURLs)
	s.mu.Unlock()
	c := &http.Client{Timeout: 5 * time.Second}
	for _, base := range urls {
		resp, err := c.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
		resp, err = c.Get(base + "/readyz?verbose=1")
		if err != nil {
			return false
		}
		var a health.Answer
		err = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || a.Checks["temporal"].Status != "down" || a.Checks["postgres"].Status != "up" {
			return false
		}
	}
	return true
}

// burst sends the posts and the customers, strikes the faults part-way,
// waits for everything to settle and checks it.
func (s *setup) burst(ctx context.Context) (Result, error) {
	var idle CPU
	if s.opts.Shape == ShapeProd && s.opts.Idle > 0 {
		var err error
		if idle, err = s.idleCPU(ctx, s.opts.Idle); err != nil {
			return Result{}, err
		}
	}
	out := s.opts.Out
	start := time.Now()
	answers := make([]answer, s.opts.Posts)
	var answered sync.WaitGroup
	var nAnswered counter
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: s.opts.Clients}}
	if s.opts.Shape == ShapeProd {
		s.cpu = newCPUBook()
		s.mu.Lock()
		live := append(append(slices.Clone(s.apis), s.workers...), s.temporal.proc)
		s.mu.Unlock()
		for _, p := range live {
			s.cpu.begin(p)
		}
	}
	var visBefore map[string]float64
	if s.opts.TemporalMetrics != "" {
		var err error
		// None yet is none: the server counts an operation from its first.
		if visBefore, err = harness.ScrapeCounter(ctx, s.opts.TemporalMetrics, visibilityCounter); err != nil && !errors.Is(err, harness.ErrNoCounter) {
			return Result{}, err
		}
	}
	s.sampleConnections(ctx)
	if s.down != nil {
		go s.sampleHeld(ctx)
	}

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

	// Strike each fault once its share of the work is done.
	var faults []FaultResult
	total := s.opts.Posts + s.opts.Deliveries
	giveUp := time.Now().Add(s.opts.Settle)
	for n, f := range s.opts.Faults {
		target := int((s.opts.KillAt + float64(n)*s.opts.FaultEvery) * float64(total))
		for {
			applied, delivered, err := s.progress(ctx)
			if err != nil {
				return Result{}, err
			}
			if applied+delivered >= target {
				fr := FaultResult{Fault: f, After: time.Since(start), Applied: applied, Delivered: delivered, Answered: nAnswered.get()}
				if err := s.strike(ctx, &fr, start); err != nil {
					return Result{}, err
				}
				faults = append(faults, fr)
				break
			}
			if time.Now().After(giveUp) {
				return Result{}, fmt.Errorf("%d posts applied and %d deliveries made after %s, short of the %d to strike %s at:\n%s",
					applied, delivered, s.opts.Settle, target, f, s.workers[0].logTail(20))
			}
			select {
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	if s.down != nil {
		// The faults struck, the receiver that was down is up again, and
		// support resends what failed while it was down (as the console's
		// Resend would); the first success releases the held deliveries.
		s.down.setDown(false)
		fmt.Fprintf(out, "  %5.1fs  the down receiver up: %d requests refused, %d deliveries held\n",
			time.Since(start).Seconds(), s.down.refusals(), s.heldCount())
		go s.resendFailed(ctx, hc)
	}

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
			down := ""
			if s.down != nil {
				down = fmt.Sprintf("; down subscription %d/%d delivered", st.downDelivered, s.opts.Posts)
			}
			fmt.Fprintf(out, "  %5.1fs  %d/%d answered, %d applied, %d pending; %d events unrelayed, %d/%d delivered, %d pending, %d held, %d received%s; %d workflows running\n",
				time.Since(start).Seconds(), nAnswered.get(), s.opts.Posts, st.applied, st.pendingReceipts,
				st.unrelayed, st.delivered, s.opts.Deliveries, st.pendingDeliveries, st.held, s.rc.events(), down, st.running)
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
	close(s.sampleStop)
	var cpuFor time.Duration
	if s.cpu != nil {
		s.mu.Lock()
		live := append(append(slices.Clone(s.apis), s.workers...), s.temporal.proc)
		s.mu.Unlock()
		for _, p := range live {
			s.cpu.end(p)
		}
		cpuFor = time.Since(s.cpu.began)
	}
	var visibility map[string]float64
	if visBefore != nil {
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(visibilitySettle):
		}
		after, err := harness.ScrapeCounter(ctx, s.opts.TemporalMetrics, visibilityCounter)
		if err != nil {
			return Result{}, err
		}
		visibility = harness.CounterDiff(visBefore, after)
	}
	res, err := s.check(ctx, answers)
	if err != nil {
		return Result{}, err
	}
	// A post in flight at a fault counts for the first fault it met.
	for _, a := range answers {
		for i := range faults {
			f := &faults[i]
			if at := start.Add(f.After); a.sent.Before(at) && a.done.After(at) {
				f.Slowest = max(f.Slowest, a.done.Sub(a.sent))
				if f.Fault == FaultAPI && a.tries > 1 {
					f.Cut++
				}
				break
			}
		}
	}
	s.mu.Lock()
	res.PeakConnections, res.MaxConnections = s.peakConns, s.maxConns
	res.PeakService, res.PeakTemporal = s.peakService, s.peakTemporal
	s.mu.Unlock()
	res.Faults, res.Settled, res.TimedOut = faults, elapsed, !settled
	if s.cpu != nil {
		res.CPU, res.CPUFor, res.IdleCPU = s.cpu.close(), cpuFor, idle
	}
	res.Visibility = visibility
	s.keepLogs = res.Failed() || slices.ContainsFunc(faults, func(f FaultResult) bool {
		return f.Outage != nil && len(f.Outage.Problems(f.Fault)) > 0
	})
	return res, nil
}

// strike breaks what f names, starts its replacement, and measures how
// long until posts are applied again.
func (s *setup) strike(ctx context.Context, f *FaultResult, start time.Time) error {
	out := s.opts.Out
	struck := time.Now()
	applied0 := f.Applied
	switch f.Fault {
	case FaultWorker:
		s.mu.Lock()
		old := s.workers[0]
		s.mu.Unlock()
		s.cpu.end(old)
		old.kill()
		fmt.Fprintf(out, "  %5.1fs  SIGKILL worker pid %d: %d/%d posts applied, %d answered, %d/%d delivered\n",
			f.After.Seconds(), old.pid(), f.Applied, s.opts.Posts, f.Answered, f.Delivered, s.opts.Deliveries)
		w, err := s.startWorker(ctx, 0)
		if err != nil {
			return err
		}
		s.cpu.begin(w)
		f.Back = time.Since(struck)
		fmt.Fprintf(out, "  %5.1fs  worker pid %d polling, %.1fs after the kill\n", time.Since(start).Seconds(), w.pid(), f.Back.Seconds())
	case FaultAPI:
		s.mu.Lock()
		old := s.apis[0]
		s.mu.Unlock()
		s.cpu.end(old)
		old.kill()
		fmt.Fprintf(out, "  %5.1fs  SIGKILL API pid %d with requests in flight: %d/%d posts applied, %d answered\n",
			f.After.Seconds(), old.pid(), f.Applied, s.opts.Posts, f.Answered)
		a, err := s.startAPI(ctx, 0)
		if err != nil {
			return err
		}
		s.cpu.begin(a)
		f.Back = time.Since(struck)
		fmt.Fprintf(out, "  %5.1fs  API pid %d ready on the same port, %.1fs after the kill\n", time.Since(start).Seconds(), a.pid(), f.Back.Seconds())
	case FaultTemporal:
		old := s.temporal.proc
		s.cpu.end(old)
		old.kill()
		fmt.Fprintf(out, "  %5.1fs  SIGKILL Temporal server pid %d: %d/%d posts applied, %d answered, %d/%d delivered; down for %s\n",
			f.After.Seconds(), old.pid(), f.Applied, s.opts.Posts, f.Answered, f.Delivered, s.opts.Deliveries, s.opts.TemporalDown)
		// While the server is down, every API replica stays ready and says
		// why it is degraded.
		time.Sleep(min(time.Second, s.opts.TemporalDown/2))
		f.ReadyWhileDown = s.readyWithTemporalDown()
		fmt.Fprintf(out, "  %5.1fs  with Temporal down, every API replica's /readyz: %s\n", time.Since(start).Seconds(),
			map[bool]string{true: "200, and ?verbose=1 names Temporal down", false: "NOT 200, or Temporal not named down"}[f.ReadyWhileDown])
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.opts.TemporalDown - min(time.Second, s.opts.TemporalDown/2)):
		}
		if err := s.temporal.start(ctx); err != nil {
			return err
		}
		s.cpu.begin(s.temporal.proc)
		f.Back = time.Since(struck)
		fmt.Fprintf(out, "  %5.1fs  Temporal server pid %d answering, %.1fs after the kill\n", time.Since(start).Seconds(), s.temporal.proc.pid(), f.Back.Seconds())
	default:
		if err := s.strikeNet(ctx, f, start); err != nil {
			return err
		}
		struck = time.Now() // the stall is measured from the heal
	}
	// The stall: until the next post is applied (none left: none).
	for applied0 < s.opts.Posts {
		applied, _, err := s.progress(ctx)
		if err != nil {
			return err
		}
		if applied > applied0 {
			f.Stall = time.Since(struck)
			fmt.Fprintf(out, "  %5.1fs  the next post applied %.1fs after the %s fault\n", time.Since(start).Seconds(), f.Stall.Seconds(), f.Fault)
			break
		}
		if time.Since(struck) > s.opts.Settle {
			return fmt.Errorf("no post applied within %s of the %s fault", s.opts.Settle, f.Fault)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// sampleConnections counts, every 100 ms until the run checks its results,
// the connections to the run's databases (the service's and, in the
// production shape, Temporal's), and keeps the peak.
func (s *setup) sampleConnections(ctx context.Context) {
	s.sampleStop = make(chan struct{})
	var maxConns int
	if err := s.d.Pool().QueryRow(ctx, `SELECT current_setting('max_connections')::int`).Scan(&maxConns); err == nil {
		s.mu.Lock()
		s.maxConns = maxConns
		s.mu.Unlock()
	}
	u, _ := url.Parse(s.dbURL)
	name := strings.TrimPrefix(u.Path, "/")
	go s.every(ctx, 100*time.Millisecond, func() {
		var service, temporal int
		err := s.d.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE datname = $1), count(*) FILTER (WHERE datname LIKE $2)
			FROM pg_stat_activity`, name, name+`\_temporal%`).Scan(&service, &temporal)
		if s.cpu != nil {
			s.sampleBackends(ctx, s.cpu, name)
		}
		if err == nil {
			s.mu.Lock()
			s.peakConns = max(s.peakConns, service+temporal)
			s.peakService = max(s.peakService, service)
			s.peakTemporal = max(s.peakTemporal, temporal)
			s.mu.Unlock()
		}
	})
}

// every calls f, and again each d after it returns, until the run checks
// its results.
func (s *setup) every(ctx context.Context, d time.Duration, f func()) {
	for {
		f()
		select {
		case <-s.sampleStop:
			return
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}

// sampleHeld notes, every 100 ms until the run checks its results, the
// down subscription's deliveries that are held.
func (s *setup) sampleHeld(ctx context.Context) {
	s.every(ctx, 100*time.Millisecond, func() {
		ids, err := s.downDeliveries(ctx, domain.WebhookHeld)
		if err != nil {
			return
		}
		s.mu.Lock()
		for _, id := range ids {
			s.held[id] = true
		}
		s.mu.Unlock()
	})
}

// downDeliveries lists the down subscription's deliveries in status.
func (s *setup) downDeliveries(ctx context.Context, status domain.WebhookStatus) ([]uuid.UUID, error) {
	rows, err := s.d.Pool().Query(ctx, `SELECT id FROM webhook_deliveries
		WHERE org_id = $1 AND subscription_id = $2 AND status = $3`, s.org, s.downSub, status)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

func (s *setup) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// resendFailed resends, through the API, each delivery of the down
// subscription that failed while its receiver was down, once, until the
// run checks its results. It resends only a delivery whose workflow waits
// for its nightly retry, nothing under way: a delivery reads failed too
// while its attempt, refused before a fault, is made again by Temporal
// (the activity or the workflow task retried), and a resend then would be
// an attempt more, which support would not ask for.
func (s *setup) resendFailed(ctx context.Context, c *http.Client) {
	s.every(ctx, 500*time.Millisecond, func() {
		ids, _ := s.downDeliveries(ctx, domain.WebhookFailed)
		for _, id := range ids {
			s.mu.Lock()
			done, base := s.resent[id], s.apiURLs[0]
			s.mu.Unlock()
			if done || !s.waiting(ctx, id) {
				continue
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/webhooks/deliveries/"+id.String()+"/resend", nil)
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+s.apiKey)
			resp, err := c.Do(req)
			if err != nil {
				continue // no answer: asked again next round
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			s.mu.Lock()
			s.resent[id] = true
			s.mu.Unlock()
			if resp.StatusCode != http.StatusAccepted {
				fmt.Fprintf(s.opts.Out, "  ! resend of delivery %s answered %d\n", id, resp.StatusCode)
			}
		}
	})
}

// waiting reports that a delivery's workflow is running with nothing
// under way: no activity and no workflow task pending (its timer runs).
func (s *setup) waiting(ctx context.Context, id uuid.UUID) bool {
	d, err := s.tc.DescribeWorkflowExecution(ctx, domain.WebhookWorkflowID(id), "")
	if err != nil {
		return false
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING &&
		len(d.GetPendingActivities()) == 0 && d.GetPendingWorkflowTask() == nil
}

// sampleBackends notes the CPU of every Postgres backend of the run's
// databases but the harness's own.
func (s *setup) sampleBackends(ctx context.Context, book *cpuBook, name string) {
	rows, err := s.d.Pool().Query(ctx, `SELECT pid, datname = $1 FROM pg_stat_activity
		WHERE (datname = $1 OR datname LIKE $2) AND application_name <> $3`, name, name+`\_temporal%`, harnessApp)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var service bool
		if rows.Scan(&pid, &service) != nil {
			return
		}
		kind := "pg/temporal"
		if service {
			kind = "pg/service"
		}
		book.backend(int(pid), kind)
	}
}

// post sends post i: an invoice with its own reference to its endpoint,
// with an Idempotency-Key, through API replica i mod n. A request a replica
// cut (no answer), a 503, a 409 (the key's first request still under way)
// or a 429 (after its Retry-After) is sent again to the next replica, for
// up to two minutes, as a sender's retries would.
func (s *setup) post(ctx context.Context, c *http.Client, i int) answer {
	body := fmt.Sprintf(`{"order_ref": %q, "invoice_ref": %q, "amount_minor": 100, "currency": "GBP"}`, s.orderRef(i), invoiceRef(i))
	a := answer{sent: time.Now()}
	for try := 0; ; try++ {
		a.tries = try + 1
		s.mu.Lock()
		base := s.apiURLs[(i+try)%len(s.apiURLs)]
		s.mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/in/"+s.tokens[i/perEndpoint], bytes.NewReader([]byte(body)))
		if err != nil {
			a.err = err
			break
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.IdempotencyKeyHeader, "crash-post-"+strconv.Itoa(i))
		resp, err := c.Do(req)
		if err == nil {
			var got struct {
				Outcome string `json:"outcome"`
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = json.Unmarshal(raw, &got)
			a.status, a.outcome, a.err = resp.StatusCode, got.Outcome, nil
			// A sender's retries: 503, 409 (the first request with the key
			// still under way) and 429 (after its Retry-After).
			switch resp.StatusCode {
			case http.StatusServiceUnavailable, http.StatusConflict:
			case http.StatusTooManyRequests:
				wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				time.Sleep(time.Duration(wait) * time.Second)
			default:
				return a.finish()
			}
		} else {
			a.status, a.err = 0, err
		}
		if time.Since(a.sent) > 2*time.Minute || ctx.Err() != nil {
			break
		}
		time.Sleep(min(2*time.Second, 250*time.Millisecond<<min(try, 3)))
	}
	return a.finish()
}

// finish stamps the answer's end.
func (a answer) finish() answer {
	a.done = time.Now()
	return a
}

func invoiceRef(i int) string { return fmt.Sprintf("CRASH-%05d", i) }

// orderRef is the order post i's invoice is for.
func (s *setup) orderRef(i int) string {
	if s.orders <= 1 {
		return "SO-CRASH"
	}
	return fmt.Sprintf("SO-CRASH-%02d", i%s.orders)
}

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
			s.mu.Lock()
			base := s.apiURLs[try%len(s.apiURLs)]
			s.mu.Unlock()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/customers", bytes.NewReader(body))
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
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND status = 'succeeded')`,
		s.org, s.sub).Scan(&applied, &delivered)
	return applied, delivered, err
}

// state is where the run stands while it settles.
type state struct {
	applied, pendingReceipts                int
	unrelayed, delivered, pendingDeliveries int
	// held are deliveries held for a failing subscription; downDelivered
	// the down subscription's succeeded.
	held, downDelivered int
	running             int64
}

// quiet reports that nothing is left to happen: no post waiting for its
// outcome, no event waiting for the relay, no delivery waiting for an
// attempt, no workflow running.
func (st state) quiet() bool {
	return st.pendingReceipts == 0 && st.unrelayed == 0 && st.pendingDeliveries == 0 && st.held == 0 && st.running == 0
}

func (s *setup) state(ctx context.Context) (state, error) {
	var st state
	err := s.d.Pool().QueryRow(ctx, `
		SELECT (SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'applied'),
		       (SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'pending'),
		       (SELECT count(*) FROM events WHERE org_id = $1 AND relayed_at IS NULL),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 AND status = 'succeeded'),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'pending'),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'held'),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $3 AND status = 'succeeded')`,
		s.org, s.sub, s.downSub).
		Scan(&st.applied, &st.pendingReceipts, &st.unrelayed, &st.delivered, &st.pendingDeliveries, &st.held, &st.downDelivered)
	if err != nil {
		return st, err
	}
	// While Temporal is down the count is unknown: not quiet.
	if st.running, err = s.countWorkflows(ctx, "ExecutionStatus = 'Running'"); err != nil {
		st.running = -1
	}
	return st, nil
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
