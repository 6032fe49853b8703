package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/tracing"
)

func newLogger(cfg config.Config) (*zap.Logger, error) {
	return logging.New(cfg.LogLevel, cfg.LogFormat)
}

// runProcess starts a long-running process and runs it: the logger the
// configuration asks for (flushed at the end), then check when given, the
// service key, the tracing the OpenTelemetry environment asks for (spans
// of service name are flushed at the end), the database open opens and
// the Temporal client dial makes. What was opened is closed when run
// returns or a later step fails.
func runProcess(ctx context.Context, cfg config.Config, name string, check func() error,
	open func(context.Context, config.Config, *zap.Logger, *tracing.Tracing) (*db.DB, error),
	dial func(context.Context, config.Config, *zap.Logger, *tracing.Tracing) (client.Client, error),
	run func(*Runtime, context.Context) error) error {
	log, err := newLogger(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if _, err := cfg.ProfilesOn(); err != nil {
		return err
	}
	LimitMemory(memoryLimits[name], log)
	key, err := cfg.ServiceKey()
	if err != nil {
		return err
	}
	tr, err := StartTracing(ctx, name, log)
	if err != nil {
		return err
	}
	defer StopTracing(tr, log)
	d, err := open(ctx, cfg, log, tr)
	if err != nil {
		return err
	}
	main, rate := d.PoolSizes()
	log.Info("database pools", zap.Int32("max_conns", main), zap.Int32("rate_limit_max_conns", rate),
		zap.Int32("most_connections", main+rate))
	tc, err := dial(ctx, cfg, log, tr)
	if err != nil {
		d.Close()
		return err
	}
	rt := &Runtime{Cfg: cfg, Log: log, DB: d, Temporal: tc, ServiceKey: key, Tracing: tr}
	defer rt.Close()
	rt.ResealSecrets(ctx)
	return run(rt, ctx)
}

// memoryLimits are the runtime's soft memory limits of the processes
// runProcess runs, by name.
var memoryLimits = map[string]int64{"commerce-api": ServeMemoryLimit, "commerce-worker": WorkerMemoryLimit}

func serveCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP server: /api/v1, /api/in/{token}, /console, /healthz, /readyz (and /metrics on its own listener)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			migrated := func(ctx context.Context, cfg config.Config, log *zap.Logger, tr *tracing.Tracing) (*db.DB, error) {
				if err := Migrate(ctx, cfg, log); err != nil {
					return nil, err
				}
				return connectAPI(ctx, cfg, tr)
			}
			// A lazy client: the API starts while Temporal is still coming up,
			// and /readyz says so until it answers.
			lazy := func(_ context.Context, cfg config.Config, log *zap.Logger, tr *tracing.Tracing) (client.Client, error) {
				return client.NewLazyClient(temporalOptions(cfg, log, tr, callsFailAtOnce))
			}
			serve := func(rt *Runtime, ctx context.Context) error {
				h, metrics, err := rt.APIHandler()
				if err != nil {
					return err
				}
				l, err := Listen(cfg, cfg.Listen)
				if err != nil {
					return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
				}
				ml, err := ListenMetrics(cfg)
				if err != nil {
					_ = l.Close()
					return err
				}
				profiles, _ := cfg.ProfilesOn()
				rt.Log.Info("serving", zap.String("listen", l.Addr().String()), zap.String("base_url", cfg.BaseURL),
					zap.String("metrics_listen", cfg.MetricsListen), zap.String("db_acquire_wait", cfg.DBAcquireWait),
					zap.Bool("pprof", profiles))
				// Serve while Temporal comes up, but stop when its namespace
				// lacks the search attributes every workflow start needs.
				g, gctx := errgroup.WithContext(ctx)
				g.Go(func() error { return ServeHTTP(gctx, l, h, rt.Log) })
				if ml != nil {
					g.Go(func() error { return ServeMetrics(gctx, ml, metrics, profiles, rt.Log) })
				}
				g.Go(func() error {
					if err := rt.CheckSearchAttributes(gctx); err != nil && gctx.Err() == nil {
						return err
					}
					return nil
				})
				return g.Wait()
			}
			return runProcess(cmd.Context(), cfg, "commerce-api", nil, migrated, lazy, serve)
		},
	}
	// Configured by its environment and flags alone, never by a dev directory.
	cmd.Annotations = map[string]string{OwnSettings: "true"}
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_DB_MAX_CONNS", "COMMERCE_DB_ACQUIRE_WAIT", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_LISTEN", "COMMERCE_METRICS_LISTEN", "COMMERCE_MAX_CONNECTIONS",
		"COMMERCE_BASE_URL", "COMMERCE_TEMPORAL_UI_URL", "COMMERCE_ALLOW_PRIVATE_TARGETS", "COMMERCE_CONSOLE", "COMMERCE_PPROF", "COMMERCE_LOG_LEVEL", "COMMERCE_LOG_FORMAT")
	return cmd
}

func workerCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (task queue commerce) and the sweeps that start workflows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nightly := func() error {
				_, err := cfg.Nightly()
				return err
			}
			open := func(ctx context.Context, cfg config.Config, _ *zap.Logger, tr *tracing.Tracing) (*db.DB, error) {
				return openDB(ctx, cfg, tr)
			}
			return runProcess(cmd.Context(), cfg, "commerce-worker", nightly, open, DialTemporal, (*Runtime).RunWorkerProcess)
		},
	}
	// Configured by its environment and flags alone, never by a dev directory.
	cmd.Annotations = map[string]string{OwnSettings: "true"}
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_DB_MAX_CONNS", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_METRICS_LISTEN",
		"COMMERCE_NIGHTLY_AT", "COMMERCE_RETENTION_DAYS", "COMMERCE_ALLOW_PRIVATE_TARGETS", "COMMERCE_PPROF", "COMMERCE_LOG_LEVEL", "COMMERCE_LOG_FORMAT")
	return cmd
}

// backfillRefs gives the receipts stored before references were extracted
// their refs (a worker does it too, in the background), printing its
// progress on standard error.
func backfillRefs(cmd *cobra.Command, cfg config.Config) error {
	d, err := ConnectDB(cmd.Context(), cfg, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	errw := cmd.ErrOrStderr()
	ran, err := d.BackfillReceiptRefs(cmd.Context(), db.RefsBackfillBatch, func(p db.RefsBackfillProgress) {
		fmt.Fprintf(errw, "receipt references: %d done, %d left\n", p.Done, p.Left)
	})
	if err == nil && !ran {
		fmt.Fprintln(errw, "receipt references: another process is backfilling them")
	}
	return err
}

func migrateCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded schema migrations (idempotent; safe to run concurrently)",
		Long: "Apply the embedded schema migrations (idempotent; safe to run concurrently), then give the receipts stored\n" +
			"before references were extracted their refs, in batches that never lock the table (a worker does the same\n" +
			"in the background), printing the progress on standard error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := db.Migrate(cmd.Context(), cfg.DatabaseURL)
			if err != nil {
				return err
			}
			if err := backfillRefs(cmd, cfg); err != nil {
				return err
			}
			return newPrinter(cmd).print(res, func(w io.Writer) {
				if res.From == res.To {
					fmt.Fprintf(w, "schema is up to date at version %d\n", res.To)
					return
				}
				fmt.Fprintf(w, "schema migrated from version %d to %d\n", res.From, res.To)
			})
		},
	}
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// StartTracing starts the process's tracing as the OpenTelemetry
// environment configures it (nil: off, the environment names no OTLP
// endpoint) and logs whether it is on.
func StartTracing(ctx context.Context, service string, log *zap.Logger) (*tracing.Tracing, error) {
	tr, err := tracing.FromEnv(ctx, service)
	if err != nil {
		return nil, err
	}
	if tr.On() {
		log.Info("tracing on: spans are exported over OTLP", zap.String("service", service))
	}
	return tr, nil
}

// StopTracing exports the spans still buffered, waiting 5 seconds at most.
func StopTracing(tr *tracing.Tracing, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn("exporting the last spans", zap.Error(err))
	}
}
