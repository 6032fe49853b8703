package main

import (
	"testing"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/crash"
)

// TestKilledWorkerProcessLosesAndDoublesNothing runs the crash harness at a
// small size: 50 posts and 60 deliveries (the 50 invoices' events and 10
// customers created through the REST API) to a subscription limited to 20
// a second and ordered per entity, and the 50 invoices' again to a
// subscription whose receiver is down until the worker has been replaced
// (failing, its deliveries held); the worker process killed with SIGKILL
// at 30% of the work and replaced, and every post and every delivery
// checked for exactly one outcome, in order, and every held delivery for
// arriving at its first attempt.
func TestKilledWorkerProcessLosesAndDoublesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness builds the commerce binary and kills its worker: skipped under -short")
	}
	results, err := crash.Run(t.Context(), crash.Options{Runs: 1, Posts: 50, Deliveries: 60, Clients: 16, KillAt: 0.3,
		Settle: 3 * time.Minute, TemporalStore: "sqlite", Out: t.Output()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if len(r.Faults) != 1 || r.Faults[0].Applied >= r.Posts || r.Faults[0].Delivered >= r.Deliveries {
			t.Errorf("run %d: the worker was not killed in the middle of the burst: %+v", r.Run, r.Faults)
		}
		if r.Failed() {
			t.Errorf("run %d: %d/%d posts applied, %d lost, %d doubled; %d/%d delivered, %d lost, %d doubled, %d out of order; "+
				"to the down receiver %d/%d delivered, %d held, %d of them spent an attempt; %d unexpected, %d extra workflow runs",
				r.Run, r.Applied, r.Posts, r.PostsLost, r.PostsDoubled, r.Delivered, r.Deliveries, r.DeliveriesLost, r.DeliveriesDoubled,
				r.OutOfOrder, r.DownDelivered, r.DownDeliveries, r.Held, r.HeldSpent, r.Unexpected, r.ExtraRuns)
		}
	}
}
