package main

import (
	"testing"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/crash"
)

// TestTheProductionShapeLosesAndDoublesNothingThroughItsFaults runs the
// harness at a small size: 60 posts and 80 deliveries over two API and two
// worker processes and a Temporal server built from the pinned module, a
// worker, an API replica and the Temporal server killed in turn, and every
// post and delivery checked for exactly one outcome: the posts made while
// Temporal is down too, during which every API replica stays ready and
// says Temporal is down. The Postgres
// connections of the run stay under 80% of the server's max_connections
// with the compose file's pool sizes.
func TestTheProductionShapeLosesAndDoublesNothingThroughItsFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the production-shape harness builds the Temporal server and runs it as a process: skipped under -short")
	}
	o := Defaults()
	o.Runs, o.Posts, o.Deliveries, o.Settle, o.Out = 1, 60, 80, 3*time.Minute, t.Output()
	results, err := crash.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if len(r.Faults) != 3 {
			t.Errorf("run %d struck %d faults, want 3: %+v", r.Run, len(r.Faults), r.Faults)
		}
		for _, f := range r.Faults {
			if f.Applied >= r.Posts && f.Delivered >= r.Deliveries {
				t.Errorf("run %d: the %s fault struck after the burst: %+v", r.Run, f.Fault, f)
			}
			if f.Fault == crash.FaultTemporal && !f.ReadyWhileDown {
				t.Errorf("run %d: with the Temporal server down, an API replica was not ready, or did not say Temporal was down", r.Run)
			}
		}
		if r.Failed() {
			t.Errorf("run %d: %d/%d posts applied, %d lost, %d doubled; %d/%d delivered, %d lost, %d doubled; %d unexpected, %d extra workflow runs",
				r.Run, r.Applied, r.Posts, r.PostsLost, r.PostsDoubled, r.Delivered, r.Deliveries, r.DeliveriesLost, r.DeliveriesDoubled,
				r.Unexpected, r.ExtraRuns)
		}
		if r.MaxConnections == 0 || r.PeakConnections*100 >= 80*r.MaxConnections {
			t.Errorf("run %d: %d connections at the peak (%d service, %d Temporal), against max_connections %d: not under 80%%",
				r.Run, r.PeakConnections, r.PeakService, r.PeakTemporal, r.MaxConnections)
		}
	}
}
