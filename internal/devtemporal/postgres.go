package devtemporal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/serialization"
	tsql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	postgresplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	toolschema "go.temporal.io/server/tools/common/schema"
	toolsql "go.temporal.io/server/tools/sql"
)

// Postgres keeps the server's state in two databases of a PostgreSQL
// cluster: one for its persistence (histories, tasks, namespaces), one for
// its visibility records (what the UI and List calls search). Both are
// created when missing.
type Postgres struct {
	// Addr is the cluster's host:port.
	Addr     string
	User     string
	Password string
	// Database and VisibilityDatabase are the two databases' names:
	// lower-case letters, digits and underscores.
	Database           string
	VisibilityDatabase string
	// ConnectAttributes are connection parameters (sslmode and the like);
	// sslmode is "disable" when they do not say.
	ConnectAttributes map[string]string
	// MaxConns bounds each of the server's connection pools (each of its
	// services has one per database); 5 when zero.
	MaxConns int
}

// PostgresFor returns the store beside the database of databaseURL (a
// postgres:// URL): the databases <name>_temporal and
// <name>_temporal_visibility of the same cluster, reached as the same user.
func PostgresFor(databaseURL string) (Postgres, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return Postgres{}, errors.New("the Temporal Postgres store needs a postgres:// database URL")
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		name = "postgres"
	}
	host := u.Hostname()
	if host == "" {
		host = "127.0.0.1"
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	p := Postgres{
		Addr:               net.JoinHostPort(host, port),
		User:               u.User.Username(),
		Database:           name + "_temporal",
		VisibilityDatabase: name + "_temporal_visibility",
		ConnectAttributes:  map[string]string{},
	}
	if p.User == "" {
		p.User = "postgres"
	}
	p.Password, _ = u.User.Password()
	// Only the parameters both drivers understand; pgx's own (pool sizes)
	// and search_path mean nothing to the server's databases.
	for _, k := range []string{"sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout"} {
		if v := u.Query().Get(k); v != "" {
			p.ConnectAttributes[k] = v
		}
	}
	return p, nil
}

var databaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (p Postgres) validate() error {
	for _, n := range []string{p.Database, p.VisibilityDatabase} {
		if !databaseName.MatchString(n) {
			return fmt.Errorf("temporal postgres store: database name %q is not lower-case letters, digits and underscores", n)
		}
	}
	if p.Database == p.VisibilityDatabase {
		return errors.New("temporal postgres store: persistence and visibility need two databases")
	}
	return nil
}

// PostgresPlugin is the server's SQL plugin for a Postgres store: its pgx
// driver, which prepares a statement once per connection, where lib/pq's
// plugin (postgres12) has Postgres parse and plan it on every call. The
// Temporal server of docker-compose.yml runs the same one.
const PostgresPlugin = postgresplugin.PluginNamePGX

// sql is the server's connection configuration for one of the databases.
func (p Postgres) sql(database string) *config.SQL {
	attrs := map[string]string{}
	for k, v := range p.ConnectAttributes {
		attrs[k] = v
	}
	maxConns := p.MaxConns
	if maxConns <= 0 {
		maxConns = 5
	}
	return &config.SQL{
		PluginName:        PostgresPlugin,
		ConnectAddr:       p.Addr,
		ConnectProtocol:   "tcp",
		User:              p.User,
		Password:          p.Password,
		DatabaseName:      database,
		ConnectAttributes: attrs,
		MaxConns:          maxConns,
		MaxIdleConns:      maxConns,
	}
}

// maintenanceDB is the database connected to while creating and dropping
// the store's databases.
const maintenanceDB = "postgres"

// Schemas of the server's embedded schema files (go.temporal.io/server/schema).
const (
	persistenceSchema = "postgresql/v12/temporal"
	visibilitySchema  = "postgresql/v12/visibility"
)

// PostgresHistoryShards is the number of history shards of a Postgres
// store's new cluster, as docker-compose.yml's server has
// (NUM_HISTORY_SHARDS). The history service writes each shard's
// workflows in turn; with four, the workflows of four shards are written
// side by side, where Postgres takes concurrent writers (SQLite does not:
// its store keeps one). A cluster's count is recorded when it is first
// created and never changes, so a store made with another keeps its own.
const PostgresHistoryShards = 4

