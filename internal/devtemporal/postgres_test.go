package devtemporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/serialization"
	tsql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/resolver"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/commerce-integration/commerce/internal/testdb"
)

func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var greeting string
	err := workflow.ExecuteActivity(ctx, makeGreeting, name).Get(ctx, &greeting)
	return greeting, err
}

func makeGreeting(_ context.Context, name string) (string, error) { return "hello " + name, nil }

var orderRef = temporal.NewSearchAttributeKeyKeyword("CommerceTestOrderRef")

// runGreeting starts the workflow id with the search attribute set to ref
// (a start the server refuses when the namespace lacks the attribute), and
// returns its result.
func runGreeting(t *testing.T, c client.Client, id, ref string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: "devtemporal-test",
		TypedSearchAttributes: temporal.NewSearchAttributes(orderRef.ValueSet(ref)),
	}, greet, id)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	return got
}

// findByRef waits until the visibility store lists the workflow whose search
// attribute is ref.
func findByRef(t *testing.T, c client.Client, namespace, ref, wantID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: fmt.Sprintf("%s = '%s'", orderRef.GetName(), ref),
		})
		if err != nil {
			t.Fatalf("list by %s: %v", ref, err)
		}
		if len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == wantID {
			return
		}
		if len(resp.Executions) > 1 {
			t.Fatalf("list by %s found %d workflows", ref, len(resp.Executions))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("visibility never listed %s by %s", wantID, ref)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// testNamespace is the namespace the tests register, with orderRef.
const testNamespace = "devtemporal-test"

// startForTest starts a server on cfg's store with testNamespace and
// orderRef, a client and a worker for greet; the returned stop (also run at
// the test's end) stops all three.
func startForTest(t *testing.T, cfg Config) (stop func(), c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg.Namespace, cfg.FrontendPort, cfg.UIPort = testNamespace, -1, -1
	// The server's warnings and errors go to the test's output, shown when
	// it fails.
	cfg.Logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	cfg.SearchAttributes = map[string]enumspb.IndexedValueType{orderRef.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD}
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err = client.DialContext(ctx, client.Options{HostPort: s.FrontendAddress(), Namespace: testNamespace})
	if err != nil {
		s.Stop()
		t.Fatal(err)
	}
	w := worker.New(c, "devtemporal-test", worker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivity(makeGreeting)
	if err := w.Start(); err != nil {
		c.Close()
		s.Stop()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			w.Stop()
			c.Close()
			s.Stop()
		})
	}
	t.Cleanup(stop)
	return stop, c
}

// schemaSteps counts the schema tool's recorded steps in a database.
func schemaSteps(t *testing.T, store Postgres, database string) int {
	t.Helper()
	return countRows(t, store, database, "schema_update_history")
}

