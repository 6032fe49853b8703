// Package devtemporal runs a single-process Temporal server, with the
// Temporal Web UI beside it, for `commerce dev` and the end-to-end tests.
//
// It follows the configuration the server's own temporaltest package uses
// (which cannot be imported for this purpose) and keeps its state either in
// a SQLite file or in two databases of a PostgreSQL cluster, so a second
// start finds the workflows of the first.
package devtemporal

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// clusterName is the server's cluster, the only one.
const clusterName = "active"

// Config says where the server keeps its state and where it listens.
type Config struct {
	// DBFile is the SQLite file of the workflows' state; the visibility
	// records go to a second file beside it (VisibilityFile). Both are
	// created (with the schema) when missing. Neither is used when Postgres
	// is set.
	DBFile string
	// Postgres, when set, keeps persistence and visibility on PostgreSQL
	// instead of SQLite.
	Postgres *Postgres
	// Namespace is registered on start when missing.
	Namespace string
	// IP is the address every service binds to (127.0.0.1 when empty).
	IP string
	// FrontendPort is the gRPC port clients dial (7233 when zero, a free one
	// when negative).
	FrontendPort int
	// UIPort is the Web UI's HTTP port; a negative value disables the UI.
	UIPort int
	// SearchAttributes are custom search attributes registered with the namespace.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's own logs (warnings and errors only).
	Logger *zap.Logger
	// Caches bounds the history service's caches (DevCacheLimits when
	// zero).
	Caches CacheLimits
}

// Server is a running Temporal server, and its UI when enabled.
type Server struct {
	temporal temporal.Server
	ui       *uiserver.Server
	frontend string
	uiURL    string
	metrics  string
}

// Start creates the store's schema when needed, registers the namespace with
// its search attributes and starts the server; it returns once the frontend
// accepts connections. The namespace and its search attributes are in the
// store before the server starts, so its namespace registry has them from
// its first read.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.FrontendPort == 0 {
		cfg.FrontendPort = 7233
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.FrontendPort > 0 {
		if err := portFree(cfg.IP, cfg.FrontendPort); err != nil {
			return nil, fmt.Errorf("temporal frontend port: %w", err)
		}
	}
	if cfg.UIPort >= 0 {
		if cfg.UIPort == 0 {
			cfg.UIPort = 8233
		}
		if err := portFree(cfg.IP, cfg.UIPort); err != nil {
			return nil, fmt.Errorf("temporal UI port: %w", err)
		}
	}

	logger := cfg.Logger.WithOptions(zap.IncreaseLevel(zap.WarnLevel))
	tlogger := tlog.NewZapLogger(fatalsToStderr(logger))
	var persistence config.Persistence
	var sqlCfg *config.SQL // where the namespace is registered
	if cfg.Postgres != nil {
		shards, err := cfg.Postgres.setup(tlogger)
		if err != nil {
			return nil, fmt.Errorf("temporal postgres schema: %w", err)
		}
		sqlCfg = cfg.Postgres.sql(cfg.Postgres.Database)
		persistence = config.Persistence{
			DefaultStore:     "postgres",
			VisibilityStore:  "postgres-visibility",
			NumHistoryShards: shards,
			DataStores: map[string]config.DataStore{
				"postgres":            {SQL: sqlCfg},
				"postgres-visibility": {SQL: cfg.Postgres.sql(cfg.Postgres.VisibilityDatabase)},
			},
		}
	} else {
		var err error
		if sqlCfg, persistence, err = sqliteStore(cfg.DBFile, keywordAttributes(cfg.SearchAttributes)); err != nil {
			return nil, err
		}
	}
	// The server module's namespace pre-registration lives in its SQLite
	// schema package but writes through the generic SQL persistence layer, so
	// it serves the Postgres store as well. The search attributes take
	// columns of the SQL visibility schema as the namespace's aliases. A
	// namespace that exists is left as it is.
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return nil, err
	}
	// Keep a week of closed workflow histories, so parked and retried work
	// stays visible in the UI for as long as it can run.
	ns.Detail.Config.Retention = timestamp.DurationFromHours(7 * 24)
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, fmt.Errorf("temporal namespace: %w", err)
	}

	// The ports are chosen last, just before the server binds them: the
	// shorter that gap, the smaller the chance that another process takes one.
	ports, err := freePorts(cfg.IP, 9)
	if err != nil {
		return nil, err
	}
	if cfg.FrontendPort < 0 {
		cfg.FrontendPort = ports[8]
	}
	frontend := net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.FrontendPort))
	svc := func(grpc, membership int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: cfg.IP}}
	}
	serverCfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: cfg.IP},
			Metrics: &metrics.Config{Prometheus: &metrics.PrometheusConfig{
				ListenAddress: net.JoinHostPort(cfg.IP, strconv.Itoa(ports[0])), HandlerPath: "/metrics",
			}},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": svc(cfg.FrontendPort, ports[1]),
			"history":  svc(ports[2], ports[3]),
			"matching": svc(ports[4], ports[5]),
			"worker":   svc(ports[6], ports[7]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: frontend},
	}
	limits := cfg.Caches
	if limits == (CacheLimits{}) {
		limits = DevCacheLimits
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(serverCfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(tlogger),
		temporal.WithDynamicConfigClient(dynamicConfig(limits)),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("temporal server start: %w", err)
	}
	s := &Server{temporal: srv, frontend: frontend, metrics: "http://" + net.JoinHostPort(cfg.IP, strconv.Itoa(ports[0])) + "/metrics"}
	if err := waitDial(ctx, frontend, 30*time.Second); err != nil {
		_ = srv.Stop()
		return nil, err
	}

	if cfg.UIPort > 0 {
		s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
			Host:                cfg.IP,
			Port:                cfg.UIPort,
			TemporalGRPCAddress: frontend,
			EnableUI:            true,
			DefaultNamespace:    cfg.Namespace,
			HideLogs:            true,
			DisableNewsFetch:    true,
			CORS:                uiconfig.CORS{CookieInsecure: true},
		}))
		go func() { _ = s.ui.Start() }()
		s.uiURL = "http://" + net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.UIPort))
		if err := waitHTTP(ctx, s.uiURL, 30*time.Second); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// FrontendAddress is the host:port SDK clients dial.
func (s *Server) FrontendAddress() string { return s.frontend }

// MetricsURL is where the server serves its Prometheus metrics (every
// service of the process on the one listener).
func (s *Server) MetricsURL() string { return s.metrics }

// UIURL is the Web UI's base URL, or "" when the UI is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Stop stops the UI and the server.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
	}
	_ = s.temporal.Stop()
}

// fatalsToStderr is logger with its fatal entries also written to standard
// error. The server reports a port it cannot bind as a fatal entry and
// expects the logger to exit; a logger that drops it (zap.NewNop, or one
// raised to a level above fatal) would leave the server running on a nil
// listener, which crashes later with nothing said about why.
func fatalsToStderr(logger *zap.Logger) *zap.Logger {
	if logger.Core().Enabled(zap.FatalLevel) {
		return logger
	}
	stderr := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zap.FatalLevel)
	return logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, stderr) }))
}

func waitDial(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("temporal frontend %s did not come up: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitHTTP(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("temporal UI %s did not come up: %w", url, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
