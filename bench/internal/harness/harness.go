// Package harness holds what the benchmark commands share: a schema in the
// bench database, a listener, a CPU profile. The embedded Temporal server is
// in package embedded, so that a harness without it (bench/products) does
// not link it.
package harness

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
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
	return database(ctx, schema, false, false, nil)
}

// TracedDatabase is Database with its statements traced by tracer.
func TracedDatabase(ctx context.Context, schema string, tracer pgx.QueryTracer) (*db.DB, func(), error) {
	return database(ctx, schema, false, false, tracer)
}

// ReusedDatabase is Database on the schema as an earlier run left it
// (created when missing), so that data slow to load is loaded once; the
// function it returns drops the schema only when keep is false.
func ReusedDatabase(ctx context.Context, schema string, keep bool) (*db.DB, func(), error) {
	return database(ctx, schema, true, keep, nil)
}

// BenchURL is the bench database's URL: BENCH_DATABASE_URL, or the
// database commerce_bench on the local server.
func BenchURL() string {
	if u := os.Getenv("BENCH_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/commerce_bench?sslmode=disable"
}

func database(ctx context.Context, schema string, reuse, keep bool, tracer pgx.QueryTracer) (*db.DB, func(), error) {
	base := BenchURL()
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
	d, err := db.ConnectWith(ctx, u.String(), db.Options{Tracer: tracer})
	if err != nil {
		release()
		return nil, nil, err
	}
	return d, func() { d.Close(); release() }, nil
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

// Serve serves h on a free loopback port and returns its base URL and a
// function that stops the server.
func Serve(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// APIKeys makes n API keys of the organisation with the scopes: enough
// that a load spread over them never meets a key's rate limit (600 a
// minute each), the limit being per integration and a load many of them.
func APIKeys(ctx context.Context, d *db.DB, orgID uuid.UUID, n int, scopes ...domain.Scope) ([]string, error) {
	keys := make([]string, 0, n)
	for range n {
		_, k, err := d.CreateAPIKey(ctx, orgID, "bench", scopes)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
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
