package devtemporal

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

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
