package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/workflows"
)

// In the Temporal UI, a failed post's run reads Failed, its failure naming
// the outcome; an operator finds it by CommerceOutcome and a delivered
// webhook's by CommerceDeliveryStatus, and each run's summary and details
// say what it was and how it came out.
func TestTemporalUIFindsRunsByHowTheyCameOut(t *testing.T) {
	f := newInbound(t)
	defer f.Outbox()()
	failed, sub := refusedPost(t, f)

	// findOne lists the runs query finds and returns the one with that id.
	findOne := func(query, workflowID string) {
		t.Helper()
		f.eventually("finding "+workflowID+" by "+query, func() bool {
			resp, err := f.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: f.Namespace, Query: query})
			return err == nil && len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == workflowID
		})
	}
	// describe is the run's summary and its details.
	describe := func(workflowID string) (string, string) {
		t.Helper()
		desc, err := f.Temporal.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		var summary string
		if err := converter.GetDefaultDataConverter().FromPayload(desc.GetExecutionConfig().GetUserMetadata().GetSummary(), &summary); err != nil {
			t.Fatalf("%s's summary: %v", workflowID, err)
		}
		v, err := f.Temporal.QueryWorkflow(context.Background(), workflowID, "", "__temporal_workflow_metadata")
		if err != nil {
			t.Fatal(err)
		}
		var md sdkpb.WorkflowMetadata
		if err := v.Get(&md); err != nil {
			t.Fatal(err)
		}
		return summary, md.GetCurrentDetails()
	}

	inboundID := domain.InboundWorkflowID(mustID(t, failed.receipt))
	findOne(fmt.Sprintf(`%s = "failed" AND %s = "%s"`, workflows.OutcomeAttr.GetName(), workflows.ReceiptIDAttr.GetName(), failed.receipt), inboundID)
	summary, details := describe(inboundID)
	if summary != "order_invoice SO-1" || !strings.HasPrefix(details, "order_invoice SO-1: failed 422 ") {
		t.Fatalf("the failed post's run reads %q / %q; want its action, reference and outcome", summary, details)
	}
	desc, err := f.Temporal.DescribeWorkflowExecution(context.Background(), inboundID, "")
	if err != nil {
		t.Fatal(err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Fatalf("the failed post's run is %s, want Failed", st)
	}
	var appErr *temporal.ApplicationError
	if err := f.Temporal.GetWorkflow(context.Background(), inboundID, "").Get(context.Background(), nil); !errors.As(err, &appErr) ||
		appErr.Type() != workflows.ErrTypeInboundFailed || appErr.Message() != details {
		t.Fatalf("the failed post's run ended with %v, want %s reading %q", err, workflows.ErrTypeInboundFailed, details)
	}

	webhookID := deliveredTo(t, f, sub)
	findOne(fmt.Sprintf(`%s = "delivered" AND %s = "%s"`, workflows.DeliveryStatusAttr.GetName(), workflows.OrgIDAttr.GetName(), f.org.ID), webhookID)
	summary, details = describe(webhookID)
	if summary != "inbound.receipt.failed to subscription "+sub.ID.String() || details != "delivered 200 after 1 attempt(s)" {
		t.Fatalf("the delivery's run reads %q / %q", summary, details)
	}
}

// refusedPost sends an invoice the workflow refuses (422), to an
// organisation with a subscription to inbound.receipt.failed whose
// receiver answers 200, and returns the post's answer and the
// subscription.
func refusedPost(t *testing.T, f *inboundFixture) (answer, db.CreatedSubscription) {
	t.Helper()
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
	return failed, sub
}

// deliveredTo waits until a delivery to sub has succeeded and returns its
// workflow's id.
func deliveredTo(t *testing.T, f *inboundFixture, sub db.CreatedSubscription) string {
	t.Helper()
	var deliveryID string
	f.eventually("the failure event delivered", func() bool {
		return f.DB.Pool().QueryRow(context.Background(), `SELECT id::text FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2
			AND status = 'succeeded'`, f.org.ID, sub.ID).Scan(&deliveryID) == nil
	})
	return domain.WebhookWorkflowID(mustID(t, deliveryID))
}
