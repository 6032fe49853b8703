// Package dev is `commerce dev`: the whole service on one machine, with a
// private Postgres (devpg), an embedded Temporal server and its UI
// (devtemporal), the migrations and a demo organisation. Only cmd/commerce
// imports it, which keeps the embedded Temporal server out of the other
// packages.
package dev

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/devoidc"
	"github.com/commerce-integration/commerce/internal/devpg"
	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

type devOptions struct {
	dir          string
	temporalPort int
	uiPort       int
	// temporalStore is where the embedded Temporal server keeps its state:
	// "sqlite" (a file under dir) or "postgres" (two databases beside the
	// service's).
	temporalStore string
	// targetsGiven and metricsGiven say whether COMMERCE_ALLOW_PRIVATE_TARGETS
	// and COMMERCE_METRICS_LISTEN were given (environment or flag); when not,
	// dev lets webhooks reach loopback receivers only and serves /metrics on
	// a free port of this machine.
	targetsGiven, metricsGiven bool
	// sso starts a development identity provider for the demo
	// organisation (--sso).
	sso bool
}

// Command is `commerce dev`.
func Command() *cobra.Command {
	cfg := config.Load()
	if _, set := os.LookupEnv("COMMERCE_LISTEN"); !set {
		cfg.Listen = "127.0.0.1:8080"
	}
	if _, set := os.LookupEnv("COMMERCE_LOG_FORMAT"); !set {
		cfg.LogFormat = "console"
	}

	var opts devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything on this machine: Postgres, Temporal + UI, API and worker, with demo data",
		Long: "dev runs the whole service in one process with no other set-up: an embedded Temporal server\n" +
			"(SQLite under --dir; with --temporal-store postgres, the databases <db>_temporal and\n" +
			"<db>_temporal_visibility beside the service's database <db>) with its Web UI, a private\n" +
			"PostgreSQL cluster under --dir/pg (or the database in DATABASE_URL when it is set), the\n" +
			"migrations, a demo organisation with example data and an all-scopes API key on first start,\n" +
			"then the API and the worker. It prints the addresses and the key and writes them to\n" +
			"--dir/dev.json. Ctrl-C stops everything; a second start reuses the data.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			given := func(name, flag string) bool { return os.Getenv(name) != "" || cmd.Flags().Changed(flag) }
			opts.targetsGiven = given("COMMERCE_ALLOW_PRIVATE_TARGETS", "allow-private-targets")
			opts.metricsGiven = given("COMMERCE_METRICS_LISTEN", "metrics-listen")
			return runDev(cmd.Context(), cfg, opts, cmd.OutOrStdout())
		},
	}
	// dev makes the settings of a dev directory; it does not read them.
	cmd.Annotations = map[string]string{cli.OwnSettings: "true"}
	cmd.Flags().StringVar(&opts.dir, "dir", ".commerce", "directory for local state (databases, key, dev.json)")
	cmd.Flags().BoolVar(&opts.sso, "sso", false,
		"also start a development OpenID Provider on a free loopback port, as the demo organisation's identity provider for demo.example, and print its test users")
	cmd.Flags().IntVar(&opts.temporalPort, "temporal-port", 7233, "Temporal frontend gRPC port")
	cmd.Flags().IntVar(&opts.uiPort, "ui-port", 8233, "Temporal Web UI port")
	cmd.Flags().StringVar(&opts.temporalStore, "temporal-store", "sqlite",
		"where the embedded Temporal server keeps its state: sqlite (--dir/temporal.db, and temporal-visibility.db for the visibility records) or postgres "+
			"(persistence and visibility in the databases <db>_temporal and <db>_temporal_visibility of the service's cluster, created when missing)")
	cfg.Flags(cmd.Flags(), "COMMERCE_LISTEN", "COMMERCE_BASE_URL", "TEMPORAL_NAMESPACE", "COMMERCE_LOG_LEVEL", "COMMERCE_LOG_FORMAT",
		"COMMERCE_ALLOW_PRIVATE_TARGETS", "COMMERCE_METRICS_LISTEN", "COMMERCE_PPROF")
	return cmd
}

// devDefaults is cfg with what dev sets that its environment and flags did
// not: webhooks may reach receivers on this machine (loopback) and no other
// non-public address, and /metrics is served on a free port of this
// machine. An explicit COMMERCE_ALLOW_PRIVATE_TARGETS, false included, wins.
func devDefaults(cfg config.Config, opts devOptions) config.Config {
	if !opts.targetsGiven {
		cfg.PrivateTargets = outbound.LoopbackTargets.String()
	}
	if !opts.metricsGiven {
		cfg.MetricsListen = "127.0.0.1:0"
	}
	return cfg
}

