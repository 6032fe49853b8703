// Package harness holds what the benchmark commands share: a fresh schema
// in the bench database, and the embedded Temporal server of `commerce dev`
// with a worker.
package harness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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

// Database migrates a fresh schema in the bench database
// (BENCH_DATABASE_URL, or database commerce_bench on the local server,
// created when missing) and returns its URL and a function that drops it.
func Database(ctx context.Context, schema string) (string, func(), error) {
	base := os.Getenv("BENCH_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/commerce_bench?sslmode=disable"
	}
	if _, err := db.EnsureDatabase(ctx, base); err != nil {
		return "", nil, err
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	_, _ = admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close(context.Background())
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if _, err := db.Migrate(ctx, u.String()); err != nil {
		drop()
		return "", nil, err
	}
	return u.String(), drop, nil
}

// Temporal starts the embedded Temporal server (SQLite in a temporary
// directory, no UI) and a worker running the service's workflows with
// acts, and returns a client and a function that stops it all.
func Temporal(ctx context.Context, acts *activities.Activities) (client.Client, func(), error) {
	fmt.Print("starting the embedded Temporal server ... ")
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
	tsrv, err := devtemporal.Start(ctx, devtemporal.Config{DBFile: filepath.Join(dir, "temporal.db"), Namespace: "default",
		FrontendPort: port, UIPort: -1, Logger: zap.NewNop()})
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
	if err := workflows.EnsureSearchAttributes(ctx, tc, "default"); err != nil {
		stop()
		return nil, nil, err
	}
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
