package main

import (
	"testing"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/crash"
)

// TestTheProductionShapeSurvivesItsDatabaseAndNetworkFaults runs the
// harness at a small size through the database and network faults in
// turn: the service's Postgres SIGKILLed and restarted, shut down fast and
// started, 200 ms of latency, a silent partition from Postgres, and the
// same partition between the workers and Temporal. Nothing is lost or
// doubled; while Postgres is away the API answers 503 with Retry-After and
// /readyz says so; and work completes again within 5 seconds of each heal.
func TestTheProductionShapeSurvivesItsDatabaseAndNetworkFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the production-shape harness builds the Temporal server and runs it as a process: skipped under -short")
	}
	faults := []crash.Fault{crash.FaultPostgres, crash.FaultPostgresRestart, crash.FaultLatency, crash.FaultPartitionDB, crash.FaultPartitionTemporal}
	o := Defaults()
	o.Runs, o.Posts, o.Deliveries, o.Settle, o.Out = 1, 60, 80, 3*time.Minute, t.Output()
	o.Faults, o.KillAt, o.FaultEvery = faults, 0.1, 0.15
	results, err := crash.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if len(r.Faults) != len(faults) {
			t.Fatalf("run %d struck %d faults, want %d: %+v", r.Run, len(r.Faults), len(faults), r.Faults)
		}
		for _, f := range r.Faults {
			if f.Outage == nil {
				t.Errorf("run %d: the %s fault checked nothing while it lasted", r.Run, f.Fault)
				continue
			}
			if len(f.Outage.Requests) != 2 || len(f.Outage.Readyz) != o.APIs {
				t.Errorf("run %d: the %s fault asked %d requests and %d /readyz, want 2 and %d", r.Run, f.Fault, len(f.Outage.Requests), len(f.Outage.Readyz), o.APIs)
			}
			for _, p := range f.Outage.Problems(f.Fault) {
				t.Errorf("run %d: %s", r.Run, p)
			}
		}
		if r.Failed() {
			t.Errorf("run %d: %d/%d posts applied, %d lost, %d doubled; %d/%d delivered, %d lost, %d doubled; %d unexpected, %d extra workflow runs",
				r.Run, r.Applied, r.Posts, r.PostsLost, r.PostsDoubled, r.Delivered, r.Deliveries, r.DeliveriesLost, r.DeliveriesDoubled,
				r.Unexpected, r.ExtraRuns)
		}
	}
}
