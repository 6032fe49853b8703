package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/commerce-integration/commerce/internal/app/worker"
	"github.com/commerce-integration/commerce/internal/health"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/metrics"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/tracing"
	"github.com/commerce-integration/commerce/workflows"
)

// Runtime is what the long-running processes share: configuration, logger,
// database and Temporal client.
type Runtime struct {
	Cfg        config.Config
	Log        *zap.Logger
	DB         *db.DB
	Temporal   client.Client
	ServiceKey []byte
	// Tracing is the process's tracing (nil: off).
	Tracing *tracing.Tracing

	// Built once by assemble, for every face of the process.
	key       []byte
	sealer    *secrets.Sealer
	workflows *workflows.Client
	service   *integrations.Service
}

// Close releases the runtime's connections.
func (rt *Runtime) Close() {
	if rt.Temporal != nil {
		rt.Temporal.Close()
	}
	if rt.DB != nil {
		rt.DB.Close()
	}
}

// Migrate applies the embedded migrations and logs what changed.
func Migrate(ctx context.Context, cfg config.Config, log *zap.Logger) error {
	res, err := db.Migrate(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if res.From != res.To {
		log.Info("database migrated", zap.Int32("from", res.From), zap.Int32("to", res.To))
	}
	return nil
}

// keys returns the service key (given, or from the configuration) and the
// sealer made with it.
func (rt *Runtime) keys() ([]byte, *secrets.Sealer, error) {
	key := rt.ServiceKey
	if key == nil {
		var err error
		if key, err = rt.Cfg.ServiceKey(); err != nil {
			return nil, nil, err
		}
	}
	sealer, err := secrets.NewSealer(key)
	return key, sealer, err
}

// ResealSecrets seals again, bound to their rows, the signing secrets still
// in the format sealed without associated data, so that a copy of one in
// another row stops opening: each process that holds the key does it as it
// starts. A failure is logged, not fatal: such secrets keep working, and
// the next start tries again.
func (rt *Runtime) ResealSecrets(ctx context.Context) {
	_, sealer, err := rt.keys()
	if err != nil {
		rt.Log.Warn("signing secrets not resealed", zap.Error(err))
		return
	}
	r, err := rt.DB.ResealSecrets(ctx, sealer)
	switch {
	case err != nil:
		rt.Log.Warn("signing secrets not resealed", zap.Error(err))
	case r.Unreadable > 0:
		rt.Log.Warn("signing secrets that COMMERCE_SECRET_KEY does not open were left as they are",
			zap.Int("unreadable", r.Unreadable), zap.Int("resealed", r.Resealed))
	case r.Resealed > 0:
		rt.Log.Info("signing secrets resealed, bound to their rows", zap.Int("resealed", r.Resealed))
	}
}

// APIHandler builds the HTTP handler, and the handler of its /metrics,
// served apart (ServeMetrics).
func (rt *Runtime) APIHandler() (handler, series http.Handler, err error) {
	if err := rt.assemble(); err != nil {
		return nil, nil, err
	}
	consoleOn, err := rt.Cfg.ConsoleOn()
	if err != nil {
		return nil, nil, err
	}
	s := api.New(api.Deps{DB: rt.DB, Service: rt.service, Temporal: rt.Temporal, Logger: rt.Log, Cursors: cursor.New(rt.key),
		BaseURL: rt.Cfg.BaseURL, Tracing: rt.Tracing})
	if consoleOn {
		targets, err := rt.Cfg.Targets()
		if err != nil {
			return nil, nil, err
		}
		s.Mount(console.Prefix, console.New(console.Deps{DB: rt.DB, Service: rt.service, Log: rt.Log, BaseURL: rt.Cfg.BaseURL,
			Sealer: rt.sealer, Targets: targets}))
	}
	metrics.Pool("api", rt.DB.Pool().Stat)
	metrics.Pool("api-rate", rt.DB.RateStat)
	return s.Handler(), s.Metrics(), nil
}

// Listen listens on addr for the public HTTP server, holding at most the
// configured number of connections at once (COMMERCE_MAX_CONNECTIONS): when
// every one is taken, the connection idle the longest (kept alive between
// requests) is closed for the next; with none idle, one over the cap waits
// in the kernel's queue until another closes.
func Listen(cfg config.Config, addr string) (net.Listener, error) {
	max, err := cfg.Connections()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return limitListener(l, max), nil
}

// limitListener accepts at most n connections at once. When all n are
// taken, Accept closes the connection idle the longest (ServeHTTP tells
// the listener which are idle, through the server's ConnState) and takes
// its place, so that connections kept alive and quiet cannot hold every
// place while a new client waits; with none idle, it waits until one
// closes or goes idle. Unlike netutil.LimitListener its connections keep
// CloseWrite, with which the HTTP server half-closes a connection it
// refuses (a header over the limit), so that the client reads the answer
// instead of a reset.
func limitListener(l net.Listener, n int) net.Listener {
	return &limited{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}),
		wake: make(chan struct{}, 1), idle: map[net.Conn]time.Time{}}
}

