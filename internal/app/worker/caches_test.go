package worker

import (
	"fmt"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

func TestWorkerBoundsTheStickyWorkflowCache(t *testing.T) {
	got := 0
	setStickyCacheSize = func(n int) { got = n }
	t.Cleanup(func() { setStickyCacheSize = worker.SetStickyWorkflowCacheSize })
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	newWorker(c)
	if got != StickyCacheSize || StickyCacheSize != 1000 {
		t.Fatalf("sticky workflow cache sized %d before the worker was made, want 1000 (the SDK's default is 10000)", got)
	}
}

// The worker's pollers scale with the work waiting: the SDK's default of
// two fixed workflow-task pollers could not take 16 posts a second from
// the server in the production shape. Both kinds of poller are set to
// autoscale, and the fixed maximums (which would conflict) are left unset.
func TestWorkerPollersScaleWithTheWorkWaiting(t *testing.T) {
	o := workerOptions()
	if o.WorkflowTaskPollerBehavior == nil || o.ActivityTaskPollerBehavior == nil {
		t.Fatalf("workflow-task poller behaviour %v, activity-task %v: want both autoscaling", o.WorkflowTaskPollerBehavior, o.ActivityTaskPollerBehavior)
	}
	want := fmt.Sprintf("%T", worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}))
	for name, b := range map[string]worker.PollerBehavior{"workflow": o.WorkflowTaskPollerBehavior, "activity": o.ActivityTaskPollerBehavior} {
		if got := fmt.Sprintf("%T", b); got != want {
			t.Errorf("%s-task pollers behave as %s, want %s", name, got, want)
		}
	}
	if o.MaxConcurrentWorkflowTaskPollers != 0 || o.MaxConcurrentActivityTaskPollers != 0 {
		t.Errorf("fixed poller maximums set beside autoscaling: %d, %d", o.MaxConcurrentWorkflowTaskPollers, o.MaxConcurrentActivityTaskPollers)
	}
}
