package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// StoreEnv chooses the Temporal server's store for Start:
// COMMERCE_E2E_TEMPORAL_STORE=postgres runs it on PostgreSQL (persistence and
// visibility, in databases of the test's own on the test cluster); unset or
// "sqlite", the in-memory SQLite of temporaltest.
const StoreEnv = "COMMERCE_E2E_TEMPORAL_STORE"

// TemporalServer is the Temporal server an Env runs on.
type TemporalServer interface {
	// NewWorker starts a worker on taskQueue with what registerFunc
	// registers; it stops when the test ends.
	NewWorker(taskQueue string, registerFunc func(worker.Registry)) worker.Worker
	// GetFrontendHostPort is the host:port SDK clients dial.
	GetFrontendHostPort() string
}

func postgresStore(t *testing.T) bool {
	switch s := os.Getenv(StoreEnv); s {
	case "", "sqlite":
		return false
	case "postgres":
		return true
	default:
		t.Fatalf("%s=%q: want sqlite or postgres", StoreEnv, s)
		return false
	}
}

// PostgresServer is a Temporal server (devtemporal, without its UI) on
// databases of its own, which are dropped when the test ends.
type PostgresServer struct {
	t         *testing.T
	server    *devtemporal.Server
	store     devtemporal.Postgres
	namespace string
	client    client.Client

	mu      sync.Mutex
	workers []worker.Worker
}

// databasePrefix marks the databases made here; the name carries the creation
// time, so databases left by a killed test run can be swept.
const databasePrefix = "e2e_"

var sweepOnce sync.Once

// NewPostgresServer creates two databases for t's Temporal server
// (persistence and visibility) on the test cluster, sets up their schemas,
// registers namespace with searchAttributes (workflows.SearchAttributes() for
// the service) and starts the server. Everything is stopped and dropped when
// t ends.
func NewPostgresServer(t *testing.T, namespace string, searchAttributes map[string]enumspb.IndexedValueType) *PostgresServer {
	t.Helper()
	store, err := devtemporal.PostgresFor(testdb.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	sweepOnce.Do(func() { sweepDatabases(t, store) })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	base := fmt.Sprintf("%s%d_%s", databasePrefix, time.Now().Unix(), hex.EncodeToString(b))
	store.Database, store.VisibilityDatabase = base+"_temporal", base+"_temporal_visibility"
	// Registered first, so it runs last: after the server has stopped.
	t.Cleanup(func() {
		if err := store.Drop(); err != nil {
			t.Errorf("drop the Temporal databases: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Config{
		Postgres:         &store,
		Namespace:        namespace,
		FrontendPort:     -1,
		UIPort:           -1,
		SearchAttributes: searchAttributes,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &PostgresServer{t: t, server: srv, store: store, namespace: namespace}
	t.Cleanup(s.stop)
	s.client, err = client.DialContext(ctx, client.Options{
		HostPort: srv.FrontendAddress(), Namespace: namespace, Logger: testLogger{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Store is the server's two databases.
func (s *PostgresServer) Store() devtemporal.Postgres { return s.store }

// Client is a client of the server's namespace; it is closed when the test
// ends.
func (s *PostgresServer) Client() client.Client { return s.client }

// GetFrontendHostPort is the host:port SDK clients dial.
func (s *PostgresServer) GetFrontendHostPort() string { return s.server.FrontendAddress() }

// NewWorker starts a worker on taskQueue, as temporaltest's does (a panicking
// workflow fails); it stops when the test ends.
func (s *PostgresServer) NewWorker(taskQueue string, registerFunc func(worker.Registry)) worker.Worker {
	w := worker.New(s.client, taskQueue, worker.Options{WorkflowPanicPolicy: worker.FailWorkflow})
	registerFunc(w)
	s.mu.Lock()
	s.workers = append(s.workers, w)
	s.mu.Unlock()
	if err := w.Start(); err != nil {
		s.t.Fatal(err)
	}
	return w
}

func (s *PostgresServer) stop() {
	s.mu.Lock()
	workers := s.workers
	s.mu.Unlock()
	for _, w := range workers {
		w.Stop()
	}
	if s.client != nil {
		s.client.Close()
	}
	s.server.Stop()
}

// sweepDatabases drops databases of this package more than an hour old, left
// by test runs that were killed before their cleanup.
func sweepDatabases(t *testing.T, store devtemporal.Postgres) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testdb.ServerURL())
	if err != nil {
		t.Logf("listing old Temporal test databases: %v", err)
		return
	}
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'e2e\_%'`)
	var names []string
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	_ = conn.Close(ctx)
	if err != nil {
		t.Logf("listing old Temporal test databases: %v", err)
		return
	}
	old := map[string]bool{}
	for _, n := range names {
		parts := strings.SplitN(strings.TrimPrefix(n, databasePrefix), "_", 3)
		if len(parts) != 3 {
			continue
		}
		created, err := strconv.ParseInt(parts[0], 10, 64)
		if err == nil && time.Since(time.Unix(created, 0)) > time.Hour {
			old[databasePrefix+parts[0]+"_"+parts[1]] = true
		}
	}
	for base := range old {
		p := store
		p.Database, p.VisibilityDatabase = base+"_temporal", base+"_temporal_visibility"
		if err := p.Drop(); err != nil {
			t.Logf("dropping old Temporal test databases %s: %v", base, err)
		}
	}
}

// testLogger writes the SDK's log to the test's output, shown when the test
// fails or runs with -v.
type testLogger struct{ t *testing.T }

func (l testLogger) log(level, msg string, keyvals []any) {
	l.t.Log(append([]any{level, msg}, keyvals...)...)
}
func (l testLogger) Debug(msg string, keyvals ...any) { l.log("DEBUG", msg, keyvals) }
func (l testLogger) Info(msg string, keyvals ...any)  { l.log("INFO ", msg, keyvals) }
func (l testLogger) Warn(msg string, keyvals ...any)  { l.log("WARN ", msg, keyvals) }
func (l testLogger) Error(msg string, keyvals ...any) { l.log("ERROR", msg, keyvals) }
