package db_test

import (
	"context"
	"sync"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestMigrateTwiceSucceedsAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	u, _ := testdb.Empty(t)
	first, err := db.Migrate(ctx, u)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if first.From != 0 || first.To != db.LatestVersion() {
		t.Fatalf("first run went %d→%d, want 0→%d", first.From, first.To, db.LatestVersion())
	}
	second, err := db.Migrate(ctx, u)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if second.From != db.LatestVersion() || second.To != db.LatestVersion() {
		t.Fatalf("second run went %d→%d, want no change at %d", second.From, second.To, db.LatestVersion())
	}
}

// Runs that wait for the migration lock while another builds an index
// CONCURRENTLY (migration 008) finish too: a run waiting inside
// pg_advisory_lock held a snapshot the index build waits for, a deadlock.
func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	u, schema := testdb.Empty(t)
	const runs = 4
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() { _, errs[i] = db.Migrate(ctx, u) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	d, err := db.Connect(ctx, u, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var versions, version int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*), max(version) FROM schema_version`).Scan(&versions, &version); err != nil {
		t.Fatal(err)
	}
	if versions != 1 || version != int(db.LatestVersion()) {
		t.Fatalf("schema_version has %d rows, version %d; want 1 row at %d", versions, version, db.LatestVersion())
	}
	var tables int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'products'`, schema).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 1 {
		t.Fatalf("products table exists %d times", tables)
	}
}

func TestEveryTableCarriesOrgID(t *testing.T) {
	d := testdb.New(t)
	rows, err := d.Pool().Query(context.Background(), `
		SELECT t.tablename FROM pg_tables t
		WHERE t.schemaname = $1 AND t.tablename NOT IN ('organisations', 'schema_version')
		  AND NOT EXISTS (SELECT 1 FROM information_schema.columns c
		                  WHERE c.table_schema = t.schemaname AND c.table_name = t.tablename AND c.column_name = 'org_id')`,
		d.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		_ = rows.Scan(&name)
		t.Errorf("table %s has no org_id", name)
	}
}

func TestEveryOrgIndexLeadsWithOrgID(t *testing.T) {
	d := testdb.New(t)
	// Indexes on org-scoped tables whose first column is not org_id: only
	// primary keys on id and global unique lookups (hashes, ids) may do so.
	rows, err := d.Pool().Query(context.Background(), `
		SELECT i.relname, coalesce(a.attname, '(expression)')
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class c ON c.oid = x.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0]
		WHERE n.nspname = $1 AND c.relname NOT IN ('organisations', 'schema_version')
		  AND a.attname IS DISTINCT FROM 'org_id'`, d.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// The sweeps across organisations (the relay's, and retention's by age)
	// lead with their time. A sign-in through an identity provider finds
	// its organisation by the email's domain (unique across organisations)
	// and its flow by the state's hash, before any organisation is known.
	allowed := map[string]bool{"id": true, "key_hash": true, "token_hash": true, "event_id": true, "created_at": true,
		"received_at": true, "started_at": true, "domain": true, "state_hash": true}
	for rows.Next() {
		var index, column string
		_ = rows.Scan(&index, &column)
		if !allowed[column] {
			t.Errorf("index %s leads with %s, not org_id", index, column)
		}
	}
}
