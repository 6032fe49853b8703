package devtemporal

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// sqliteQuery runs a one-column query on a SQLite file and returns its rows.
func sqliteQuery(t *testing.T, file, query string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// listsOnly waits until the query lists exactly the workflows want:
// visibility records are written after the workflow answers (a closed
// workflow's HistoryLength, for one), so a list right after it may not
// show them yet.
func listsOnly(t *testing.T, c client.Client, query string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: testNamespace, Query: query})
		if err != nil {
			t.Fatalf("list %q: %v", query, err)
		}
		var ids []string
		for _, e := range resp.Executions {
			ids = append(ids, e.Execution.WorkflowId)
		}
		slices.Sort(ids)
		if slices.Equal(ids, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("list %q: %v, want %v", query, ids, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

const visibilityIndexes = `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL ORDER BY name`

func TestSQLiteStoreKeepsVisibilityInItsOwnFileWithTheIndexesItUses(t *testing.T) {
	dir := t.TempDir()
	dbFile := filepath.Join(dir, "temporal.db")
	visFile := VisibilityFile(dbFile)
	if visFile != filepath.Join(dir, "temporal-visibility.db") {
		t.Fatalf("visibility file %s", visFile)
	}

	stop, c := startForTest(t, Config{DBFile: dbFile})
	for _, f := range []string{dbFile, visFile} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the first start did not make %s: %v", f, err)
		}
	}
	// The kept indexes: the listing order, the columns the UI filters by,
	// and Keyword01 for the one keyword search attribute.
	want := []string{"by_execution_time", "by_keyword_01", "by_parent_workflow_id", "by_root_workflow_id",
		"by_status", "by_task_queue", "by_workflow_id", "by_workflow_type", "default_idx"}
	if got := sqliteQuery(t, visFile, visibilityIndexes); !slices.Equal(got, want) {
		t.Fatalf("visibility indexes %v, want %v", got, want)
	}
	if got := runGreeting(t, c, "first", "SO-1"); got != "hello first" {
		t.Fatalf("first workflow returned %q", got)
	}
	findByRef(t, c, testNamespace, "SO-1", "first")
	// Columns whose indexes were dropped still answer (by a scan).
	for _, q := range []string{"HistoryLength > 0", "WorkflowType = 'greet' AND ExecutionStatus = 'Completed'", "TaskQueue = 'devtemporal-test'"} {
		listsOnly(t, c, q, "first")
	}
	// The rows are in the visibility file, none in the main one (the
	// server's own system workflows are there as well).
	if got := sqliteQuery(t, dbFile, `SELECT workflow_id FROM executions_visibility WHERE workflow_id NOT LIKE 'temporal-sys-%' ORDER BY workflow_id`); len(got) != 0 {
		t.Fatalf("the main file holds visibility rows: %v", got)
	}
	if got := sqliteQuery(t, visFile, `SELECT workflow_id FROM executions_visibility WHERE workflow_id NOT LIKE 'temporal-sys-%' ORDER BY workflow_id`); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("the visibility file holds %v", got)
	}
	stop()

	// A second start keeps both files and what they hold.
	_, c = startForTest(t, Config{DBFile: dbFile})
	if got := sqliteQuery(t, visFile, visibilityIndexes); !slices.Equal(got, want) {
		t.Fatalf("visibility indexes after a restart %v, want %v", got, want)
	}
	findByRef(t, c, testNamespace, "SO-1", "first")
	if got := runGreeting(t, c, "second", "SO-2"); got != "hello second" {
		t.Fatalf("second workflow returned %q", got)
	}
	findByRef(t, c, testNamespace, "SO-2", "second")
}

func TestSQLiteStoreMadeBeforeTheSplitKeepsItsVisibilityInItself(t *testing.T) {
	dir := t.TempDir()
	dbFile := filepath.Join(dir, "temporal.db")
	// A file as the server made them before: both schemas in one.
	if err := sqliteschema.SetupSchema(&config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: dbFile,
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"}}); err != nil {
		t.Fatal(err)
	}
	before := sqliteQuery(t, dbFile, visibilityIndexes)

	_, c := startForTest(t, Config{DBFile: dbFile})
	if _, err := os.Stat(VisibilityFile(dbFile)); err == nil {
		t.Fatal("a visibility file was made beside a file that keeps its own")
	}
	if got := runGreeting(t, c, "old-layout", "SO-9"); got != "hello old-layout" {
		t.Fatalf("workflow returned %q", got)
	}
	findByRef(t, c, testNamespace, "SO-9", "old-layout")
	if got := sqliteQuery(t, dbFile, `SELECT workflow_id FROM executions_visibility WHERE workflow_id NOT LIKE 'temporal-sys-%' ORDER BY workflow_id`); !slices.Equal(got, []string{"old-layout"}) {
		t.Fatalf("the file holds the visibility rows %v", got)
	}
	if got := sqliteQuery(t, dbFile, visibilityIndexes); !slices.Equal(got, before) {
		t.Fatalf("the indexes of a file made before the split changed: %v -> %v", before, got)
	}
}
