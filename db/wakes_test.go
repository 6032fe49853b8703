package db_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// parkedReceipt stores a post of org and records it parked, waiting for
// keys (none: any load wakes it, as the posts parked before wait keys).
func parkedReceipt(t *testing.T, d *testdb.DB, org uuid.UUID, keys []string) uuid.UUID {
	return parkedReceiptAs(t, d, org, "o@acme.example", keys)
}

func parkedReceiptAs(t *testing.T, d *testdb.DB, org uuid.UUID, owner string, keys []string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	ep, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org, AsEmail: owner, Name: "erp " + uuid.NewString()[:8], Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	id, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org, EndpointID: ep.ID, Action: domain.ActionERPOrderStatus,
		ReceivedAt: time.Now(), Body: []byte(`{}`), Size: 2, BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	waiting := "a record"
	if err := d.UpdateReceipt(ctx, org, id, db.ReceiptUpdate{Outcome: domain.OutcomeParked, WaitingFor: &waiting, WaitingKeys: keys}); err != nil {
		t.Fatal(err)
	}
	return id
}

func seedFile(t *testing.T, d *testdb.DB, org uuid.UUID, file string) {
	t.Helper()
	f, err := domain.ParseSeed([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Seed(context.Background(), org, f); err != nil {
		t.Fatal(err)
	}
}

// takeWakes sends every queued wake (reporting each sent) and returns them.
func takeWakes(t *testing.T, d *testdb.DB) []db.RecordWake {
	t.Helper()
	var all []db.RecordWake
	for {
		ws, err := d.ClaimRecordWakes(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteRecordWakes(context.Background(), wakeIDs(ws)); err != nil {
			t.Fatal(err)
		}
		all = append(all, ws...)
		if len(ws) < 100 {
			return all
		}
	}
}

// wakeIDs is the ids of wakes.
func wakeIDs(ws []db.RecordWake) []int64 {
	ids := make([]int64, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids
}

// inboundWakes is the receipts the wakes name, with the keys each carries.
func inboundWakes(ws []db.RecordWake) map[uuid.UUID][]string {
	m := map[uuid.UUID][]string{}
	for _, w := range ws {
		if w.Kind == db.WakeInbound {
			m[*w.ReceiptID] = w.Keys
		}
	}
	return m
}

// A load of records wakes exactly the parked posts that wait for a record
// it created (by reference: an order's number or customer PO reference,
// the quote it was made from, a delivery's number, consignment or order, a
// purchase order's number) in its own organisation, and posts that name no
// key (those parked before wait keys existed); and the matches waiting for goods against a
// purchase order it received.
func TestALoadWakesOnlyTheWorkflowsWaitingForItsRecords(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	other, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other", OwnerEmail: "o@other.example"})
	key := domain.WaitKey
	byNumber := parkedReceipt(t, d, org.ID, []string{key(domain.WaitOrder, "SO-1")})
	byPORef := parkedReceipt(t, d, org.ID, []string{key(domain.WaitOrder, "CUST-PO-7")})
	byQuote := parkedReceipt(t, d, org.ID, []string{key(domain.WaitQuote, "Q-1")})
	byDelivery := parkedReceipt(t, d, org.ID, []string{key(domain.WaitDelivery, "D-1")})
	byConsignment := parkedReceipt(t, d, org.ID, []string{key(domain.WaitConsignment, "CN-1")})
	byPO := parkedReceipt(t, d, org.ID, []string{key(domain.WaitPurchaseOrder, "P-1")})
	unrelated := parkedReceipt(t, d, org.ID, []string{key(domain.WaitOrder, "SO-2")})
	legacy := parkedReceipt(t, d, org.ID, nil)
	otherOrg := parkedReceiptAs(t, d, other.ID, "o@other.example", []string{key(domain.WaitOrder, "SO-1")})
	done := parkedReceipt(t, d, org.ID, []string{key(domain.WaitOrder, "SO-1")})
	if err := d.UpdateReceipt(ctx, org.ID, done, db.ReceiptUpdate{Outcome: domain.OutcomeCancelled}); err != nil {
		t.Fatal(err)
	}

	// Customers alone wake nothing: no post waits for one.
	seedFile(t, d, org.ID, `{"customers": [{"company": "Bolts Ltd"}]}`)
	if ws := takeWakes(t, d); len(ws) != 0 {
		t.Fatalf("a load of customers woke %+v", ws)
	}

	seedFile(t, d, org.ID, `{"quotes": [{"number": "Q-1", "customer": "Bolts Ltd", "status": "accepted", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}],
		"orders": [{"number": "SO-1", "customer_po_ref": "CUST-PO-7", "quote_number": "Q-1", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	got := inboundWakes(takeWakes(t, d))
	want := map[uuid.UUID][]string{
		byNumber: {key(domain.WaitOrder, "SO-1")}, byPORef: {key(domain.WaitOrder, "CUST-PO-7")},
		byQuote: {key(domain.WaitQuote, "Q-1")}, legacy: {},
	}
	if !sameWakes(got, want) {
		t.Fatalf("an order woke %v, want %v", got, want)
	}

	seedFile(t, d, org.ID, `{"deliveries": [{"number": "D-1", "order_number": "SO-1", "consignment_ref": "CN-1", "status": "ready"}]}`)
	got = inboundWakes(takeWakes(t, d))
	want = map[uuid.UUID][]string{
		byDelivery: {key(domain.WaitDelivery, "D-1")}, byConsignment: {key(domain.WaitConsignment, "CN-1")},
		// a delivery post may name its order
		byNumber: {key(domain.WaitOrder, "SO-1")}, byPORef: {key(domain.WaitOrder, "CUST-PO-7")}, legacy: {},
	}
	if !sameWakes(got, want) {
		t.Fatalf("a delivery woke %v, want %v", got, want)
	}

	seedFile(t, d, org.ID, `{"suppliers": [{"name": "Steel Co"}], "purchase_orders": [
		{"number": "P-1", "supplier": "Steel Co", "status": "sent", "lines": [{"description": "Rod", "qty": 2, "unit_price_minor": 100}]},
		{"number": "P-2", "supplier": "Steel Co", "status": "sent", "lines": [{"description": "Rod", "qty": 2, "unit_price_minor": 100}]}]}`)
	got = inboundWakes(takeWakes(t, d))
	want = map[uuid.UUID][]string{byPO: {key(domain.WaitPurchaseOrder, "P-1")}, legacy: {}}
	if !sameWakes(got, want) {
		t.Fatalf("purchase orders woke %v, want %v", got, want)
	}
	// Never woken, as the whole sets compared show: a post waiting for
	// another order, one of another organisation, one no longer parked.
	_, _, _ = unrelated, otherOrg, done

	// Invoices waiting for goods on P-1 and P-2; goods arrive for P-2.
	for po, ref := range map[string]string{"P-1": "INV-1", "P-2": "INV-2"} {
		if _, err := d.Pool().Exec(ctx, `INSERT INTO supplier_invoices (id, org_id, po_id, invoice_ref, currency, match_status)
			SELECT $1, $2, id, $4, 'GBP', 'awaiting_receipt' FROM purchase_orders WHERE org_id = $2 AND number = $3`,
			db.NewID(), org.ID, po, ref); err != nil {
			t.Fatal(err)
		}
	}
	seedFile(t, d, org.ID, `{"goods_receipts": [{"po_number": "P-2", "received_at": "2026-11-22T08:00:00Z", "lines": [{"position": 1, "qty": 2}]}]}`)
	var matches []string
	for _, w := range takeWakes(t, d) {
		if w.Kind == db.WakeMatch {
			matches = append(matches, *w.InvoiceRef)
		}
	}
	if !slices.Equal(matches, []string{"INV-2"}) {
		t.Fatalf("goods for P-2 woke the matches of %v, want INV-2's", matches)
	}
}

func sameWakes(got, want map[uuid.UUID][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for id, keys := range want {
		g, ok := got[id]
		if !ok {
			return false
		}
		g = slices.Clone(g)
		sort.Strings(g)
		if !slices.Equal(g, keys) {
			return false
		}
	}
	return true
}

// A wake the relay could not send stays queued for its next round; one it
// sent is gone.
func TestAWakeNotSentStaysQueued(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	a := parkedReceipt(t, d, org.ID, []string{domain.WaitKey(domain.WaitOrder, "SO-1")})
	b := parkedReceipt(t, d, org.ID, []string{domain.WaitKey(domain.WaitOrder, "SO-1")})
	seedFile(t, d, org.ID, `{"orders": [{"number": "SO-1", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	// Only a's is sent.
	ws, err := d.ClaimRecordWakes(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var sent, unsent []int64
	for _, w := range ws {
		if *w.ReceiptID == a {
			sent = append(sent, w.ID)
		} else {
			unsent = append(unsent, w.ID)
		}
	}
	if err := errors.Join(d.DeleteRecordWakes(ctx, sent), d.ReleaseRecordWakes(ctx, unsent)); err != nil {
		t.Fatal(err)
	}
	left := inboundWakes(takeWakes(t, d))
	if _, ok := left[b]; len(left) != 1 || !ok {
		t.Fatalf("left queued %v, want b's wake only", left)
	}
}
