package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/workflows"
)

func TestParkedPostCompletesWhenTheOrderIsLoaded(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	a := f.post(url, `{"order_ref": "SO-NEW", "status": "shipped", "tracking_url": "https://track.example/new"}`)
	if a.status != 202 || a.str("outcome") != "parked" || a.str("waiting_for") == "" {
		t.Fatalf("unknown order: %d %s", a.status, a.raw)
	}
	if r := f.receipt(a.receipt); r.Outcome != domain.OutcomeParked || r.WaitingFor == nil {
		t.Fatalf("receipt %+v", r)
	}
	f.seed(`{"orders": [{"number": "SO-NEW", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	f.eventually("the parked post applying", func() bool { return f.receipt(a.receipt).Outcome == domain.OutcomeApplied })
	if f.one(`SELECT status || ' ' || tracking_url FROM orders WHERE org_id = $1 AND number = 'SO-NEW'`) != "in_progress https://track.example/new" {
		t.Fatal("the parked post's change is not on the order")
	}
}

// A parked post whose run continued as new (woken again and again by
// records it does not wait for) is still applied when its order arrives,
// and its receipt names the run that applied it.
func TestAParkedPostThatContinuedAsNewAppliesWhenItsOrderArrives(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	a := f.post(url, `{"order_ref": "SO-LONG", "status": "shipped"}`)
	if a.status != 202 || a.str("outcome") != "parked" {
		t.Fatalf("unknown order: %d %s", a.status, a.raw)
	}
	id := domain.InboundWorkflowID(mustID(t, a.receipt))
	first := f.wakeUntilContinued(id, workflows.RecordCreatedSignal,
		domain.RecordsCreated{Keys: []string{domain.WaitKey(domain.WaitOrder, "SO-OTHER")}})
	if r := f.receipt(a.receipt); r.Outcome != domain.OutcomeParked {
		t.Fatalf("receipt %+v after the run continued", r)
	}
	f.seed(`{"orders": [{"number": "SO-LONG", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	f.eventually("the continued post applying", func() bool { return f.receipt(a.receipt).Outcome == domain.OutcomeApplied })
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-LONG'`) != "in_progress" {
		t.Fatal("the post's change is not on the order")
	}
	if run := f.one(`SELECT run_id FROM inbound_receipts WHERE org_id = $1 AND id = '` + a.receipt + `'`); run == first || run == "" {
		t.Fatalf("receipt names run %q, want the continued one (not %s)", run, first)
	}
}

// wakeUntilContinued wakes a waiting workflow with signal and payload, one
// signal at a time, until its run continues as new, and returns the ID of
// the run that did.
func (f *inboundFixture) wakeUntilContinued(workflowID, signal string, payload any) string {
	f.T.Helper()
	ctx := context.Background()
	run := func() string {
		d, err := f.Temporal.DescribeWorkflowExecution(ctx, workflowID, "")
		if err != nil {
			f.T.Fatal(err)
		}
		return d.WorkflowExecutionInfo.Execution.RunId
	}
	first := run()
	for i := 0; ; i++ {
		if i > 1000 {
			f.T.Fatalf("%s did not continue as new after 1,000 wakes", workflowID)
		}
		err := f.Temporal.SignalWorkflow(ctx, workflowID, first, signal, payload)
		if run() != first {
			return first
		}
		if err != nil {
			f.T.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cliRun runs the commerce command tree against this environment.
func (f *inboundFixture) cliRun(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	args = append(args, "--database-url", f.DB.URL)
	code := cli.Execute(cli.NewRoot(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func (f *inboundFixture) temporalFlags() []string {
	return []string{"--temporal-address", f.Server.GetFrontendHostPort(), "--temporal-namespace", f.Namespace}
}

func TestReplayOfAFailedReceiptAfterFixingItsCause(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	a := f.post(url, `{"order_ref": "SO-LATE", "invoice_ref": "INV-9", "amount_minor": 500}`)
	if a.status != 202 || a.str("outcome") != "parked" {
		t.Fatalf("unknown order: %d %s", a.status, a.raw)
	}
	// Support stops it waiting...
	code, out, errOut := f.cliRun(append([]string{"receipts", "cancel", a.receipt, "--json"}, f.temporalFlags()...)...)
	if code != 0 {
		t.Fatalf("receipts cancel: %d %s", code, errOut)
	}
	var cancelled map[string]any
	_ = json.Unmarshal([]byte(out), &cancelled)
	if cancelled["outcome"] != "cancelled" {
		t.Fatalf("cancelled receipt: %s", out)
	}
	// ...the missing order is loaded, and the receipt replayed.
	f.seed(`{"orders": [{"number": "SO-LATE", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1000}]}]}`)
	code, out, errOut = f.cliRun(append([]string{"receipts", "replay", a.receipt, "--json"}, f.temporalFlags()...)...)
	if code != 0 {
		t.Fatalf("receipts replay: %d %s", code, errOut)
	}
	var replay struct {
		ID         string          `json:"id"`
		ReplayOf   string          `json:"replay_of"`
		StatusCode int             `json:"status_code"`
		Outcome    string          `json:"outcome"`
		Response   json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal([]byte(out), &replay); err != nil {
		t.Fatal(err)
	}
	if replay.ReplayOf != a.receipt || replay.StatusCode != 200 || replay.Outcome != "applied" {
		t.Fatalf("replay: %s", out)
	}
	if f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref = 'INV-9'`) != 1 {
		t.Fatal("the replay did not record the invoice")
	}
	// Replaying again (the original or the replay) changes nothing and
	// says so: unchanged, with no changes.
	for _, id := range []string{a.receipt, replay.ID} {
		code, out, errOut = f.cliRun(append([]string{"receipts", "replay", id, "--json"}, f.temporalFlags()...)...)
		var again struct {
			ReplayOf string          `json:"replay_of"`
			Outcome  string          `json:"outcome"`
			Response json.RawMessage `json:"response"`
		}
		_ = json.Unmarshal([]byte(out), &again)
		if code != 0 || again.ReplayOf != a.receipt || again.Outcome != "unchanged" || !noChanges(again.Response) {
			t.Fatalf("second replay of %s: %d %s %s", id, code, out, errOut)
		}
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'order.invoice_recorded'`) != 1 {
		t.Fatal("a replay doubled the event")
	}
	// The receipt list shows the original and its replays.
	code, out, _ = f.cliRun("receipts", "list", "--endpoint", epID, "--json")
	var list []map[string]any
	_ = json.Unmarshal([]byte(out), &list)
	if code != 0 || len(list) != 4 {
		t.Fatalf("receipts list: %s", out)
	}
	outcomes := map[string]int{}
	for _, r := range list {
		outcomes[fmt.Sprint(r["outcome"])]++
	}
	if outcomes["cancelled"] != 1 || outcomes["applied"] != 1 || outcomes["unchanged"] != 2 {
		t.Fatalf("outcomes %v", outcomes)
	}
}

// noChanges says whether an answer lists no changes.
func noChanges(a json.RawMessage) bool {
	var x struct {
		Changes *[]any `json:"changes"`
	}
	return json.Unmarshal(a, &x) == nil && x.Changes != nil && len(*x.Changes) == 0
}

func sameChanges(t *testing.T, a, b json.RawMessage) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x["changes"])
	ys, _ := json.Marshal(y["changes"])
	return string(xs) == string(ys) && len(xs) > 2
}

func TestInboundWorkflowsCarrySearchAttributes(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	a := f.post(url, `{"order_ref": "SO-2", "status": "processing"}`)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	for _, q := range []string{
		fmt.Sprintf("%s = '%s'", workflows.ReceiptIDAttr.GetName(), a.receipt),
		fmt.Sprintf("%s = '%s' AND %s = 'erp_order_status' AND %s = '%s'", workflows.OrgIDAttr.GetName(), f.org.ID,
			workflows.ActionAttr.GetName(), workflows.EndpointIDAttr.GetName(), epID),
	} {
		f.eventually("finding the workflow by "+q, func() bool {
			resp, err := f.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: f.Namespace, Query: q})
			return err == nil && len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == "inbound/"+a.receipt
		})
	}
}

// A post refused outright (402: the plan's product cap) is replayed once the
// cause is fixed (the plan raised): the replay applies, and the receipt list
// shows the failed original and the applied replay.
func TestReplayOfARejectedReceiptAfterRaisingThePlanCap(t *testing.T) {
	f := newInbound(t)
	f.one(`UPDATE organisations SET product_cap = (SELECT count(*) FROM products WHERE org_id = $1) WHERE id = $1 RETURNING 'ok'`)
	url, epID, _ := f.endpoint(domain.ActionUpsertProducts, false)
	a := f.post(url, `{"products": [{"sku": "NEW-1", "title": "New"}, {"sku": "NEW-2", "title": "Newer"}]}`)
	if a.status != 402 {
		t.Fatalf("over the cap: %d %s", a.status, a.raw)
	}
	if r := f.receipt(a.receipt); r.Outcome != domain.OutcomeFailed || r.StatusCode == nil || *r.StatusCode != 402 {
		t.Fatalf("receipt %+v", r)
	}
	f.one(`UPDATE organisations SET product_cap = product_cap + 100 WHERE id = $1 RETURNING 'ok'`)
	code, out, errOut := f.cliRun(append([]string{"receipts", "replay", a.receipt, "--json"}, f.temporalFlags()...)...)
	var replay struct {
		ReplayOf   string `json:"replay_of"`
		StatusCode int    `json:"status_code"`
		Outcome    string `json:"outcome"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &replay) != nil || replay.ReplayOf != a.receipt || replay.StatusCode != 200 || replay.Outcome != "applied" {
		t.Fatalf("replay: %d %s %s", code, out, errOut)
	}
	if n := f.count(`SELECT count(*) FROM products WHERE org_id = $1 AND sku IN ('NEW-1', 'NEW-2')`); n != 2 {
		t.Fatalf("%d of the two products written by the replay", n)
	}
	code, out, _ = f.cliRun("receipts", "list", "--endpoint", epID, "--json")
	var list []map[string]any
	_ = json.Unmarshal([]byte(out), &list)
	outcomes := map[string]int{}
	for _, r := range list {
		outcomes[fmt.Sprint(r["outcome"])]++
	}
	if code != 0 || len(list) != 2 || outcomes["failed"] != 1 || outcomes["applied"] != 1 {
		t.Fatalf("receipts list: %s", out)
	}
}

// Every action that names a record parks until the record exists, then
// completes on its own.
func TestEachActionParksUntilItsRecordIsLoaded(t *testing.T) {
	f := newInbound(t)
	cases := []struct {
		action      domain.Action
		body, seed  string
		check, want string
	}{
		{domain.ActionDeliveryStatus, `{"delivery_ref": "D-LATE", "status": "dispatched", "tracking_url": "https://track.example/late"}`,
			`{"orders": [{"number": "SO-D", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}],
			  "deliveries": [{"number": "D-LATE", "order_number": "SO-D", "status": "ready"}]}`,
			`SELECT d.status || ' ' || d.tracking_url || ' ' || o.status FROM deliveries d JOIN orders o ON o.id = d.order_id
			 WHERE d.org_id = $1 AND d.number = 'D-LATE'`, "dispatched https://track.example/late in_progress"},
		{domain.ActionPurchaseOrderAck, `{"po_number": "P-LATE", "supplier_ref": "ACK-1"}`,
			`{"purchase_orders": [{"number": "P-LATE", "supplier": "Steel Co", "status": "sent", "lines": [{"description": "Rod", "qty": 1, "unit_price_minor": 100}]}]}`,
			`SELECT status || ' ' || supplier_ref FROM purchase_orders WHERE org_id = $1 AND number = 'P-LATE'`, "acknowledged ACK-1"},
		{domain.ActionSupplierInvoice, `{"po_number": "P-INV", "invoice_ref": "SUP-LATE", "amount_minor": 200, "invoiced_qty": 2}`,
			`{"purchase_orders": [{"number": "P-INV", "supplier": "Steel Co", "status": "received", "lines": [{"description": "Rod", "qty": 2, "unit_price_minor": 100}],
			  "receipts": [{"received_at": "2026-11-20T09:00:00Z", "lines": [{"position": 1, "qty": 2}]}]}]}`,
			`SELECT match_status FROM supplier_invoices WHERE org_id = $1 AND invoice_ref = 'SUP-LATE'`, "matched"},
	}
	receipts := make([]string, len(cases))
	for i, c := range cases {
		url, _, _ := f.endpoint(c.action, false)
		a := f.post(url, c.body)
		if a.status != 202 || a.str("outcome") != "parked" {
			t.Fatalf("%s naming a record not there yet: %d %s", c.action, a.status, a.raw)
		}
		receipts[i] = a.receipt
	}
	for i, c := range cases {
		f.seed(c.seed)
		f.eventually(string(c.action)+" applying once its record is loaded", func() bool {
			return f.receipt(receipts[i]).Outcome == domain.OutcomeApplied
		})
		if got := f.one(c.check); got != c.want {
			t.Errorf("%s: %q, want %q", c.action, got, c.want)
		}
	}
}
