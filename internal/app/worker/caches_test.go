package worker

import (
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