// setup creates the two databases when missing and brings each schema to the
// version this server expects with the server's own schema tool, as
// `temporal-sql-tool create-database`, `setup-schema -v 0.0` and
// `update-schema` would: the first start applies every versioned step, a
// later one finds the schema current and changes nothing. It returns the
// store's history shard count: the one its cluster was created with, or
// PostgresHistoryShards for a store whose cluster is new.
func (p Postgres) setup(logger tlog.Logger) (int32, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	for _, s := range []struct{ database, schema string }{
		{p.Database, persistenceSchema},
		{p.VisibilityDatabase, visibilitySchema},
	} {
		if err := toolsql.DoCreateDatabase(p.sql(s.database), maintenanceDB, logger); err != nil {
			return 0, fmt.Errorf("create database %s: %w", s.database, err)
		}
		if err := setupSchema(p.sql(s.database), s.schema, logger); err != nil {
			return 0, fmt.Errorf("schema of %s: %w", s.database, err)
		}
	}
	// The services of a previous run, which is over (the store is one
	// server's), are still members until their records expire: a new ring
	// would wait for them, and route to them, until it found them dead.
	conn, err := toolsql.NewConnection(p.sql(p.Database), logger)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.Exec("DELETE FROM cluster_membership"); err != nil {
		return 0, fmt.Errorf("clear the previous run's cluster membership: %w", err)
	}
	return p.historyShards(logger)
}

// historyShards is the shard count recorded in the store's cluster
// metadata, or PostgresHistoryShards when none is recorded yet. The server
// would take the recorded count over its configuration too, but would log
// the difference as a warning on every start.
func (p Postgres) historyShards(logger tlog.Logger) (int32, error) {
	db, err := tsql.NewSQLDB(sqlplugin.DbKindMain, p.sql(p.Database), resolver.NewNoopResolver(), logger, metrics.NoopMetricsHandler)
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }()
	row, err := db.GetClusterMetadata(context.Background(), &sqlplugin.ClusterMetadataFilter{ClusterName: clusterName})
	if errors.Is(err, sql.ErrNoRows) {
		return PostgresHistoryShards, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the cluster metadata: %w", err)
	}
	md, err := serialization.NewSerializer().DeserializeClusterMetadata(persistence.NewDataBlob(row.Data, row.DataEncoding))
	if err != nil {
		return 0, fmt.Errorf("read the cluster metadata: %w", err)
	}
	if md.GetHistoryShardCount() <= 0 {
		return PostgresHistoryShards, nil
	}
	return md.GetHistoryShardCount(), nil
}

func setupSchema(cfg *config.SQL, schemaName string, logger tlog.Logger) error {
	conn, err := toolsql.NewConnection(cfg, logger)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := toolschema.NewSetupSchemaTask(conn, &toolschema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
		return err
	}
	return toolschema.NewUpdateSchemaTask(conn, &toolschema.UpdateConfig{DBName: cfg.DatabaseName, SchemaName: schemaName}, logger).Run()
}

// SchemaVersions reads the schema versions the two databases are at.
func (p Postgres) SchemaVersions() (persistence, visibility string, err error) {
	read := func(database string) (string, error) {
		conn, err := toolsql.NewConnection(p.sql(database), tlog.NewNoopLogger())
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ReadSchemaVersion()
	}
	if persistence, err = read(p.Database); err != nil {
		return "", "", err
	}
	visibility, err = read(p.VisibilityDatabase)
	return persistence, visibility, err
}

// Drop drops the store's two databases (when they exist), ending the
// connections still open on them. Stop the server first.
func (p Postgres) Drop() error {
	if err := p.validate(); err != nil {
		return err
	}
	conn, err := toolsql.NewConnection(p.sql(maintenanceDB), tlog.NewNoopLogger())
	if err != nil {
		return err
	}
	defer conn.Close()
	var errs []error
	for _, n := range []string{p.Database, p.VisibilityDatabase} {
		if err := conn.Exec("DROP DATABASE IF EXISTS " + n + " WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