type limited struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// wake is signalled when a connection goes idle, for an Accept waiting
	// for a place.
	wake chan struct{}
	mu   sync.Mutex
	// idle holds the connections waiting for their next request, with
	// the time each went idle.
	idle map[net.Conn]time.Time
}

func (l *limited) Accept() (net.Conn, error) {
	for {
		select {
		case l.slots <- struct{}{}:
			return l.accept()
		case <-l.done:
			return nil, net.ErrClosed
		default:
		}
		// Every place is taken: the connection idle the longest makes room.
		l.closeIdlest()
		select {
		case l.slots <- struct{}{}:
			return l.accept()
		case <-l.done:
			return nil, net.ErrClosed
		case <-l.wake:
		}
	}
}

func (l *limited) accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// closeIdlest closes the connection idle the longest, if any is.
func (l *limited) closeIdlest() {
	l.mu.Lock()
	var idlest net.Conn
	var since time.Time
	for c, t := range l.idle {
		if idlest == nil || t.Before(since) {
			idlest, since = c, t
		}
	}
	delete(l.idle, idlest)
	l.mu.Unlock()
	if idlest != nil {
		_ = idlest.Close()
	}
}

// ConnState follows the HTTP server's connections (http.Server.ConnState):
// which are idle, and since when.
func (l *limited) ConnState(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if state != http.StateIdle {
		delete(l.idle, c)
		return
	}
	l.idle[c] = time.Now()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when the underlying one can.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ListenMetrics listens for /metrics on cfg.MetricsListen, apart from the
// public listener; nil when none is configured.
func ListenMetrics(cfg config.Config) (net.Listener, error) {
	if cfg.MetricsListen == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s (COMMERCE_METRICS_LISTEN): %w", cfg.MetricsListen, err)
	}
	return l, nil
}

// ServeMetrics answers GET /metrics on l until ctx ends, and the runtime
// profiles when profiles is set (Profiles); nothing else is served there.
func ServeMetrics(ctx context.Context, l net.Listener, metrics http.Handler, profiles bool, log *zap.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	if profiles {
		Profiles(mux)
	}
	return ServeHTTP(ctx, l, mux, log)
}

// The HTTP server's read bounds: headers within ReadHeaderTimeout, a
// request within ReadTimeout unless its route sets a longer body deadline;
// a connection kept alive closes after IdleTimeout without a request.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 15 * time.Second
	IdleTimeout       = 15 * time.Second
)

// connStates is a listener that follows its connections' states (limited).
type connStates interface {
	ConnState(net.Conn, http.ConnState)
}

