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
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

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
}

// Server is a running Temporal server, and its UI when enabled.
type Server struct {
	temporal temporal.Server
	ui       *uiserver.Server
	frontend string
	uiURL    string
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
		if err := cfg.Postgres.setup(tlogger); err != nil {
			return nil, fmt.Errorf("temporal postgres schema: %w", err)
		}
		sqlCfg = cfg.Postgres.sql(cfg.Postgres.Database)
		persistence = config.Persistence{
			DefaultStore:     "postgres",
			VisibilityStore:  "postgres-visibility",
			NumHistoryShards: 1,
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
	ns, err := sqliteschema.NewNamespaceConfig("active", cfg.Namespace, false, cfg.SearchAttributes)
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
			MasterClusterName:        "active",
			CurrentClusterName:       "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
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
	srv, err := temporal.NewServer(
		temporal.WithConfig(serverCfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(tlogger),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// One server: one partition per task queue, so a task never waits
			// in a partition that no poller is polling to be forwarded.
			dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  []dynamicconfig.ConstrainedValue{{Value: 1}},
			dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): []dynamicconfig.ConstrainedValue{{Value: 1}},
			// One history shard: at the default 20 reads a second of its
			// transfer queue, every workflow task waited up to 50 ms to be
			// dispatched.
			dynamicconfig.TransferProcessorMaxPollRPS.Key(): []dynamicconfig.ConstrainedValue{{Value: 1000}},
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("temporal server start: %w", err)
	}
	s := &Server{temporal: srv, frontend: frontend}
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

// UIURL is the Web UI's base URL, or "" when the UI is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Stop stops the UI and the server.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
	}
	_ = s.temporal.Stop()
}

func portFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s:%d is in use (another Temporal server or `commerce dev` running?): %w", ip, port, err)
	}
	return l.Close()
}

// handedOut holds every port freePorts has returned in this process. The
// server binds its ports a moment after they are chosen; a server starting
// beside it in the same process (tests start several at once) must not be
// handed one of them in that moment, so no port is handed out twice.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts is freePorts, for a Temporal server run as a process of its
// own (bench/internal/crash): its membership ports must fit the Postgres
// schema's smallint too.
func FreePorts(ip string, n int) ([]int, error) { return freePorts(ip, n) }

// freePorts finds n ports free on ip, between 20000 and 32767, that this
// process has not handed out before: the Postgres schema keeps the services'
// membership ports in a smallint (a port from the kernel's ephemeral range,
// 32768 and up, does not fit), and a port there is not handed to another
// listener on port 0 between this check and the bind.
func freePorts(ip string, n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 1000 {
			return nil, fmt.Errorf("no %d free ports between 20000 and 32767 on %s", n, ip)
		}
		port := 20000 + rand.IntN(12768)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	for _, p := range ports {
		handedOut.ports[p] = true
	}
	return ports, nil
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

// VisibilityFile is the SQLite file beside dbFile that holds the visibility
// records (what the UI and List calls search): temporal.db keeps them in
// temporal-visibility.db.
func VisibilityFile(dbFile string) string {
	ext := filepath.Ext(dbFile)
	return strings.TrimSuffix(dbFile, ext) + "-visibility" + ext
}

// sqliteStore opens (creating when missing) the SQLite store: the
// workflows' state in dbFile, the visibility records in VisibilityFile.
// Each file is its own connection, so recording a workflow's visibility
// (a row with an index per search attribute, written at its start, on its
// first workflow task and at its close) does not hold up the history
// writes of every other workflow. A dbFile made before the split, which
// keeps its visibility records itself, goes on doing so.
//
// Write-ahead logging with synchronous=NORMAL: commits survive the process
// dying (not a power cut, which a development server may lose the last
// moments of) without a flush per commit. One connection per file: the
// server's transactions may not run side by side on SQLite. (Keys that are
// not URI parameters become PRAGMAs, without a leading underscore.)
func sqliteStore(dbFile string, keywords int) (*config.SQL, config.Persistence, error) {
	open := func(file string) (*config.SQL, error) {
		c := &config.SQL{
			PluginName:        sqliteplugin.PluginName,
			DatabaseName:      file,
			ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
		}
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				return nil, err
			}
			// The schema package writes both schemas into a file; each
			// file uses its own half.
			if err := sqliteschema.SetupSchema(c); err != nil {
				return nil, fmt.Errorf("temporal sqlite schema: %w", err)
			}
		}
		return c, nil
	}
	visFile := VisibilityFile(dbFile)
	_, mainErr := os.Stat(dbFile)
	_, visErr := os.Stat(visFile)
	legacy := mainErr == nil && errors.Is(visErr, os.ErrNotExist)
	main, err := open(dbFile)
	if err != nil {
		return nil, config.Persistence{}, err
	}
	// As on Postgres (Postgres.setup): the previous run's services are
	// still members until their records expire, and a new ring would wait
	// for them.
	if err := execSQLite(dbFile, "DELETE FROM cluster_membership"); err != nil {
		return nil, config.Persistence{}, fmt.Errorf("temporal sqlite: clear the previous run's cluster membership: %w", err)
	}
	persistence := config.Persistence{
		DefaultStore:     "sqlite",
		VisibilityStore:  "sqlite-visibility",
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{"sqlite": {SQL: main}, "sqlite-visibility": {SQL: main}},
	}
	if !legacy {
		vis, err := open(visFile)
		if err != nil {
			return nil, config.Persistence{}, err
		}
		persistence.DataStores["sqlite-visibility"] = config.DataStore{SQL: vis}
		if err := trimVisibilityIndexes(vis.DatabaseName, keywords); err != nil {
			return nil, config.Persistence{}, err
		}
	}
	return main, persistence, nil
}

