package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/workflows"
)

// crashAfterCommit behaves like a worker process that dies after the
// database committed an inbound effect but before Temporal heard of it: the
// first attempt applies the post, then fails.
type crashAfterCommit struct {
	*activities.Activities
}

func (c *crashAfterCommit) ApplyInbound(ctx context.Context, in domain.InboundInput) (domain.InboundResult, error) {
	res, err := c.Activities.ApplyInbound(ctx, in)
	if err == nil && activity.GetInfo(ctx).Attempt == 1 {
		return domain.InboundResult{}, errors.New("worker lost after commit")
	}
	return res, err
}

func TestCrashedWorkerLosesAndDoublesNothing(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	f.Worker.Stop()
	crashing := f.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.RegisterWorkflows(r)
		r.RegisterActivity(&crashAfterCommit{Activities: f.Activities()})
	})

	const posts = 20
	var wg sync.WaitGroup
	for i := range posts {
		wg.Go(func() {
			a := f.post(url, fmt.Sprintf(`{"order_ref": "SO-1", "invoice_ref": "INV-%02d", "amount_minor": 10}`, i))
			if a.status != 200 && a.status != 202 {
				t.Errorf("post %d: %d %s", i, a.status, a.raw)
			}
		})
	}
	// Stop the crashing worker in the middle of the batch, then bring up a
	// new one, as a replaced process would be.
	f.eventually("some posts applying", func() bool {
		return f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'applied'`) >= 3
	})
	crashing.Stop()
	f.StartWorker()
	wg.Wait()

	// Workflow tasks the stopped worker held (with the local activities
	// inside them) are retried by the new one once their 10 s timeout passes.
	f.eventuallyWithin(90*time.Second, "every receipt reaching a final outcome", func() bool {
		return f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2 AND outcome = 'applied'`, epID) == posts
	})
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1`); n != posts {
		t.Fatalf("%d invoices recorded for %d posts", n, posts)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'order.invoice_recorded'`); n != posts {
		t.Fatalf("%d order.invoice_recorded events for %d posts", n, posts)
	}
	if n := f.count(`SELECT count(*) FROM inbound_effects WHERE org_id = $1`); n != posts {
		t.Fatalf("%d effects for %d posts", n, posts)
	}
}
