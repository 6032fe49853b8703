package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// A post's run and a delivery's run give a workflow task 4 s, not
// Temporal's 10: a task lost with its worker, or sent to a poll that the
// network cut off, goes to another worker that much sooner.
func TestAPostsAndADeliverysWorkflowTasksAreGivenUpAfterFourSeconds(t *testing.T) {
	f := newInbound(t)
	defer f.Outbox()()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	sub, err := f.DB.CreateSubscription(context.Background(), Sealer(), db.NewSubscription{OrgID: f.org.ID, URL: rc.srv.URL + "/hooks",
		EventTypes: []string{domain.EventInboundReceiptFailed}})
	if err != nil {
		t.Fatal(err)
	}
	invoices, _, _ := f.endpoint(domain.ActionOrderInvoice, false)
	failed := f.post(invoices, `{"order_ref": "SO-1", "invoice_ref": "INV-TOO-BIG", "amount_minor": 999999999}`)
	if failed.status != http.StatusUnprocessableEntity || failed.receipt == "" {
		t.Fatalf("a post the workflow refuses: %d %s", failed.status, failed.raw)
	}
	var deliveryID string
	f.eventually("the failure event delivered", func() bool {
		return f.DB.Pool().QueryRow(context.Background(), `SELECT id::text FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2
			AND status = 'succeeded'`, f.org.ID, sub.ID).Scan(&deliveryID) == nil
	})
	runs := map[string]time.Duration{
		domain.InboundWorkflowID(mustID(t, failed.receipt)): 4 * time.Second,
		domain.WebhookWorkflowID(mustID(t, deliveryID)):     4 * time.Second,
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
