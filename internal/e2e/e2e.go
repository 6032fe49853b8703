// Package e2e runs the service's end-to-end tests: a real Temporal server
// in-process (go.temporal.io/server/temporaltest on in-memory SQLite, or with
// COMMERCE_E2E_TEMPORAL_STORE=postgres the development server on PostgreSQL
// databases of the test's own), a worker with the service's workflows and
// activities, and a real Postgres schema of the test's own. All end-to-end
// tests live in this package, so the Temporal server is linked into one test
// binary only.
package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/internal/tracing"
	"github.com/commerce-integration/commerce/workflows"
)

// Env is one test's world: its database, a Temporal server and client, and
// a running worker.
type Env struct {
	T         *testing.T
	DB        *testdb.DB
	Server    TemporalServer
	Temporal  client.Client
	Namespace string
	// Workflows starts and signals the service's workflows, as the API and
	// the worker's relays do.
	Workflows *workflows.Client
	Log       *zap.Logger
	Worker    worker.Worker
	// tracing is the processes' tracing (see Trace); nil: off.
	tracing *tracing.Tracing
}

// Start brings up a Temporal server with the search attributes,
// starts a worker on the service's task queue and returns the environment.
// Everything stops when the test ends. The server's store is chosen by
// COMMERCE_E2E_TEMPORAL_STORE (see StoreEnv).
func Start(t *testing.T) *Env {
	t.Helper()
	d := testdb.New(t)
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	if postgresStore(t) {
		// The namespace is made with the search attributes, before the
		// server starts.
		ps := NewPostgresServer(t, "commerce-e2e", workflows.SearchAttributes())
		env := &Env{T: t, DB: d, Server: ps, Temporal: ps.Client(), Namespace: "commerce-e2e", Log: log}
		env.Workflows = workflows.NewClient(env.Temporal, env.Namespace)
		env.Worker = env.StartWorker()
		return env
	}
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseServerOptions(
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// The test server makes its namespace before it can be given the
			// search attributes, which Start adds at once; without this its
			// namespace registry would learn them only at its next refresh.
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
			// As `commerce dev` has it: a task scheduled on the one history
			// shard is dispatched at once, not at the next of 20 polls a second.
			dynamicconfig.TransferProcessorMaxPollRPS.Key(): []dynamicconfig.ConstrainedValue{{Value: 1000}},
		})))
	env := &Env{T: t, DB: d, Server: ts, Temporal: ts.GetDefaultClient(), Namespace: ts.GetDefaultNamespace(), Log: log}
	env.Workflows = workflows.NewClient(env.Temporal, env.Namespace)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The server is made with the search attributes, as an operator makes a
	// namespace, before anything starts a workflow.
	if _, err := env.Temporal.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: env.Namespace, SearchAttributes: workflows.SearchAttributes(),
	}); err != nil {
		t.Fatal(err)
	}
	env.Worker = env.StartWorker()
	return env
}

// Trace makes the environment's processes traced by tr, as a worker and an
// API started with an OTLP endpoint are: its database pools trace their
// statements, its Temporal client carries the trace into workflows (and
// the worker, started again on that client, traces their runs and
// activities), and its deliveries send their traceparent. Call it before
// API, Outbox or anything that uses the client.
func (e *Env) Trace(tr *tracing.Tracing) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	traced, err := db.ConnectWith(ctx, e.DB.URL, db.Options{MaxConns: 8, Tracer: tr.SQL()})
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(traced.Close)
	tc, err := client.Dial(client.Options{HostPort: e.Server.GetFrontendHostPort(), Namespace: e.Namespace,
		Interceptors: tr.Temporal(), Logger: logging.Temporal(e.Log)})
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(tc.Close)
	e.Worker.Stop()
	e.DB = &testdb.DB{DB: traced, URL: e.DB.URL, Schema: e.DB.Schema}
	e.Temporal = tc
	e.Workflows = workflows.NewClient(tc, e.Namespace)
	e.tracing = tr
	w := worker.New(tc, workflows.TaskQueue, worker.Options{})
	workflows.Register(w, e.Activities())
	if err := w.Start(); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(w.Stop)
	e.Worker = w
}

