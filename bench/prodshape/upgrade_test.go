package main

import (
	"os"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/crash"
)

// TestARollingUpgradeFromThePreviousReleaseLosesNothing rehearses, at a
// small size, a rolling upgrade from the release COMMERCE_UPGRADE_TEST
// names (v0.1.0) to this checkout: the old release's replicas with posts
// parked, deliveries held and awaiting the nightly retry and a bulk replay
// running; the schema migrated by the new release under them; the
// replicas replaced one at a time while posts keep coming; the work then
// finished on the new ones. Every post is applied once, every delivery made
// once, every run the old release started ends closed, and none met a
// nondeterminism failure. It builds the old release, which takes minutes:
// it runs only when COMMERCE_UPGRADE_TEST names the release.
func TestARollingUpgradeFromThePreviousReleaseLosesNothing(t *testing.T) {
	ref := os.Getenv("COMMERCE_UPGRADE_TEST")
	if ref == "" || testing.Short() {
		t.Skip("builds a previous release and runs the production shape: set COMMERCE_UPGRADE_TEST=v0.1.0 to run it")
	}
	o := Defaults()
	o.Upgrade, o.Posts, o.Deliveries, o.Clients, o.Settle, o.Out = ref, 60, 60, 4, 3*time.Minute, t.Output()
	r, err := crash.RunUpgrade(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Applied != r.Posts || r.PostsLost > 0 || r.Doubled > 0 {
		t.Errorf("posts while rolling: %d sent, %d applied once, %d lost, %d doubled", r.Posts, r.Applied, r.PostsLost, r.Doubled)
	}
	if r.Parked == 0 || r.Woken != r.Parked {
		t.Errorf("%d posts parked by the old release, %d applied after their order came", r.Parked, r.Woken)
	}
	if r.Deliveries == 0 || r.Delivered != r.Deliveries || r.DownDelivered != r.Deliveries || r.HeldSeen == 0 || r.Nightly == 0 {
		t.Errorf("deliveries: %d events, %d delivered, %d by the failing subscription after %d held and %d awaiting the nightly retry",
			r.Deliveries, r.Delivered, r.DownDelivered, r.HeldSeen, r.Nightly)
	}
	if r.OldRuns == 0 || r.OldOpen > 0 || r.Nondeterministic > 0 {
		t.Errorf("%d runs started by the old release (%v), %d still open, %d nondeterminism failures", r.OldRuns, r.OldByStatus, r.OldOpen, r.Nondeterministic)
	}
	if !r.OldReadOK {
		t.Error("an old API replica did not answer a read after the migration")
	}
	for _, p := range r.Problems {
		t.Error(p)
	}
}
