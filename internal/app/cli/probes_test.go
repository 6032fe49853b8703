package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/health"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// The worker is ready only while Postgres answers with the current schema,
// Temporal answers and it polls its task queue: without a Temporal client
// and before it polls, its /readyz is 503 and says which are down.
func TestWorkerProbesRequireTemporalAndPolling(t *testing.T) {
	d := testdb.New(t)
	pool, err := db.Connect(context.Background(), d.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var polling atomic.Bool
	srv := httptest.NewServer((&cli.Runtime{DB: pool, Log: zap.NewNop()}).WorkerProbes(&polling))
	defer srv.Close()
	ready := func() (int, health.Answer) {
		resp, err := http.Get(srv.URL + "/readyz?verbose=1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a health.Answer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, a
	}
	status, a := ready()
	if status != http.StatusServiceUnavailable || a.Checks["postgres"].Status != "up" || a.Checks["schema"].Status != "up" ||
		a.Checks["temporal"] != (health.State{Status: "down", Required: true, Reason: "not configured"}) ||
		a.Checks["worker"] != (health.State{Status: "down", Required: true, Reason: "not polling its task queue"}) {
		t.Fatalf("before polling, without Temporal: %d %+v", status, a)
	}
	polling.Store(true)
	if status, a := ready(); status != http.StatusServiceUnavailable || a.Checks["worker"].Status != "up" || a.Checks["temporal"].Status != "down" {
		t.Fatalf("polling, without Temporal: %d %+v", status, a)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}