// step prints a progress line for a piece of start-up and its duration.
func step(out io.Writer, what string, fn func() error) error {
	fmt.Fprintf(out, "  %-44s", what+" ...")
	start := time.Now()
	if err := fn(); err != nil {
		fmt.Fprintln(out, "failed")
		return err
	}
	fmt.Fprintf(out, "ok (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

func runDev(ctx context.Context, cfg config.Config, opts devOptions, out io.Writer) error {
	log, err := logging.New(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	profiles, err := cfg.ProfilesOn()
	if err != nil {
		return err
	}
	cli.LimitMemory(cli.DevMemoryLimit, log)
	if err := os.MkdirAll(opts.dir, 0o755); err != nil {
		return err
	}
	// The private cluster may run as an unprivileged user, which must be able
	// to enter the state directory.
	_ = os.Chmod(opts.dir, 0o755)
	key, err := devServiceKey(opts.dir, cfg)
	if err != nil {
		return err
	}
	cfg = devDefaults(cfg, opts)
	if opts.temporalStore == "" {
		opts.temporalStore = "sqlite"
	}
	if opts.temporalStore != "sqlite" && opts.temporalStore != "postgres" {
		return fmt.Errorf("--temporal-store %q: want sqlite or postgres", opts.temporalStore)
	}

	listener, err := cli.Listen(cfg, cfg.Listen)
	if err != nil {
		return fmt.Errorf("API address %s is taken (is `commerce dev` already running?); choose another with --listen: %w", cfg.Listen, err)
	}
	defer listener.Close()
	baseURL := cfg.BaseURL
	if _, set := os.LookupEnv("COMMERCE_BASE_URL"); !set || baseURL == "" {
		baseURL = "http://" + listener.Addr().String()
	}
	cfg.BaseURL = baseURL

	fmt.Fprintln(out, "Starting commerce dev:")
	var pg *devpg.Cluster
	if err := step(out, "PostgreSQL", func() error {
		var err error
		cfg.DatabaseURL, pg, err = devDatabase(ctx, opts.dir, log)
		return err
	}); err != nil {
		return err
	}
	if pg != nil {
		defer func() {
			if err := pg.Stop(); err != nil {
				log.Warn("stopping PostgreSQL", zap.Error(err))
			}
		}()
	}
	if err := step(out, "schema migrations", func() error {
		_, err := db.Migrate(ctx, cfg.DatabaseURL)
		return err
	}); err != nil {
		return err
	}
	tr, err := cli.StartTracing(ctx, "commerce", log)
	if err != nil {
		return err
	}
	defer cli.StopTracing(tr, log)
	d, err := cli.ConnectDB(ctx, cfg, tr)
	if err != nil {
		return err
	}
	defer d.Close()

	var state devState
	if err := step(out, "demo organisation", func() error {
		if state, err = demoOrganisation(ctx, d, opts.dir); err != nil {
			return err
		}
		state.InboundTokens, err = demoEndpoints(ctx, d, state)
		return err
	}); err != nil {
		return err
	}

	// The embedded server's own log is chatty at start and stop; it goes to a
	// file beside its database.
	serverLog, err := logging.NewFile(filepath.Join(opts.dir, "temporal-server.log"), zap.WarnLevel)
	if err != nil {
		return err
	}
	defer func() { _ = serverLog.Sync() }()
	var temporalPG *devtemporal.Postgres
	if opts.temporalStore == "postgres" {
		p, err := devtemporal.PostgresFor(cfg.DatabaseURL)
		if err != nil {
			return err
		}
		temporalPG = &p
	}
	var tsrv *devtemporal.Server
	if err := step(out, "Temporal server ("+opts.temporalStore+") and Web UI", func() error {
		tsrv, err = devtemporal.Start(ctx, devtemporal.Config{
			DBFile:       filepath.Join(opts.dir, "temporal.db"),
			Postgres:     temporalPG,
			Namespace:    cfg.TemporalNamespace,
			FrontendPort: opts.temporalPort,
			UIPort:       opts.uiPort,
			Logger:       serverLog,

			// Created with the namespace, before anything starts a workflow.
			SearchAttributes: workflows.SearchAttributes(),
		})
		return err
	}); err != nil {
		return err
	}
	defer tsrv.Stop()
	cfg.TemporalAddress = tsrv.FrontendAddress()
	// Receipts link to their workflows in the embedded server's Web UI.
	cfg.TemporalUIURL = tsrv.UIURL()

	rt := &cli.Runtime{Cfg: cfg, Log: log, DB: d, ServiceKey: key, Tracing: tr}
	if err := step(out, "Temporal client", func() error {
		dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		rt.Temporal, err = cli.DialTemporal(dialCtx, cfg, log, tr)
		return err
	}); err != nil {
		return err
	}
	defer rt.Temporal.Close()
	rt.ResealSecrets(ctx)
	handler, metrics, err := rt.APIHandler()
	if err != nil {
		return err
	}
	metricsListener, err := cli.ListenMetrics(cfg)
	if err != nil {
		return err
	}

	state.BaseURL = baseURL
	state.TemporalAddress = tsrv.FrontendAddress()
	state.TemporalUIURL = tsrv.UIURL()
	state.TemporalNamespace = cfg.TemporalNamespace
	state.DatabaseURL = cfg.DatabaseURL
	state.SecretKey = hex.EncodeToString(key)
	state.PrivateTargets = cfg.PrivateTargets
	state.MetricsURL = ""
	if metricsListener != nil {
		state.MetricsURL = "http://" + metricsListener.Addr().String() + "/metrics"
	}
	state.InboundURLs = map[domain.Action]string{}
	for action, token := range state.InboundTokens {
		state.InboundURLs[action] = cli.InboundURL(baseURL, token)
	}
	if err := writeState(opts.dir, state); err != nil {
		return err
	}

	var idp *devoidc.Provider
	if opts.sso {
		if err := step(out, "development identity provider", func() error {
			idp, err = startDevSSO(ctx, d, cfg, key, state.OrgID, baseURL)
			return err
		}); err != nil {
			return err
		}
		defer func() { _ = idp.Close() }()
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return rt.RunWorker(gctx, nil) })
	g.Go(func() error { return cli.ServeHTTP(gctx, listener, handler, log) })
	if metricsListener != nil {
		g.Go(func() error { return cli.ServeMetrics(gctx, metricsListener, metrics, profiles, log) })
	}
	// Not fatal: the demo receipts are a convenience.
	if err := step(out, "demo inbound posts", func() error { return postDemoReceipts(gctx, d, handler, state) }); err != nil {
		log.Warn("demo inbound posts", zap.Error(err))
	}
	printState(out, opts.dir, state)
	printConsoleLink(ctx, out, d, cfg, state)
	if idp != nil {
		printSSO(out, idp, baseURL)
	}
	err = g.Wait()
	fmt.Fprintln(out, "\nStopping commerce dev.")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// devServiceKey returns COMMERCE_SECRET_KEY, or the key kept in the state
// directory (made on first start).
func devServiceKey(dir string, cfg config.Config) ([]byte, error) {
	if cfg.SecretKey != "" {
		return cfg.ServiceKey()
	}
	path := filepath.Join(dir, "secret.key")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k := secrets.NewServiceKey()
		if err := os.WriteFile(path, []byte(k+"\n"), 0o600); err != nil {
			return nil, err
		}
		b = []byte(k)
	} else if err != nil {
		return nil, err
	}
	return secrets.ParseServiceKey(string(b))
}

// devDatabase returns the database URL to use: DATABASE_URL when set;
// otherwise a private cluster under dir/pg; and when that cannot run, the
// default local server if it answers.
func devDatabase(ctx context.Context, dir string, log *zap.Logger) (string, *devpg.Cluster, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		_, err := db.EnsureDatabase(ctx, u)
		return u, nil, err
	}
	pg, pgErr := devpg.Start(ctx, filepath.Join(dir, "pg"))
	if pgErr == nil {
		u := pg.URL("commerce")
		if _, err := db.EnsureDatabase(ctx, u); err != nil {
			_ = pg.Stop()
			return "", nil, err
		}
		return u, pg, nil
	}
	fallback := config.Vars[0].Default
	if _, err := db.EnsureDatabase(ctx, fallback); err == nil {
		log.Warn("private PostgreSQL cluster unavailable; using the local server instead",
			zap.String("database_url", fallback), zap.Error(pgErr))
		return fallback, nil, nil
	}
	return "", nil, fmt.Errorf("no database: set DATABASE_URL, or install PostgreSQL (initdb, pg_ctl) for a private cluster: %w", pgErr)
}
