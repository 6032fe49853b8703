package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// A post's run and a delivery's run give a workflow task 4 s, not
// Temporal's 10: a task lost with its worker, or sent to a poll that the
// network cut off, goes to another worker that much sooner.
func TestAPostsAndADeliverysWorkflowTasksAreGivenUpAfterFourSeconds(t *testing.T) {
	f := newInbound(t)
	defer f.Outbox()()
	failed, sub := refusedPost(t, f)
	runs := map[string]time.Duration{
		domain.InboundWorkflowID(mustID(t, failed.receipt)): 4 * time.Second,
		deliveredTo(t, f, sub):                              4 * time.Second,
	}
	for id, want := range runs {
		desc, err := f.Temporal.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := desc.GetExecutionConfig().GetDefaultWorkflowTaskTimeout().AsDuration(); got != want {
			t.Errorf("%s's workflow task timeout is %s, want %s", id, got, want)
		}
	}
}
