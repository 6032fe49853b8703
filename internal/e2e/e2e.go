// Package e2e runs the service's end-to-end tests: a real Temporal server
// in-process (go.temporal.io/server/temporaltest), a worker with the
// service's workflows and activities, and a real Postgres schema of the
// test's own. All end-to-end tests live in this package, so the Temporal
// server is linked into one test binary only.
package e2e

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/workflows"
)

// Env is one test's world: its database, a Temporal server and client, and
// a running worker.
type Env struct {
	T         *testing.T
	DB        *testdb.DB
	Server    *temporaltest.TestServer
	Temporal  client.Client
	Namespace string
	Log       *zap.Logger
	Worker    worker.Worker
}

// Start brings up a Temporal server, registers the search attributes,
// starts a worker on the service's task queue and returns the environment.
// Everything stops when the test ends.
func Start(t *testing.T) *Env {
	t.Helper()
	d := testdb.New(t)
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	env := &Env{T: t, DB: d, Server: ts, Temporal: ts.GetDefaultClient(), Namespace: ts.GetDefaultNamespace(), Log: log}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := workflows.EnsureSearchAttributes(ctx, env.Temporal, env.Namespace); err != nil {
		t.Fatal(err)
	}
	env.Worker = env.StartWorker()
	return env
}

// Activities are the activities a worker of this environment runs.
func (e *Env) Activities() *activities.Activities {
	return &activities.Activities{DB: e.DB.DB, Log: e.Log}
}

// StartWorker starts another worker on the task queue (a test may stop one
// mid-flight and start a new one, as a crashed process would be replaced).
func (e *Env) StartWorker() worker.Worker {
	return e.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.Register(r, e.Activities())
	})
}