// keptVisibilityIndexes are the indexes of the SQLite visibility schema
// that the dev server keeps: the listing order, and what the Web UI and the
// service filter by (workflow ID and type, status, task queue, parent and
// root workflow, and the Keyword columns the service's search attributes
// take). The schema indexes some 45 other columns (schedules, batches,
// deployments, pause and reported-problem states, unused custom columns),
// and every one of them is written for every workflow start, first
// workflow task and close: without them, recording a start takes about a
// quarter less CPU. A query on an unindexed column still answers, by
// scanning the namespace's rows, which is quick at a development server's
// size.
var keptVisibilityIndexes = map[string]bool{
	"default_idx": true, "by_execution_time": true, "by_workflow_id": true, "by_workflow_type": true,
	"by_status": true, "by_task_queue": true, "by_parent_workflow_id": true, "by_root_workflow_id": true,
}

// trimVisibilityIndexes drops the indexes of the visibility file that
// are not kept (keptVisibilityIndexes, and by_keyword_01 to
// by_keyword_<keywords>); a second call finds nothing to drop. It opens
// the file through the SQLite driver the server's plugin registers. An
// index dropped once is not made again, should more keyword attributes be
// registered later: a query on their columns scans.
func trimVisibilityIndexes(file string, keywords int) error {
	db, err := sql.Open("sqlite", file)
	if err != nil {
		return fmt.Errorf("temporal sqlite visibility: %w", err)
	}
	defer func() { _ = db.Close() }()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("temporal sqlite visibility: %w", err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return fmt.Errorf("temporal sqlite visibility: %w", err)
		}
		var n int
		if _, err := fmt.Sscanf(name, "by_keyword_%d", &n); err == nil && n <= keywords {
			continue
		}
		if !keptVisibilityIndexes[name] {
			drop = append(drop, name)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("temporal sqlite visibility: %w", err)
	}
	for _, name := range drop {
		if _, err := db.Exec(`DROP INDEX "` + name + `"`); err != nil {
			return fmt.Errorf("temporal sqlite visibility: dropping %s: %w", name, err)
		}
	}
	return nil
}

// execSQLite runs statements on a SQLite file, through the driver the
// server's plugin registers.
func execSQLite(file string, statements ...string) error {
	db, err := sql.Open("sqlite", file)
	if err != nil {
		return err
	}
	for _, st := range statements {
		if _, err := db.Exec(st); err != nil {
			return errors.Join(err, db.Close())
		}
	}
	return db.Close()
}

// keywordAttributes counts the Keyword search attributes: they take the
// columns Keyword01, Keyword02 and so on.
func keywordAttributes(attrs map[string]enumspb.IndexedValueType) int {
	n := 0
	for _, t := range attrs {
		if t == enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			n++
		}
	}
	return n
}