// BaseURL is the {base_url} the environment's API and activities use.
const BaseURL = "http://commerce.test"

// TemporalUIURL is the Temporal Web UI address receipts link to.
const TemporalUIURL = "http://temporal-ui.test"

// NightlyAt is the environment's nightly retry run: 02:00 UTC.
const NightlyAt = 2 * time.Hour

// Activities are the activities a worker of this environment runs. Its
// webhooks may reach loopback receivers.
func (e *Env) Activities() *activities.Activities {
	return &activities.Activities{DB: e.DB.DB, Log: e.Log, BaseURL: BaseURL,
		Sealer: Sealer(), Webhooks: e.tracing.Client(outbound.Client(outbound.AnyTarget)), Delivery: domain.NewDeliveryPolicy(NightlyAt),
		Replays: e.Service(0).Posts}
}

// Service is the application service over the environment, as a process's
// assembly builds it, with inbound posts waiting at most answerWait for
// their first answer (integrations.AnswerWait when zero).
func (e *Env) Service(answerWait time.Duration) *integrations.Service {
	return integrations.New(integrations.Deps{DB: e.DB.DB, Workflows: e.Workflows, Log: e.Log, Sealer: Sealer(), BaseURL: BaseURL,
		AnswerWait: answerWait, TemporalUIURL: TemporalUIURL, Namespace: e.Namespace, Targets: outbound.AnyTarget})
}

// Outbox runs an outbox relay (as a worker process does) until the
// returned stop is called or the test ends.
func (e *Env) Outbox() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&relay.Outbox{DB: e.DB.DB, Workflows: e.Workflows, Log: e.Log, Sweep: time.Second}).Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	e.T.Cleanup(stop)
	return stop
}

// ServiceKey seals the environment's signing secrets and signs its cursors.
var ServiceKey = []byte("0123456789abcdef0123456789abcdef")

// Sealer seals and opens signing secrets under ServiceKey.
func Sealer() *secrets.Sealer {
	s, _ := secrets.NewSealer(ServiceKey)
	return s
}

// API starts the HTTP server over the environment (with the support
// console at /console), with inbound posts waiting at most answerWait for
// their first answer, and the relay that wakes waiting workflows when
// records arrive. Both stop with the test.
func (e *Env) API(answerWait time.Duration) *httptest.Server {
	service := e.Service(answerWait)
	s := api.New(api.Deps{DB: e.DB.DB, Service: service, Temporal: e.Temporal, Logger: e.Log, Cursors: cursor.New(ServiceKey),
		BaseURL: BaseURL, Tracing: e.tracing})
	s.Mount(console.Prefix, console.New(console.Deps{DB: e.DB.DB, Service: service, Log: e.Log, BaseURL: BaseURL}))
	var h http.Handler = s.Handler()
	if wrapAPI != nil {
		h = wrapAPI(e.T, h)
	}
	srv := httptest.NewServer(h)
	e.T.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&relay.Waiters{DB: e.DB.DB, Workflows: e.Workflows, Log: e.Log, Sweep: time.Second}).Run(ctx)
	}()
	e.T.Cleanup(func() {
		cancel()
		<-done
	})
	return srv
}

// wrapAPI, when set, wraps the handler of each server API starts, for the
// test that started it (the suite's OpenAPI conformance check).
var wrapAPI func(t testing.TB, h http.Handler) http.Handler

// StartWorker starts another worker on the task queue (a test may stop one
// mid-flight and start a new one, as a crashed process would be replaced).
func (e *Env) StartWorker() worker.Worker {
	return e.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.Register(r, e.Activities())
	})
}
