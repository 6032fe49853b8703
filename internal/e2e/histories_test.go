package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/workflows"
)

// historiesDir is where the replay test of package workflows reads the
// recorded histories from.
const historiesDir = "../../workflows/testdata/histories"

// RecordHistoriesEnv turns TestRecordHistories on.
const RecordHistoriesEnv = "COMMERCE_RECORD_HISTORIES"

// nightlySoon runs the real activities, with the nightly retry run of
// webhook deliveries set to a second after each attempt, so that a delivery
// goes through its nightly retries to exhausted within seconds. Nothing else
// differs from the worker's activities.
type nightlySoon struct {
	*activities.Activities
}

func (n *nightlySoon) DeliverWebhook(ctx context.Context, in domain.DeliverInput) (domain.DeliverResult, error) {
	now := time.Now().UTC()
	// A second from now, less the delivery's place in the nightly hour
	// (domain.NightlyOffset), which the attempt adds back.
	day := 24 * time.Hour
	p := domain.NewDeliveryPolicy((now.Add(time.Second).Sub(now.Truncate(day)) - domain.NightlyOffset(in.DeliveryID) + day) % day)
	in.Policy = &p
	return n.Activities.DeliverWebhook(ctx, in)
}

// TestRecordHistories runs every workflow type through each of its paths
// on a real Temporal server, with the real activities and Postgres, and
// writes each run's history to workflows/testdata/histories/<type>.<path>.json
// (the JSON `temporal workflow show --output json` writes), for the replay
// test of package workflows. It runs only when COMMERCE_RECORD_HISTORIES=1:
//
//	COMMERCE_RECORD_HISTORIES=1 go test -count=1 ./internal/e2e -run TestRecordHistories
func TestRecordHistories(t *testing.T) {
	if os.Getenv(RecordHistoriesEnv) != "1" {
		t.Skip("set " + RecordHistoriesEnv + "=1 to record the workflows' histories")
	}
	f := newInbound(t)
	f.Worker.Stop()
	f.Worker = f.Server.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.Register(r, &nightlySoon{f.Activities()})
	})
	ctx := context.Background()
	if err := os.MkdirAll(historiesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// recordRun writes the history of one run of a workflow (its latest
	// when runID is empty), once the workflow (and every run it continued
	// as new) has closed.
	recordRun := func(workflowID, runID, file string) {
		t.Helper()
		// A post that did not apply ends its run Failed or Canceled.
		var appErr *temporal.ApplicationError
		if err := f.Temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, nil); err != nil && !errors.As(err, &appErr) && !temporal.IsCanceledError(err) {
			t.Fatalf("%s: %v", workflowID, err)
		}
		hist := &historypb.History{}
		it := f.Temporal.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, ev)
		}
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(historiesDir, file), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d events", file, len(hist.Events))
	}
	record := func(workflowID, file string) { t.Helper(); recordRun(workflowID, "", file) }
	inbound := func(a answer, want domain.Outcome, file string) {
		t.Helper()
		f.eventually("the post ending "+string(want), func() bool { return f.receipt(a.receipt).Outcome == want })
		record(domain.InboundWorkflowID(mustID(t, a.receipt)), file)
	}

	// Inbound: applied at once, and refused (the purchase order is cancelled).
	status, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	if a := f.post(status, `{"order_ref": "SO-2", "status": "processing"}`); a.status != 200 {
		t.Fatalf("applied: %d %s", a.status, a.raw)
	} else {
		inbound(a, domain.OutcomeApplied, "InboundAction.applied.json")
	}
	invoices, _, _ := f.endpoint(domain.ActionSupplierInvoice, false)
	if a := f.post(invoices, `{"po_number": "P-CANC", "invoice_ref": "S-REFUSED"}`); a.status != 409 {
		t.Fatalf("refused: %d %s", a.status, a.raw)
	} else {
		inbound(a, domain.OutcomeFailed, "InboundAction.refused.json")
	}

	// Inbound: parked, then woken by the order arriving.
	parked := f.post(status, `{"order_ref": "SO-LATER", "status": "shipped"}`)
	if parked.status != 202 || parked.str("outcome") != "parked" {
		t.Fatalf("parked: %d %s", parked.status, parked.raw)
	}
	f.seed(`{"orders": [{"number": "SO-LATER", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	inbound(parked, domain.OutcomeApplied, "InboundAction.parked-then-matched.json")

	// Inbound: parked, then cancelled by support.
	cancelled := f.post(status, `{"order_ref": "SO-CANCELLED", "status": "shipped"}`)
	if cancelled.status != 202 || cancelled.str("outcome") != "parked" {
		t.Fatalf("parked: %d %s", cancelled.status, cancelled.raw)
	}
	if err := f.Workflows.CancelInbound(ctx, mustID(t, cancelled.receipt)); err != nil {
		t.Fatal(err)
	}
	inbound(cancelled, domain.OutcomeCancelled, "InboundAction.parked-then-cancelled.json")

	// Inbound: parked until the park runs out (2 s here, looking again every
	// second, instead of 7 days every 15 minutes).
	ep, err := f.DB.CreateEndpoint(ctx, Sealer(), db.NewEndpoint{OrgID: f.org.ID, AsEmail: "admin@acme.example",
		Name: "unmatched", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"order_ref": "SO-NEVER", "status": "shipped"}`)
	receipt, err := f.DB.StoreReceipt(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: time.Now(),
		Body: body, Size: len(body), BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Workflows.RunInbound(ctx, domain.InboundInput{OrgID: f.org.ID, EndpointID: ep.ID, ReceiptID: receipt, Source: receipt,
		Action: ep.Action, ParkFor: 2 * time.Second})
	if err != nil || out.Result == nil || !out.Result.Parked() {
		t.Fatalf("parking: %+v %v", out, err)
	}
	inbound(answer{receipt: receipt.String()}, domain.OutcomeUnmatched, "InboundAction.parked-then-unmatched.json")

	// A supplier invoice before any goods: the post starts the three-way
	// match, which waits for the goods receipt and then matches.
	waiting := f.post(invoices, `{"po_number": "P-NONE", "invoice_ref": "S-WAIT", "amount_minor": 3000, "invoiced_qty": 3}`)
	if waiting.status != 202 {
		t.Fatalf("awaiting receipt: %d %s", waiting.status, waiting.raw)
	}
	inbound(waiting, domain.OutcomeApplied, "InboundAction.invoice-awaiting-receipt.json")
	f.seed(`{"goods_receipts": [{"po_number": "P-NONE", "received_at": "2026-11-22T08:00:00Z", "lines": [{"position": 1, "qty": 3}]}]}`)
	f.eventually("the match completing on the receipt", func() bool {
		return f.one(`SELECT match_status FROM supplier_invoices WHERE org_id = $1 AND invoice_ref = 'S-WAIT'`) == "matched"
	})
	poID := mustID(t, f.one(`SELECT id::text FROM purchase_orders WHERE org_id = $1 AND number = 'P-NONE'`))
	record(domain.MatchWorkflowID(poID, "S-WAIT"), "ThreeWayMatch.awaiting-receipt-then-matched.json")

	// Inbound: parked, woken again and again by records it does not wait
	// for until its run continues as new; the next run, woken by its
	// order, applies.
	long := f.post(status, `{"order_ref": "SO-LONG", "status": "shipped"}`)
	if long.status != 202 || long.str("outcome") != "parked" {
		t.Fatalf("parked: %d %s", long.status, long.raw)
	}
	longID := domain.InboundWorkflowID(mustID(t, long.receipt))
	longFirst := f.wakeUntilContinued(longID, workflows.RecordCreatedSignal,
		domain.RecordsCreated{Keys: []string{domain.WaitKey(domain.WaitOrder, "SO-OTHER")}})
	f.seed(`{"orders": [{"number": "SO-LONG", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	inbound(long, domain.OutcomeApplied, "InboundAction.continued-then-matched.json")
	recordRun(longID, longFirst, "InboundAction.parked-continued-as-new.json")

	// A match waiting for goods, woken again and again for another
	// purchase order until its run continues as new; the next run, woken
	// by the goods receipt, matches.
	f.seed(`{"purchase_orders": [{"number": "P-NONE-2", "supplier": "Steel Co", "status": "acknowledged", "lines": [{"description": "Rod", "qty": 3, "unit_price_minor": 1000}]}]}`)
	if a := f.post(invoices, `{"po_number": "P-NONE-2", "invoice_ref": "S-LONG", "amount_minor": 3000, "invoiced_qty": 3}`); a.status != 202 {
		t.Fatalf("awaiting receipt: %d %s", a.status, a.raw)
	}
	po2 := mustID(t, f.one(`SELECT id::text FROM purchase_orders WHERE org_id = $1 AND number = 'P-NONE-2'`))
	matchID := domain.MatchWorkflowID(po2, "S-LONG")
	f.eventually("the match waiting", func() bool {
		_, err := f.Temporal.DescribeWorkflowExecution(ctx, matchID, "")
		return err == nil
	})
	otherPO := uuid.New()
	matchFirst := f.wakeUntilContinued(matchID, workflows.ReceiptRecordedSignal, domain.GoodsReceived{POID: &otherPO})
	f.seed(`{"goods_receipts": [{"po_number": "P-NONE-2", "received_at": "2026-11-22T08:00:00Z", "lines": [{"position": 1, "qty": 3}]}]}`)
	f.eventually("the continued match completing on the receipt", func() bool {
		return f.one(`SELECT match_status FROM supplier_invoices WHERE org_id = $1 AND invoice_ref = 'S-LONG'`) == "matched"
	})
	record(matchID, "ThreeWayMatch.continued-then-matched.json")
	recordRun(matchID, matchFirst, "ThreeWayMatch.awaiting-receipt-continued-as-new.json")

	// Webhooks: one receiver answers, another fails every attempt, and a
	// third fails the first attempt and is resent its delivery while the
	// second runs (support resent it as the run was closing: one attempt
	// more).
	ok := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	broken := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	var racingSub db.CreatedSubscription
	racing := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get(domain.HeaderAttempt) {
		case "1":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case "3":
			return
		}
		ref := domain.WebhookDeliveryRef{ID: mustID(t, r.Header.Get(domain.HeaderDeliveryID)), OrgID: f.org.ID,
			EventID: mustID(t, r.Header.Get(domain.HeaderEventID)), EventType: r.Header.Get(domain.HeaderEventType),
			SubscriptionID: racingSub.ID}
		go func() {
			if err := f.Workflows.ResendWebhook(context.Background(), ref, false); err != nil {
				t.Errorf("resend while the attempt runs: %v", err)
			}
		}()
		time.Sleep(time.Second) // the attempt is still running when the resend arrives
	})
	okSub, brokenSub := ok.subscribe(f, domain.EventCustomerCreated), broken.subscribe(f, domain.EventCustomerCreated)
	racingSub = racing.subscribe(f, domain.EventCustomerCreated)
	f.Outbox()
	if _, err := f.DB.UpsertCustomers(ctx, f.org.ID, []domain.CustomerInput{{Company: "Hooked Ltd"}}); err != nil {
		t.Fatal(err)
	}
	delivery := func(sub uuid.UUID, want string) string {
		t.Helper()
		q := `SELECT id::text || ' ' || status || ' ' || attempts FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2`
		var got string
		f.eventuallyWithin(30*time.Second, "the delivery ending "+want, func() bool {
			_ = f.DB.Pool().QueryRow(ctx, q, f.org.ID, sub).Scan(&got)
			return len(got) > 36 && got[37:] == want
		})
		return domain.WebhookWorkflowID(mustID(t, got[:36]))
	}
	record(delivery(okSub.ID, "succeeded 1"), "WebhookDelivery.delivered-resend-while-closing.json")
	record(delivery(brokenSub.ID, fmt.Sprintf("exhausted %d", domain.MaxWebhookAttempts)),
		"WebhookDelivery.failed-resend-while-closing-retried-exhausted.json")
	record(delivery(racingSub.ID, "succeeded 3"), "WebhookDelivery.resent-while-closing.json")

	// Quote expiry: a sent quote whose valid_until has passed.
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(domain.DateLayout)
	f.seed(fmt.Sprintf(`{"quotes": [{"number": "Q-PAST", "status": "sent", "valid_until": %q}]}`, yesterday))
	if n, err := (&relay.QuoteExpiry{DB: f.DB.DB, Workflows: f.Workflows, Log: f.Log}).Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep started %d (%v), want 1", n, err)
	}
	quoteID := mustID(t, f.one(`SELECT id::text FROM quotes WHERE org_id = $1 AND number = 'Q-PAST'`))
	record(domain.QuoteExpiryWorkflowID(quoteID), "QuoteExpiry.expired.json")
	if got := f.one(`SELECT status FROM quotes WHERE org_id = $1 AND number = 'Q-PAST'`); got != "expired" {
		t.Fatalf("quote %s, want expired", got)
	}

	// A bulk replay of three posts that failed (their order did not exist
	// then; it does now).
	_, invoiceEndpoint, _ := f.endpoint(domain.ActionOrderInvoice, false)
	f.one(`WITH ins AS (
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code)
		SELECT id, $1, $2, 'order_invoice', now() - make_interval(secs => 60 - i), b, length(b), 'inbound/' || id, 'failed', 422
		FROM (SELECT gen_random_uuid() AS id, i,
		             convert_to(format('{"order_ref": "SO-1", "invoice_ref": "HIST-%s", "amount_minor": 1}', i), 'UTF8') AS b
		      FROM generate_series(1, 3) i) s
		RETURNING 1) SELECT count(*)::text FROM ins`, invoiceEndpoint)
	var batch struct{ ID, Status string }
	if status, raw := f.call("POST", "/api/v1/inbound/replays", f.apiKey(),
		fmt.Sprintf(`{"endpoint_id": %q, "outcome": "failed"}`, invoiceEndpoint), &batch); status != 202 {
		t.Fatalf("bulk replay: %d %s", status, raw)
	}
	record(domain.ReplayBatchWorkflowID(mustID(t, batch.ID)), "ReplayBatch.completed.json")
}
