package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/workflows"
	"github.com/google/uuid"
)

// crashAfterCommit behaves like a worker process that dies after the
// database committed an inbound effect but before Temporal heard of it: the
// first attempt applies the post, then fails.
type crashAfterCommit struct {
	*activities.Activities
	crashed atomic.Int32
}

func (c *crashAfterCommit) ApplyInbound(ctx context.Context, in domain.InboundInput) (domain.InboundResult, error) {
	res, err := c.Activities.ApplyInbound(ctx, in)
	if err == nil && activity.GetInfo(ctx).Attempt == 1 {
		return domain.InboundResult{}, errors.New("worker lost after commit")
	}
	return res, err
}

// ApplyInboundStep, which runs recorded since one-step-posts call, dies
// the same way: after the post and its outcome committed.
func (c *crashAfterCommit) ApplyInboundStep(ctx context.Context, in domain.InboundStepInput) (domain.InboundStep, error) {
	step, err := c.Activities.ApplyInboundStep(ctx, in)
	if err == nil && activity.GetInfo(ctx).Attempt == 1 {
		c.crashed.Add(1)
		return domain.InboundStep{}, errors.New("worker lost after commit")
	}
	return step, err
}

func TestCrashedWorkerLosesAndDoublesNothing(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	f.Worker.Stop()
	crashes := &crashAfterCommit{Activities: f.Activities()}
	crashing := f.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.RegisterWorkflows(r)
		r.RegisterActivity(crashes)
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
	// inside them) are retried by the new one once their timeout
	// (workflows.InboundTaskTimeout) passes.
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
	if crashes.crashed.Load() == 0 {
		t.Fatal("no step died after its commit: the test ran nothing it is about")
	}
}

// An API process killed after it stored a post's receipt but before
// Temporal took the workflow's start leaves the receipt pending with no
// run, and the sender's retries answered 409. The worker's sweep starts
// it: the post is applied once, the retry gets its answer, and a second
// sweep runs nothing again.
func TestAReceiptWhoseWorkflowNeverStartedIsStartedByTheSweep(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	ctx := context.Background()
	body := `{"order_ref": "SO-1", "invoice_ref": "INV-ORPHAN", "amount_minor": 10}`
	endpoint := uuid.MustParse(epID)
	// What the API process did before it died: the receipt and its key.
	id, first, err := f.DB.StorePost(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: endpoint, Action: domain.ActionOrderInvoice,
		ReceivedAt: time.Now(), Body: []byte(body), Size: len(body), BodyComplete: true},
		[]db.PostKey{{Kind: db.PostKeyIdempotency, Value: "orphan-1"}})
	if err != nil || first != nil {
		t.Fatalf("store the post: %v %v", err, first)
	}
	if a := f.post(url, body, "Idempotency-Key", "orphan-1"); a.status != http.StatusConflict {
		t.Fatalf("a retry before the sweep: %d %s, want 409 (no answer yet)", a.status, a.raw)
	}
	sweep := &relay.Receipts{DB: f.DB.DB, Workflows: f.Workflows, Log: f.Log, Grace: time.Millisecond}
	if n, err := sweep.Drain(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep started %d receipts (%v), want 1", n, err)
	}
	f.eventually("the orphaned receipt applied", func() bool {
		return f.receipt(id.String()).Outcome == domain.OutcomeApplied
	})
	if a := f.post(url, body, "Idempotency-Key", "orphan-1"); a.status != http.StatusOK || a.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a retry after the sweep: %d %s, want the first post's answer", a.status, a.raw)
	}
	if n, err := sweep.Drain(ctx); err != nil || n != 0 {
		t.Fatalf("a second sweep found %d receipts (%v), want none", n, err)
	}
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref = 'INV-ORPHAN'`); n != 1 {
		t.Fatalf("%d invoices for the post", n)
	}
}