// ServeHTTP answers HTTP on l until ctx ends, then drains for up to 10 s.
func ServeHTTP(ctx context.Context, l net.Listener, h http.Handler, log *zap.Logger) error {
	srv := &http.Server{
		Handler: h,
		// A request's headers must arrive within 5 s and the whole request
		// within ReadTimeout, unless its route gives its body longer, in
		// proportion to its limit (api's body read deadlines).
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      2 * time.Minute,
		// A connection kept alive holds one of COMMERCE_MAX_CONNECTIONS'
		// places while it waits for its next request: briefly, and the
		// limited listener closes it sooner when a new client needs its
		// place.
		IdleTimeout: IdleTimeout,
		ErrorLog:    zap.NewStdLog(log.Named("http")),
	}
	if t, ok := l.(connStates); ok {
		srv.ConnState = t.ConnState
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// CheckSearchAttributes fails when the namespace lacks the service's
// search attributes, naming them and the commands that create them, or does
// not exist. While Temporal does not answer it waits and asks again.
func (rt *Runtime) CheckSearchAttributes(ctx context.Context) error {
	delay := 500 * time.Millisecond
	for {
		err := workflows.CheckSearchAttributes(ctx, rt.Temporal, rt.Cfg.TemporalNamespace)
		var missing *workflows.MissingSearchAttributesError
		var noNamespace *serviceerror.NamespaceNotFound
		var denied *serviceerror.PermissionDenied
		if err == nil || errors.As(err, &missing) || errors.As(err, &noNamespace) || errors.As(err, &denied) {
			return err
		}
		rt.Log.Warn("Temporal not answering yet; asking again", zap.Error(err))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

// RunWorker runs the worker (package worker) until ctx ends, once the
// namespace holds the service's search attributes; polling, when given, is
// set while it polls its task queue.
func (rt *Runtime) RunWorker(ctx context.Context, polling *atomic.Bool) error {
	if err := rt.assemble(); err != nil {
		return err
	}
	if err := rt.CheckSearchAttributes(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	rt.workerSeries()
	return worker.Run(ctx, worker.Deps{Cfg: rt.Cfg, Log: rt.Log, DB: rt.DB, Temporal: rt.Temporal, Workflows: rt.workflows,
		Service: rt.service, Sealer: rt.sealer, Polling: polling, Tracing: rt.Tracing})
}

// RunWorkerProcess is `commerce worker`: RunWorker, with the worker's
// probes and series served on COMMERCE_METRICS_LISTEN (WorkerProbes).
func (rt *Runtime) RunWorkerProcess(ctx context.Context) error {
	ml, err := ListenMetrics(rt.Cfg)
	if err != nil {
		return err
	}
	if ml == nil {
		return rt.RunWorker(ctx, nil)
	}
	rt.Log.Info("worker probes and metrics", zap.String("metrics_listen", ml.Addr().String()))
	var polling atomic.Bool
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ServeHTTP(gctx, ml, rt.WorkerProbes(&polling), rt.Log) })
	g.Go(func() error {
		err := rt.RunWorker(gctx, &polling)
		if err == nil && ctx.Err() == nil {
			return errors.New("the worker stopped") // stops the probes too
		}
		return err
	})
	return g.Wait()
}

// WorkerProbes serves the worker's /healthz, /readyz and /metrics. It is
// ready while Postgres answers with the current schema, Temporal answers and
// the worker polls its task queue: unlike the API, a worker cut off from
// Temporal does no work.
func (rt *Runtime) WorkerProbes(polling *atomic.Bool) http.Handler {
	checks := append(api.DatabaseChecks(rt.DB), api.TemporalCheck(rt.Temporal, true),
		health.Check{Name: "worker", Required: true, Reason: "not polling its task queue",
			Probe: func(context.Context) error {
				if !polling.Load() {
					return errors.New("not polling")
				}
				return nil
			}})
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", health.Live)
	mux.Handle("GET /readyz", health.Handler(checks, rt.Log))
	mux.Handle("GET /metrics", metrics.Handler(registry))
	if on, _ := rt.Cfg.ProfilesOn(); on {
		Profiles(mux)
	}
	return mux
}

// workerSeries exports the worker's pool and the backlogs it reads from
// the database at each scrape (package metrics).
func (rt *Runtime) workerSeries() {
	metrics.Pool("worker", rt.DB.Pool().Stat)
	metrics.ReadBacklog(func(ctx context.Context) (metrics.Backlog, error) {
		var b metrics.Backlog
		var err error
		b.Parked, b.FailingSubscriptions, b.FailingEndpoints, err = rt.DB.Backlog(ctx)
		return b, err
	})
}
