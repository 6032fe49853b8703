package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/commerce-integration/commerce/domain"
)

// The reproduction of the issue: a value the storage refuses for good met
// inside an inbound workflow (here a rule the domain does not know of,
// added to this test's schema) was retried for an hour and its database
// text put in the inbound.receipt.failed event. It now fails at once, as
// the sender's 400, and the answer, the receipt and the event carry a
// generic text.
func TestInboundStorageRefusalFailsAtOnceAndLeaksNothing(t *testing.T) {
	f := newInbound(t)
	ctx := context.Background()
	if _, err := f.DB.Pool().Exec(ctx, `ALTER TABLE customers ADD CONSTRAINT refuse_in_test CHECK (company <> 'Refused Ltd')`); err != nil {
		t.Fatal(err)
	}
	url, epID, _ := f.endpoint(domain.ActionUpsertCustomers, false)
	a := f.post(url, `{"customers": [{"company": "Fine plc"}, {"company": "Refused Ltd"}]}`)
	// A 202 would mean the answer wait ran out: the workflow was retrying.
	if a.status != 400 {
		t.Fatalf("answer %d %s, want 400", a.status, a.raw)
	}
	leaks := func(where, text string) {
		t.Helper()
		for _, leak := range []string{"refuse_in_test", "violates", "constraint", "customers", "23514", "SQLSTATE"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s %q shows %q", where, text, leak)
			}
		}
	}
	leaks("the answer", a.str("error"))
	r := f.receipt(a.receipt)
	if r.Outcome != domain.OutcomeFailed || r.StatusCode == nil || *r.StatusCode != 400 || r.Error == nil {
		t.Fatalf("receipt: outcome %s, status %v, error %v", r.Outcome, r.StatusCode, r.Error)
	}
	leaks("the receipt's error", *r.Error)
	event := f.one(`SELECT data->>'error' FROM events WHERE org_id = $1 AND type = 'inbound.receipt.failed' AND data->>'endpoint_id' = $2`, epID)
	if event == "" {
		t.Fatal("no inbound.receipt.failed event with an error")
	}
	leaks("the event's error", event)
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'Fine plc'`); n != 0 {
		t.Fatalf("%d customers of the refused post written", n)
	}
	// Not retried: the workflow is over (Failed, as the post did), not
	// backing off, and its failure shows no more than the receipt.
	d, err := f.Temporal.DescribeWorkflowExecution(ctx, "inbound/"+a.receipt, "")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.WorkflowExecutionInfo.Status; s != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Fatalf("workflow %s, want failed", s)
	}
	var appErr *temporal.ApplicationError
	if err := f.Temporal.GetWorkflow(ctx, "inbound/"+a.receipt, "").Get(ctx, nil); !errors.As(err, &appErr) {
		t.Fatalf("the run ended with %v, want an application error", err)
	}
	// (the line starts with the action, upsert_customers)
	leaks("the run's failure", strings.TrimPrefix(appErr.Message(), string(domain.ActionUpsertCustomers)+":"))
}

// A product row whose category is too long to index is that row's error in
// an inbound post as in the REST route; the good rows are written.
func TestInboundProductsLongCategoryIsThatRowsError(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionUpsertProducts, false)
	a := f.post(url, `{"products": [{"sku": "N-1", "title": "Nut"}, {"sku": "N-2", "title": "Bolt", "category": "`+strings.Repeat("Fasteners ", 300)+`"}]}`)
	errs, _ := a.fields["errors"].([]any)
	if a.status != 200 || a.fields["created"] != 1.0 || len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["reason"].(string), "category") {
		t.Fatalf("%d %.500s", a.status, a.raw)
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1 AND sku = 'N-1'`); n != 1 {
		t.Fatal("the good row was not written")
	}
}
