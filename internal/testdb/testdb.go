// Package testdb gives each test its own migrated schema on a real Postgres
// and drops it when the test ends, so tests run in parallel and leave
// nothing behind.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/commerce-integration/commerce/db"
)

// ServerURL is the Postgres the tests use: COMMERCE_TEST_DATABASE_URL, or
// the local server's "test" database.
func ServerURL() string {
	if u := os.Getenv("COMMERCE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// DB is a migrated schema of its own for one test.
type DB struct {
	*db.DB
	// URL connects to the schema (its search_path is set in the URL).
	URL    string
	Schema string
}

var (
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

func adminPool() (*pgxpool.Pool, error) {
	adminOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		admin, adminErr = pgxpool.New(ctx, ServerURL())
		if adminErr == nil {
			adminErr = admin.Ping(ctx)
		}
		if adminErr == nil {
			sweep(ctx, admin)
		}
	})
	return admin, adminErr
}

// schemaPrefix marks schemas made here; the name carries the creation time so
// schemas left by a killed test run can be swept.
const schemaPrefix = "t_"

// sweep drops test schemas more than an hour old.
func sweep(ctx context.Context, pool *pgxpool.Pool) {
	rows, err := pool.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 't\_%'`)
	if err != nil {
		return
	}
	names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, n := range names {
		parts := strings.Split(n, "_")
		if len(parts) != 3 {
			continue
		}
		created, err := strconv.ParseInt(parts[1], 10, 64)
		if err == nil && time.Since(time.Unix(created, 0)) > time.Hour {
			_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{n}.Sanitize()+" CASCADE")
		}
	}
}

// New creates and migrates a schema for t and returns a pool on it. The
// schema is dropped when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	ctx := context.Background()
	u, schema := Empty(t)
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	d, err := db.Connect(ctx, u, 0)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(d.Close)
	return &DB{DB: d, URL: u, Schema: schema}
}

// Empty creates an empty schema for t (no migrations) and returns its URL;
// it is dropped when t ends.
func Empty(t testing.TB) (schemaURL, schema string) {
	t.Helper()
	pool, err := adminPool()
	if err != nil {
		t.Fatalf("test Postgres at %s does not answer: %v", ServerURL(), err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = fmt.Sprintf("%s%d_%s", schemaPrefix, time.Now().Unix(), hex.EncodeToString(b))
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return SchemaURL(t, schema), schema
}

// SchemaURL returns the test server's URL with search_path set to schema.
func SchemaURL(t testing.TB, schema string) string {
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatalf("COMMERCE_TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
