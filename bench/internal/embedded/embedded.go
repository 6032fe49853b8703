// Package embedded starts, for the benchmark commands that go through
// Temporal, the embedded Temporal server of `commerce dev` with a worker
// running the service's workflows.
package embedded

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/workflows"
)

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
// with acts, and returns a client and a function that stops it all. The
// client, and the worker made on it, have the interceptors given (the
// tracing ones of a traced run).
func Temporal(ctx context.Context, acts *activities.Activities, store string, interceptors ...interceptor.ClientInterceptor) (client.Client, func(), error) {
	tc, _, stop, err := Server(ctx, acts, store, interceptors...)
	return tc, stop, err
}

// Server is Temporal, and also returns the server (for its metrics).
func Server(ctx context.Context, acts *activities.Activities, store string, interceptors ...interceptor.ClientInterceptor) (client.Client, *devtemporal.Server, func(), error) {
	switch store {
	case StoreSQLite, "", StorePostgres:
	default:
		return nil, nil, nil, fmt.Errorf("-temporal-store %q: want one of %s", store, strings.Join(Stores, ", "))
	}
	fmt.Printf("starting the embedded Temporal server (%s) ... ", cmp.Or(store, StoreSQLite))
	started := time.Now()
	dir, err := os.MkdirTemp("", "bench-temporal-")
	if err != nil {
		return nil, nil, nil, err
	}
	stops := []func(){func() { _ = os.RemoveAll(dir) }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	cfg := devtemporal.Config{DBFile: filepath.Join(dir, "temporal.db"), Namespace: "default",
		FrontendPort: -1, UIPort: -1, Logger: zap.NewNop(), SearchAttributes: workflows.SearchAttributes()}
	if store == StorePostgres {
		// Two databases of their own beside the bench database, dropped
		// when the run stops.
		p, err := devtemporal.PostgresFor(harness.BenchURL())
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		p.Database, p.VisibilityDatabase = "commerce_bench_temporal", "commerce_bench_temporal_visibility"
		_ = p.Drop()
		cfg.Postgres = &p
		stops = append(stops, func() { _ = p.Drop() })
	}
	tsrv, err := devtemporal.Start(ctx, cfg)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, tsrv.Stop)
	// The connection is the service's own: its requests uncompressed.
	tc, err := client.DialContext(ctx, client.Options{HostPort: tsrv.FrontendAddress(), Namespace: "default", Logger: quiet{},
		Interceptors: interceptors, ConnectionOptions: client.ConnectionOptions{GrpcCompression: cli.GrpcCompression}})
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, tc.Close)
	w := worker.New(tc, workflows.TaskQueue, worker.Options{})
	workflows.Register(w, acts)
	if err := w.Start(); err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, w.Stop)
	fmt.Printf("%.1fs\n", time.Since(started).Seconds())
	return tc, tsrv, stop, nil
}

// quiet is a Temporal SDK logger that drops everything.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