// countRows counts the rows of a table in one of the store's databases.
func countRows(t *testing.T, store Postgres, database, table string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", store.User, store.Addr, database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// recordShards rewrites the history shard count in the store's cluster
// metadata, as a store created with that count would have it.
func recordShards(t *testing.T, store Postgres, shards int32) {
	t.Helper()
	ctx := context.Background()
	db, err := tsql.NewSQLDB(sqlplugin.DbKindMain, store.sql(store.Database), resolver.NewNoopResolver(), tlog.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	row, err := db.GetClusterMetadata(ctx, &sqlplugin.ClusterMetadataFilter{ClusterName: clusterName})
	if err != nil {
		t.Fatal(err)
	}
	s := serialization.NewSerializer()
	md, err := s.DeserializeClusterMetadata(persistence.NewDataBlob(row.Data, row.DataEncoding))
	if err != nil {
		t.Fatal(err)
	}
	md.HistoryShardCount = shards
	blob, err := s.SerializeClusterMetadata(md)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", store.User, store.Addr, store.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE cluster_metadata_info SET data = $1, data_encoding = $2 WHERE cluster_name = $3",
		blob.Data, blob.EncodingType.String(), clusterName); err != nil {
		t.Fatal(err)
	}
}

func TestPostgresStoreStartsRestartsOnItsSchemaAndRunsWorkflows(t *testing.T) {
	store, err := PostgresFor(testdb.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	base := fmt.Sprintf("devtemporal_%d_%s", time.Now().Unix(), hex.EncodeToString(b))
	store.Database, store.VisibilityDatabase = base+"_temporal", base+"_temporal_visibility"
	t.Cleanup(func() {
		if err := store.Drop(); err != nil {
			t.Errorf("drop: %v", err)
		}
	})
	start := func() (func(), client.Client) {
		return startForTest(t, Config{Postgres: &store})
	}

	// First start: the databases and their schemas are made, at the versions
	// this server expects.
	stop, c := start()
	persistence, visibility, err := store.SchemaVersions()
	if err != nil {
		t.Fatal(err)
	}
	if persistence != pgschema.Version || visibility != pgschema.VisibilityVersion {
		t.Fatalf("schema versions %s and %s, want %s and %s", persistence, visibility, pgschema.Version, pgschema.VisibilityVersion)
	}
	steps, visSteps := schemaSteps(t, store, store.Database), schemaSteps(t, store, store.VisibilityDatabase)
	if got := runGreeting(t, c, "first", "SO-1"); got != "hello first" {
		t.Fatalf("first workflow returned %q", got)
	}
	findByRef(t, c, testNamespace, "SO-1", "first")
	// A new cluster has PostgresHistoryShards shards, each owned (a row
	// of its own) by the one history service.
	if n := countRows(t, store, store.Database, "shards"); n != PostgresHistoryShards {
		t.Fatalf("the new cluster has %d shards, want %d", n, PostgresHistoryShards)
	}
	stop()

	// Second start: the same schemas, untouched, and the first start's
	// workflow is still there.
	stop, c = start()
	if n, m := schemaSteps(t, store, store.Database), schemaSteps(t, store, store.VisibilityDatabase); n != steps || m != visSteps {
		t.Fatalf("the second start ran schema steps again: %d -> %d, %d -> %d", steps, n, visSteps, m)
	}
	if p, v, err := store.SchemaVersions(); err != nil || p != persistence || v != visibility {
		t.Fatalf("schema versions after restart: %s %s %v", p, v, err)
	}
	desc, err := c.DescribeWorkflowExecution(context.Background(), "first", "")
	if err != nil {
		t.Fatalf("the first start's workflow is gone: %v", err)
	}
	if st := desc.WorkflowExecutionInfo.Status; st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("the first workflow is %s", st)
	}
	findByRef(t, c, testNamespace, "SO-1", "first")
	if got := runGreeting(t, c, "second", "SO-2"); got != "hello second" {
		t.Fatalf("second workflow returned %q", got)
	}
	findByRef(t, c, testNamespace, "SO-2", "second")
	if n := countRows(t, store, store.Database, "shards"); n != PostgresHistoryShards {
		t.Fatalf("after a restart the cluster has %d shards, want %d", n, PostgresHistoryShards)
	}
	stop()

	// A store whose cluster was created with another count (one, before
	// PostgresHistoryShards) keeps it: the count is read from the store.
	tlogger := tlog.NewNoopLogger()
	if n, err := store.historyShards(tlogger); err != nil || n != PostgresHistoryShards {
		t.Fatalf("the store records %d shards (%v), want %d", n, err, PostgresHistoryShards)
	}
	recordShards(t, store, 1)
	if n, err := store.historyShards(tlogger); err != nil || n != 1 {
		t.Fatalf("a store created with one shard is given %d (%v)", n, err)
	}
}

func TestPostgresForNamesTheDatabasesBesideTheService(t *testing.T) {
	p, err := PostgresFor("postgres://svc:s%40cret@db.internal:6543/commerce?sslmode=require&search_path=x&pool_max_conns=4")
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "db.internal:6543" || p.User != "svc" || p.Password != "s@cret" {
		t.Fatalf("connection: %+v", p)
	}
	if p.Database != "commerce_temporal" || p.VisibilityDatabase != "commerce_temporal_visibility" {
		t.Fatalf("databases: %s, %s", p.Database, p.VisibilityDatabase)
	}
	if len(p.ConnectAttributes) != 1 || p.ConnectAttributes["sslmode"] != "require" {
		t.Fatalf("connect attributes: %v", p.ConnectAttributes)
	}
	if _, err := PostgresFor("host=localhost dbname=commerce"); err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Fatalf("a keyword/value DSN: %v", err)
	}
	p.Database = "Commerce-Temporal"
	if err := p.validate(); err == nil {
		t.Fatal("an upper-case database name with a dash passed")
	}
}
