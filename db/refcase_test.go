package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// applyPost stores a post of action with body for org and carries it out.
func applyPost(t *testing.T, d *testdb.DB, org uuid.UUID, action domain.Action, body string) (domain.InboundResult, error) {
	t.Helper()
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	ep, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org, AsEmail: "o@acme.example", Name: "in " + uuid.NewString()[:8], Action: action})
	if err != nil {
		t.Fatal(err)
	}
	id, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org, EndpointID: ep.ID, Action: action,
		ReceivedAt: time.Now(), Body: []byte(body), Size: len(body), BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := domain.ParseInbound(action, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return d.ApplyInbound(ctx, org, id, id, parsed, "https://commerce.example")
}

// mustApply is applyPost for a post that must go through (not park, not
// fail); it returns its result.
func mustApply(t *testing.T, d *testdb.DB, org uuid.UUID, action domain.Action, body string) domain.InboundResult {
	t.Helper()
	res, err := applyPost(t, d, org, action, body)
	if err != nil {
		t.Fatalf("%s %s: %v", action, body, err)
	}
	if res.Outcome != domain.OutcomeApplied && res.Outcome != domain.OutcomeUnchanged {
		t.Fatalf("%s %s: %s (waiting for %q), want it carried out", action, body, res.Outcome, res.WaitingFor)
	}
	return res
}

// A post finds the record it names whatever the case of the reference, as
// search does: order by number and by customer PO reference, the order of a
// quote, a delivery by number and by consignment, a purchase order, and an
// invoice already recorded (the same invoice, not a second one).
func TestInboundPostsFindRecordsIgnoringCase(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	seedFile(t, d, org.ID, `{"customers": [{"company": "Bolts Ltd"}],
		"quotes": [{"number": "Q-2026-7", "customer": "Bolts Ltd", "status": "accepted", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}],
		"orders": [{"number": "SO-2026-0202", "customer_po_ref": "Cust-PO-7", "quote_number": "Q-2026-7", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}],
		"deliveries": [{"number": "DEL-1", "order_number": "SO-2026-0202", "consignment_ref": "CN-ABC", "status": "ready"}],
		"suppliers": [{"name": "Steel Co"}],
		"purchase_orders": [{"number": "PO-77", "supplier": "Steel Co", "status": "sent", "lines": [{"description": "Rod", "qty": 2, "unit_price_minor": 100}]}]}`)

	res := mustApply(t, d, org.ID, domain.ActionERPOrderStatus, `{"order_ref": "so-2026-0202", "status": "in_progress"}`)
	if len(res.Changes) != 1 || res.Changes[0].Ref != "SO-2026-0202" {
		t.Fatalf("order by number ignoring case changed %+v, want SO-2026-0202 moved", res.Changes)
	}
	mustApply(t, d, org.ID, domain.ActionERPOrderStatus, `{"order_ref": "CUST-po-7", "status": "in_progress"}`)
	mustApply(t, d, org.ID, domain.ActionERPOrderStatus, `{"quote_ref": "q-2026-7", "status": "in_progress"}`)
	mustApply(t, d, org.ID, domain.ActionDeliveryStatus, `{"delivery_ref": "del-1", "status": "ready"}`)
	mustApply(t, d, org.ID, domain.ActionDeliveryStatus, `{"consignment_ref": "cn-abc", "status": "ready"}`)
	mustApply(t, d, org.ID, domain.ActionPurchaseOrderAck, `{"po_number": "po-77"}`)

	mustApply(t, d, org.ID, domain.ActionOrderInvoice, `{"order_ref": "SO-2026-0202", "invoice_ref": "INV-9"}`)
	if res := mustApply(t, d, org.ID, domain.ActionOrderInvoice, `{"order_ref": "so-2026-0202", "invoice_ref": "inv-9"}`); res.Outcome != domain.OutcomeUnchanged {
		t.Fatalf("the same order invoice in lower case: %s %+v, want unchanged", res.Outcome, res.Changes)
	}
	mustApply(t, d, org.ID, domain.ActionSupplierInvoice, `{"po_number": "PO-77", "invoice_ref": "SI-1", "amount_minor": 200}`)
	if res := mustApply(t, d, org.ID, domain.ActionSupplierInvoice, `{"po_number": "po-77", "invoice_ref": "si-1", "amount_minor": 200}`); res.Outcome != domain.OutcomeUnchanged {
		t.Fatalf("the same supplier invoice in lower case: %s %+v, want unchanged", res.Outcome, res.Changes)
	}
	var orderInvoices, supplierInvoices int
	if err := d.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM order_invoices WHERE org_id = $1), (SELECT count(*) FROM supplier_invoices WHERE org_id = $1)`,
		org.ID).Scan(&orderInvoices, &supplierInvoices); err != nil {
		t.Fatal(err)
	}
	if orderInvoices != 1 || supplierInvoices != 1 {
		t.Fatalf("%d order invoices and %d supplier invoices, want one each", orderInvoices, supplierInvoices)
	}
}

// When two records of an organisation differ only by case, the one spelt
// exactly as the post wins; a spelling that is neither is refused as
// ambiguous, naming both, and changes nothing.
func TestReferencesDifferingOnlyByCase(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	seedFile(t, d, org.ID, `{"customers": [{"company": "Bolts Ltd"}], "orders": [
		{"number": "SO-9", "customer": "Bolts Ltd", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]},
		{"number": "so-9", "customer": "Bolts Ltd", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`)
	for _, exact := range []string{"SO-9", "so-9"} {
		res := mustApply(t, d, org.ID, domain.ActionERPOrderStatus, `{"order_ref": "`+exact+`", "status": "in_progress"}`)
		if len(res.Changes) != 1 || res.Changes[0].Ref != exact {
			t.Fatalf("order_ref %s changed %+v, want that order", exact, res.Changes)
		}
	}
	res, err := applyPost(t, d, org.ID, domain.ActionERPOrderStatus, `{"order_ref": "So-9", "status": "fulfilled"}`)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.EUNPROCESSABLE || !strings.Contains(de.Message, "SO-9, so-9") {
		out, _ := json.Marshal(res)
		t.Fatalf("order_ref So-9 with SO-9 and so-9: %v %s, want refused as ambiguous naming both", err, out)
	}
}

// A post parked waiting for a reference is woken by the record that
// reference names whatever its case.
func TestALoadWakesPostsWaitingForItsReferenceInAnotherCase(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	res, err := applyPost(t, d, org.ID, domain.ActionERPOrderStatus, `{"order_ref": "so-2026-0202", "status": "in_progress"}`)
	if err != nil || res.Outcome != domain.OutcomeParked {
		t.Fatalf("a post naming a missing order: %v %+v, want parked", err, res)
	}
	waiting := parkedReceipt(t, d, org.ID, res.WaitingKeys)
	seedFile(t, d, org.ID, `{"customers": [{"company": "Bolts Ltd"}],
		"orders": [{"number": "SO-2026-0202", "customer": "Bolts Ltd", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`)
	got := inboundWakes(takeWakes(t, d))
	if _, ok := got[waiting]; !ok {
		t.Fatalf("the order SO-2026-0202 woke %v, not the post waiting for %v", got, res.WaitingKeys)
	}
}
