package cli

import (
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/logging"
)

func newLogger(cfg config.Config) (*zap.Logger, error) {
	return logging.New(cfg.LogLevel, cfg.LogFormat)
}

func serveCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP server: /api/v1, /api/in/{token}, /healthz, /readyz, /metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := newLogger(cfg)
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			key, err := cfg.ServiceKey()
			if err != nil {
				return err
			}
			if err := Migrate(ctx, cfg, log); err != nil {
				return err
			}
			d, err := ConnectDB(ctx, cfg)
			if err != nil {
				return err
			}
			// A lazy client: the API starts while Temporal is still coming up,
			// and /readyz says so until it answers.
			tc, err := client.NewLazyClient(temporalOptions(cfg, log))
			if err != nil {
				d.Close()
				return err
			}
			rt := &Runtime{Cfg: cfg, Log: log, DB: d, Temporal: tc, ServiceKey: key}
			defer rt.Close()
			h, err := rt.APIHandler()
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
			}
			log.Info("serving", zap.String("listen", l.Addr().String()), zap.String("base_url", cfg.BaseURL))
			return ServeHTTP(ctx, l, h, log)
		},
	}
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_DB_MAX_CONNS", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_LISTEN",
		"COMMERCE_BASE_URL", "COMMERCE_LOG_LEVEL", "COMMERCE_LOG_FORMAT")
	return cmd
}

func workerCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (task queue commerce) and the sweeps that start workflows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := newLogger(cfg)
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			if _, err := cfg.Nightly(); err != nil {
				return err
			}
			if _, err := cfg.ServiceKey(); err != nil {
				return err
			}
			d, err := openDB(ctx, cfg)
			if err != nil {
				return err
			}
			tc, err := DialTemporal(ctx, cfg, log)
			if err != nil {
				d.Close()
				return err
			}
			rt := &Runtime{Cfg: cfg, Log: log, DB: d, Temporal: tc}
			defer rt.Close()
			return rt.RunWorker(ctx)
		},
	}
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_DB_MAX_CONNS", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE",
		"COMMERCE_NIGHTLY_AT", "COMMERCE_ALLOW_PRIVATE_TARGETS", "COMMERCE_LOG_LEVEL", "COMMERCE_LOG_FORMAT")
	return cmd
}

func migrateCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded schema migrations (idempotent; safe to run concurrently)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := db.Migrate(cmd.Context(), cfg.DatabaseURL)
			if err != nil {
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
