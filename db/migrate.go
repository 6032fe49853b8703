package db

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable records the applied migration; it lives in the connection's
// first search_path schema, like every other table.
const versionTable = "schema_version"

// migrateLock is the advisory lock key a migration run holds.
const migrateLock = int64(0x636f6d6d65726365) // "commerce"

// MigrateResult says which schema version a run started and ended at.
type MigrateResult struct {
	From int32 `json:"from"`
	To   int32 `json:"to"`
}

// Migrate applies the embedded migrations to the database at url. The
// migrator holds a Postgres advisory lock for the whole run, so concurrent
// runs (two replicas starting at once) apply each migration once and both
// succeed; a run against an up-to-date database changes nothing.
func Migrate(ctx context.Context, url string) (MigrateResult, error) {
	return migrateTo(ctx, url, -1)
}

// migrateTo is Migrate up to version target (-1: the latest).
func migrateTo(ctx context.Context, url string, target int32) (MigrateResult, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("connect to Postgres: %w", err)
	}
	defer conn.Close(context.Background())
	// Hold a lock for the whole run (tern also locks while it applies), so
	// the version read before applying is the one this run started from.
	if err := takeMigrateLock(ctx, conn); err != nil {
		return MigrateResult{}, fmt.Errorf("take the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrateLock) }()

	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("prepare migrations: %w", err)
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return MigrateResult{}, err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return MigrateResult{}, fmt.Errorf("load migrations: %w", err)
	}
	from, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return MigrateResult{}, err
	}
	if target < 0 {
		target = int32(len(m.Migrations))
	}
	if err := m.MigrateTo(ctx, target); err != nil {
		return MigrateResult{From: from}, fmt.Errorf("migrate: %w", err)
	}
	to, err := m.GetCurrentVersion(ctx)
	return MigrateResult{From: from, To: to}, err
}

// takeMigrateLock takes the migration lock, asking again every 100 ms
// while another run holds it. A run waiting inside pg_advisory_lock would
// hold a snapshot for as long as it waits, and a migration that builds an
// index CONCURRENTLY waits for every older snapshot of the database to
// end: the two would deadlock. Between its tries a waiting run holds none.
func takeMigrateLock(ctx context.Context, conn *pgx.Conn) error {
	for {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, migrateLock).Scan(&got); err != nil {
			return err
		}
		if got {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LatestVersion is the version the embedded migrations bring a database to.
func LatestVersion() int32 {
	names, _ := fs.Glob(migrationFiles, "migrations/*.sql")
	return int32(len(names))
}

// EnsureDatabase creates the database named in url when it does not exist,
// connecting to the server's "postgres" database to do so. It reports whether
// it created one.
func EnsureDatabase(ctx context.Context, url string) (bool, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return false, fmt.Errorf("DATABASE_URL: %w", err)
	}
	name := cfg.Database
	if name == "" || name == "postgres" {
		return false, nil
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect to Postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return false, err
	}
	if exists {
		return false, nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if isUniqueViolation(err, "") || (err != nil && strings.Contains(err.Error(), "already exists")) {
		return false, nil // created by a concurrent start
	}
	return err == nil, err
}

// SchemaVersion is the migration version the database is at.
func (d *DB) SchemaVersion(ctx context.Context) (int32, error) {
	var v int32
	err := d.pool.QueryRow(ctx, `SELECT version FROM `+versionTable).Scan(&v)
	return v, err
}
