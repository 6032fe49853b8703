// Package harness holds what the benchmark commands share: a schema in the
// bench database, and the embedded Temporal server of `commerce dev` with a
// worker.
package harness

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/dev/devtemporal"
	"github.com/commerce-integration/commerce/workflows"
)

// Main parses the command line and runs run; when run fails, Main prints
// its error on standard error and exits with status 1.
func Main(run func(context.Context) error) {
	flag.Parse()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Database migrates a fresh schema in the bench database
// (BENCH_DATABASE_URL, or database commerce_bench on the local server,
// created when missing), connects to it, and returns the connection and a
// function that closes it and drops the schema.
func Database(ctx context.Context, schema string) (*db.DB, func(), error) {
	return database(ctx, schema, false, false)
}

// ReusedDatabase is Database on the schema as an earlier run left it
// (created when missing), so that data slow to load is loaded once; the
// function it returns drops the schema only when keep is false.
func ReusedDatabase(ctx context.Context, schema string, keep bool) (*db.DB, func(), error) {
	return database(ctx, schema, true, keep)
}

// benchURL is the bench database's URL.
func benchURL() string {
	if u := os.Getenv("BENCH_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/commerce_bench?sslmode=disable"
}

func database(ctx context.Context, schema string, reuse, keep bool) (*db.DB, func(), error) {
	base := benchURL()
	if _, err := db.EnsureDatabase(ctx, base); err != nil {
		return nil, nil, err
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	create := "CREATE SCHEMA IF NOT EXISTS "
	if !reuse {
		_, _ = admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		create = "CREATE SCHEMA "
	}
	if _, err := admin.Exec(ctx, create+schema); err != nil {
		admin.Close(ctx)
		return nil, nil, err
	}
	release := func() {
		if !keep {
			_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		}
		admin.Close(context.Background())
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if _, err := db.Migrate(ctx, u.String()); err != nil {
		release()
		return nil, nil, err
	}
	d, err := db.Connect(ctx, u.String(), 0)
	if err != nil {
		release()
		return nil, nil, err
	}
	return d, func() { d.Close(); release() }, nil
}

// The stores the embedded Temporal server can keep its state in, as the
// -temporal-store flag of the harnesses names them.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// Stores are the names -temporal-store accepts.
var Stores = []string{StoreSQLite, StorePostgres}

// StoreFlag declares the -temporal-store flag.
func StoreFlag(p *string) {
	flag.StringVar(p, "temporal-store", StoreSQLite, "what the embedded Temporal server keeps its state in: "+strings.Join(Stores, " or "))
}

// Temporal starts the embedded Temporal server (no UI) on store (SQLite
// in a temporary directory) and a worker running the service's workflows
// with acts, and returns a client and a function that stops it all.
func Temporal(ctx context.Context, acts *activities.Activities, store string) (client.Client, func(), error) {
	switch store {
	case StoreSQLite, "", StorePostgres:
	default:
		return nil, nil, fmt.Errorf("-temporal-store %q: want one of %s", store, strings.Join(Stores, ", "))
	}
	fmt.Printf("starting the embedded Temporal server (%s) ... ", cmp.Or(store, StoreSQLite))
	started := time.Now()
	dir, err := os.MkdirTemp("", "bench-temporal-")
	if err != nil {
		return nil, nil, err
	}
	stops := []func(){func() { _ = os.RemoveAll(dir) }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	port, err := freePort()
	if err != nil {
		stop()
		return nil, nil, err
	}
	cfg := devtemporal.Config{DBFile: filepath.Join(dir, "temporal.db"), Namespace: "default",
		FrontendPort: port, UIPort: -1, Logger: zap.NewNop(), SearchAttributes: workflows.SearchAttributes()}
	if store == StorePostgres {
		// Two databases of their own beside the bench database, dropped
		// when the run stops.
		p, err := devtemporal.PostgresFor(benchURL())
		if err != nil {
			stop()
			return nil, nil, err
		}
		p.Database, p.VisibilityDatabase = "commerce_bench_temporal", "commerce_bench_temporal_visibility"
		_ = p.Drop()
		cfg.Postgres = &p
		stops = append(stops, func() { _ = p.Drop() })
	}
	tsrv, err := devtemporal.Start(ctx, cfg)
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, tsrv.Stop)
	tc, err := client.DialContext(ctx, client.Options{HostPort: tsrv.FrontendAddress(), Namespace: "default", Logger: quiet{}})
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, tc.Close)
	w := worker.New(tc, workflows.TaskQueue, worker.Options{})
	workflows.Register(w, acts)
	if err := w.Start(); err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, w.Stop)
	fmt.Printf("%.1fs\n", time.Since(started).Seconds())
	return tc, stop, nil
}

// CPUProfile profiles the CPU into path until the returned function is
// called; with an empty path it does nothing.
func CPUProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: cpuprofile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "bench: cpuprofile:", err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// Listen serves h on a free loopback port and returns its base URL.
func Listen(h http.Handler) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = (&http.Server{Handler: h}).Serve(l) }()
	return "http://" + l.Addr().String(), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// quiet is a Temporal SDK logger that drops everything.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
