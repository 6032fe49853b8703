package main

import (
	"context"
	"io"
	"testing"

	"github.com/commerce-integration/commerce/bench/internal/temporalwork"
)

// TestTemporalWorkCountsRealHistories runs the harness at a small size and
// checks that its counts come from the runs' histories and the server's
// counters: every kind has its items, each item at least one workflow
// task and the events of its workflow type (an inbound post starts with
// its update, a delivery's retry waits on a timer), and the server made
// persistence requests. The figures themselves are the full run's
// business.
func TestTemporalWorkCountsRealHistories(t *testing.T) {
	const n = 3
	res, err := temporalwork.Run(context.Background(), temporalwork.Options{N: n, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]temporalwork.Work{}
	for _, r := range res.Rows {
		if r.Items != n {
			t.Fatalf("%s: %d items, want %d", r.Kind, r.Items, n)
		}
		rows[r.Kind] = r.Work
		w := r.Work
		if w.WorkflowTasks < n || w.ByType["WorkflowExecutionStarted"] != n || w.Events != sum(w.ByType) {
			t.Errorf("%s: %d workflow tasks, %d runs started, %d events (%v)", r.Kind, w.WorkflowTasks,
				w.ByType["WorkflowExecutionStarted"], w.Events, w.ByType)
		}
		if w.PersistenceTotal() <= 0 {
			t.Errorf("%s: no persistence requests counted", r.Kind)
		}
	}
	for _, kind := range []string{temporalwork.KindApplied, temporalwork.KindFailed, temporalwork.KindParked} {
		w := rows[kind]
		if w.ByType["WorkflowExecutionUpdateAccepted"] < n || w.LocalActivities < n {
			t.Errorf("%s: %v: want the answer update and a local activity per post", kind, w.ByType)
		}
	}
	if w := rows[temporalwork.KindParked]; w.Timers < n || w.ByType["WorkflowExecutionCompleted"] != 0 {
		t.Errorf("parked: %v: want a recheck timer per post and every run open", w.ByType)
	}
	if w := rows[temporalwork.KindFailed]; w.ByType["WorkflowExecutionFailed"] != n {
		t.Errorf("refused: %v: want every run failed", w.ByType)
	}
	if w := rows[temporalwork.KindRetried]; w.Timers < n || w.WorkflowTasks <= rows[temporalwork.KindDelivered].WorkflowTasks {
		t.Errorf("retried: %v: want a nightly timer per delivery and more workflow tasks than a first-time success", w.ByType)
	}
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}
