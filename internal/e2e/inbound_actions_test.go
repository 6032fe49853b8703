package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

func TestCreateRequestAction(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionCreateRequest, false)
	a := f.post(url, `{"text": "Please quote 200 x M10 nuts\nThanks", "customer": {"company": "New Buyer GmbH", "email": "ann@newbuyer.example"}, "external_ref": "CRM-7"}`)
	req, _ := a.fields["request"].(map[string]any)
	if a.status != 202 || req == nil || req["title"] != "Please quote 200 x M10 nuts" || !strings.HasPrefix(req["url"].(string), BaseURL+"/ai/requests/") {
		t.Fatalf("create_request: %d %s", a.status, a.raw)
	}
	if f.count(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'New Buyer GmbH' AND email_domain = 'newbuyer.example'`) != 1 {
		t.Fatal("the customer was not created")
	}
	// The same external_ref returns the existing request.
	again := f.post(url, `{"text": "Please quote again", "external_ref": "CRM-7"}`)
	if again.status != 202 || again.fields["request"].(map[string]any)["id"] != req["id"] {
		t.Fatalf("external_ref repeat: %d %s", again.status, again.raw)
	}
	// A known domain matches the existing customer.
	f.post(url, `{"text": "Another", "customer": {"email": "bob@buyer.example"}}`)
	if f.count(`SELECT count(*) FROM request_threads r JOIN customers c ON c.id = r.customer_id WHERE r.org_id = $1 AND c.company = 'Buyer Ltd'`) != 1 {
		t.Fatal("the request was not attached to the customer of its domain")
	}
	if f.count(`SELECT count(*) FROM request_threads WHERE org_id = $1`) != 2 || f.count(`SELECT count(*) FROM usage_events WHERE org_id = $1`) != 0 {
		t.Fatal("wrong number of threads, or usage drawn")
	}
	// An email alone, of an unknown domain, creates a customer named after
	// the domain; a free-mail address, one named after the address, which
	// its next request finds again by the contact.
	f.post(url, `{"text": "From a new domain", "customer": {"email": "Cy@Unknown-Co.example"}}`)
	f.post(url, `{"text": "From a mailbox", "customer": {"email": "dee@gmail.com"}}`)
	f.post(url, `{"text": "Again from the mailbox", "customer": {"email": "DEE@gmail.com"}}`)
	if n := f.count(`SELECT count(*) FROM request_threads r JOIN customers c ON c.id = r.customer_id
		WHERE r.org_id = $1 AND c.company = 'unknown-co.example' AND c.email_domain = 'unknown-co.example'`); n != 1 {
		t.Fatalf("%d requests of the customer named after its domain", n)
	}
	if n := f.count(`SELECT count(*) FROM request_threads r JOIN customers c ON c.id = r.customer_id
		WHERE r.org_id = $1 AND c.company = 'dee@gmail.com' AND c.email_domain IS NULL`); n != 2 {
		t.Fatalf("%d requests of the free-mail customer, want 2 (one customer)", n)
	}
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'dee@gmail.com'`); n != 1 {
		t.Fatalf("%d free-mail customers, want 1", n)
	}
	// 400 for a bad shape; 422 for an organisation without an owner.
	if a := f.post(url, `{"title": "no text"}`); a.status != 400 {
		t.Fatalf("no text: %d", a.status)
	}
	orphan, _, _ := f.DB.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "No owner"})
	_, _ = f.DB.AddUser(context.Background(), orphan.ID, "admin@orphan.example", domain.UserAdmin)
	e, err := f.DB.CreateEndpoint(context.Background(), Sealer(), db.NewEndpoint{OrgID: orphan.ID, AsEmail: "admin@orphan.example", Name: "r", Action: domain.ActionCreateRequest})
	if err != nil {
		t.Fatal(err)
	}
	if a := f.post(f.srv.URL+"/api/in/"+e.Token, `{"text": "hello"}`); a.status != 422 || !strings.Contains(a.str("error"), "owner") {
		t.Fatalf("no owner: %d %s", a.status, a.raw)
	}
}

func TestUpsertActions(t *testing.T) {
	f := newInbound(t)
	customers, _, _ := f.endpoint(domain.ActionUpsertCustomers, false)
	if a := f.post(customers, `{"customers": [{"company": "Buyer Ltd", "email": "c@buyer.example"}, {"company": "Fresh plc", "external_id": "F1"}]}`); a.status != 200 ||
		a.fields["created"] != 1.0 || a.fields["updated"] != 1.0 || a.str("outcome") != "applied" {
		t.Fatalf("customers: %d %s", a.status, a.raw)
	}
	if a := f.post(customers, `{"customers": [{"company": ""}]}`); a.status != 400 || !strings.Contains(a.str("error"), "customers[0]") {
		t.Fatalf("bad customer: %d %s", a.status, a.raw)
	}
	products, _, _ := f.endpoint(domain.ActionUpsertProducts, false)
	a := f.post(products, `{"products": [{"sku": "N-1", "title": "Nut"}, {"sku": "N-2"}]}`)
	if a.status != 200 || a.fields["created"] != 1.0 || len(a.fields["errors"].([]any)) != 1 {
		t.Fatalf("products: %d %s", a.status, a.raw)
	}
	if a := f.post(products, `{"products": [{"sku": "N-1", "title": "Nut"}]}`); a.status != 200 || a.str("outcome") != "unchanged" {
		t.Fatalf("same products again: %d %s", a.status, a.raw)
	}
	// 402: an organisation whose cap the batch would pass; nothing is written.
	cap := 1
	small, _, _ := f.DB.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Small", OwnerEmail: "o@small.example", ProductCap: &cap})
	e, _ := f.DB.CreateEndpoint(context.Background(), Sealer(), db.NewEndpoint{OrgID: small.ID, AsEmail: "o@small.example", Name: "p", Action: domain.ActionUpsertProducts})
	if a := f.post(f.srv.URL+"/api/in/"+e.Token, `{"products": [{"sku": "A", "title": "a"}, {"sku": "B", "title": "b"}]}`); a.status != 402 {
		t.Fatalf("over the cap: %d %s", a.status, a.raw)
	}
	var n int
	_ = f.DB.Pool().QueryRow(context.Background(), `SELECT count(*) FROM products WHERE org_id = $1`, small.ID).Scan(&n)
	if n != 0 {
		t.Fatalf("%d products written over the cap", n)
	}
}

func TestERPOrderStatusAction(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	a := f.post(url, `{"order_ref": "SO-1", "status": "Processing", "tracking_url": "https://track.example/1"}`)
	ch := a.changes()
	if a.status != 200 || a.str("outcome") != "applied" || len(ch) != 2 || ch[0]["from"] != "confirmed" || ch[0]["to"] != "in_progress" || ch[1]["field"] != "tracking_url" {
		t.Fatalf("processing: %d %s", a.status, a.raw)
	}
	if f.one(`SELECT tracking_url FROM orders WHERE org_id = $1 AND number = 'SO-1'`) != "https://track.example/1" {
		t.Fatal("tracking_url not stored")
	}
	// The same status again changes nothing.
	if a := f.post(url, `{"order_ref": "SO-1", "status": "picking"}`); a.status != 200 || a.str("outcome") != "unchanged" || len(a.changes()) != 0 {
		t.Fatalf("same status: %d %s", a.status, a.raw)
	}
	// Matched by the customer's PO reference, and by quote.
	if a := f.post(url, `{"order_ref": "CUST-PO-1", "status": "completed"}`); a.status != 200 || a.changes()[0]["to"] != "fulfilled" {
		t.Fatalf("by customer_po_ref: %d %s", a.status, a.raw)
	}
	// A refused move: 409, and nothing changes.
	if a := f.post(url, `{"quote_ref": "Q-1", "status": "open"}`); a.status != 409 {
		t.Fatalf("fulfilled back to confirmed: %d %s", a.status, a.raw)
	}
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-1'`) != "fulfilled" {
		t.Fatal("a refused move changed the order")
	}
	// An unknown status: 422.
	if a := f.post(url, `{"order_ref": "SO-2", "status": "teleported"}`); a.status != 422 {
		t.Fatalf("unknown status: %d %s", a.status, a.raw)
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'order.status_changed'`) != 2 {
		t.Fatal("order.status_changed events")
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'inbound.receipt.failed'`) != 2 {
		t.Fatal("inbound.receipt.failed events for the 409 and 422")
	}
}

func TestOrderInvoiceAction(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionOrderInvoice, false)
	a := f.post(url, `{"order_ref": "SO-1", "invoice_ref": "INV-1", "amount_minor": 1000, "currency": "GBP"}`)
	if a.status != 200 || a.str("outcome") != "applied" || a.fields["invoice_status"] != "issued" {
		t.Fatalf("record: %d %s", a.status, a.raw)
	}
	if a := f.post(url, `{"order_ref": "SO-1", "invoice_ref": "INV-1", "invoice_status": "Paid"}`); a.status != 200 || a.changes()[0]["to"] != "paid" {
		t.Fatalf("status update: %d %s", a.status, a.raw)
	}
	if a := f.post(url, `{"order_ref": "SO-1", "invoice_ref": "INV-1", "invoice_status": "paid"}`); a.str("outcome") != "unchanged" {
		t.Fatalf("same status: %s", a.raw)
	}
	if f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1`) != 1 {
		t.Fatal("the invoice was recorded twice")
	}
	for body, want := range map[string]int{
		`{"order_ref": "SO-1", "invoice_ref": "INV-2", "invoice_status": "refunded"}`: 422,
		`{"order_ref": "SO-1", "invoice_ref": "INV-2", "currency": "EUR"}`:            422,
		`{"order_ref": "SO-1", "invoice_ref": "INV-2", "amount_minor": 999999}`:       422,
		`{"order_ref": "SO-1"}`: 400,
	} {
		if a := f.post(url, body); a.status != want {
			t.Errorf("%s: %d %s, want %d", body, a.status, a.raw, want)
		}
	}
}

func TestPurchaseOrderAckAction(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionPurchaseOrderAck, false)
	a := f.post(url, `{"po_number": "P-SENT", "supplier_ref": "SUP-88", "lines": [{"expected_date": "2026-12-01"}]}`)
	if a.status != 200 || len(a.changes()) != 3 {
		t.Fatalf("ack: %d %s", a.status, a.raw)
	}
	if f.one(`SELECT status || ' ' || supplier_ref || ' ' || expected_date::text FROM purchase_orders WHERE org_id = $1 AND number = 'P-SENT'`) != "acknowledged SUP-88 2026-12-01" {
		t.Fatal("acknowledgement not recorded")
	}
	// Acknowledging again updates the dates.
	if a := f.post(url, `{"po_number": "P-SENT", "lines": [{"position": 1, "expected_date": "2026-12-05"}]}`); a.status != 200 || len(a.changes()) != 1 {
		t.Fatalf("again: %d %s", a.status, a.raw)
	}
	for body, want := range map[string]int{
		`{"po_number": "P-REC"}`:  409,
		`{"po_number": "P-CANC"}`: 409,
		`{"po_number": "P-SENT", "lines": [{"expected_date": "next week"}]}`:                 400,
		`{"po_number": "P-SENT", "lines": [{"position": 9, "expected_date": "2026-12-09"}]}`: 422,
	} {
		if a := f.post(url, body); a.status != want {
			t.Errorf("%s: %d %s, want %d", body, a.status, a.raw, want)
		}
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'purchase_order.acknowledged'`) != 2 {
		t.Fatal("purchase_order.acknowledged events")
	}
}

func TestThreeWayMatch(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionSupplierInvoice, false)
	match := func(a answer) map[string]any {
		m, _ := a.fields["match"].(map[string]any)
		return m
	}
	// P-REC received 10 x 10.00 and 4 x 25.00: 200.00 expected.
	exact := f.post(url, `{"po_number": "P-REC", "invoice_ref": "S-1", "amount_minor": 20000, "invoiced_qty": 14}`)
	if exact.status != 200 || match(exact)["match_status"] != "matched" || len(match(exact)["variances"].([]any)) != 0 {
		t.Fatalf("exact: %d %s", exact.status, exact.raw)
	}
	within := f.post(url, `{"po_number": "P-REC", "invoice_ref": "S-2", "amount_minor": 20150}`) // 1.50 over 200.00: within max(1 %, 1.00) = 2.00
	if within.status != 200 || match(within)["match_status"] != "matched" {
		t.Fatalf("within tolerance: %d %s", within.status, within.raw)
	}
	over := f.post(url, `{"po_number": "P-REC", "invoice_ref": "S-3", "amount_minor": 21000}`)
	v := match(over)["variances"].([]any)
	if over.status != 200 || match(over)["match_status"] != "variance" || len(v) != 1 || v[0].(map[string]any)["kind"] != "amount" {
		t.Fatalf("over-invoiced: %d %s", over.status, over.raw)
	}
	qty := f.post(url, `{"po_number": "P-REC", "invoice_ref": "S-4", "invoiced_qty": [{"position": 1, "qty": 12}]}`)
	v = match(qty)["variances"].([]any)
	if qty.status != 200 || len(v) != 1 || v[0].(map[string]any)["kind"] != "quantity" || v[0].(map[string]any)["position"] != 1.0 {
		t.Fatalf("quantity above received: %d %s", qty.status, qty.raw)
	}
	// Nothing received yet: 202, and the match waits for a receipt.
	waiting := f.post(url, `{"po_number": "P-NONE", "invoice_ref": "S-5", "amount_minor": 3000, "invoiced_qty": 3}`)
	if waiting.status != 202 || match(waiting)["match_status"] != "awaiting_receipt" {
		t.Fatalf("nothing received: %d %s", waiting.status, waiting.raw)
	}
	f.seed(`{"goods_receipts": [{"po_number": "P-NONE", "received_at": "2026-11-22T08:00:00Z", "lines": [{"position": 1, "qty": 3}]}]}`)
	f.eventually("the waiting match completing on the receipt", func() bool {
		return f.one(`SELECT match_status FROM supplier_invoices WHERE org_id = $1 AND invoice_ref = 'S-5'`) == "matched"
	})
	for body, want := range map[string]int{
		`{"po_number": "P-REC", "invoice_ref": "S-1", "amount_minor": 20001}`:  422, // the same ref with another amount
		`{"po_number": "P-REC", "invoice_ref": "S-6", "currency": "EUR"}`:      422,
		`{"po_number": "P-CANC", "invoice_ref": "S-7"}`:                        409,
		`{"po_number": "P-REC", "invoice_ref": "S-8", "invoiced_qty": "lots"}`: 400,
	} {
		if a := f.post(url, body); a.status != want {
			t.Errorf("%s: %d %s, want %d", body, a.status, a.raw, want)
		}
	}
	// The same invoice again is no new invoice.
	if a := f.post(url, `{"po_number": "P-REC", "invoice_ref": "S-1", "amount_minor": 20000, "invoiced_qty": 14}`); a.status != 200 || a.str("outcome") != "unchanged" {
		t.Fatalf("repeat: %d %s", a.status, a.raw)
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'supplier_invoice.variance_raised'`) != 2 ||
		f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'supplier_invoice.matched'`) != 3 {
		t.Fatal("match events")
	}
}

func TestDeliveryStatusCascadesToTheOrder(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionDeliveryStatus, false)
	orderStatus := func() string { return f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-2'`) }
	// Two open deliveries: order_ref alone cannot say which.
	if a := f.post(url, `{"order_ref": "SO-2", "status": "shipped"}`); a.status != 422 || !strings.Contains(a.str("error"), "delivery_ref") {
		t.Fatalf("ambiguous: %d %s", a.status, a.raw)
	}
	a := f.post(url, `{"delivery_ref": "DN-1", "status": "shipped", "tracking_url": "https://track.example/dn1"}`)
	if a.status != 200 || orderStatus() != "in_progress" || len(a.changes()) != 3 {
		t.Fatalf("first dispatched: %d %s (order %s)", a.status, a.raw, orderStatus())
	}
	if f.one(`SELECT tracking_url FROM deliveries WHERE org_id = $1 AND number = 'DN-1'`) != "https://track.example/dn1" {
		t.Fatal("tracking address not stored")
	}
	if a := f.post(url, `{"consignment_ref": "CON-1", "status": "delivered"}`); a.status != 200 || orderStatus() != "in_progress" {
		t.Fatalf("one of two delivered: %d %s (order %s)", a.status, a.raw, orderStatus())
	}
	// The last delivery reaching delivered fulfils the order.
	a = f.post(url, `{"order_ref": "SO-2", "status": "Out for delivery"}`)
	if a.status != 200 {
		t.Fatalf("the only open delivery by order_ref: %d %s", a.status, a.raw)
	}
	a = f.post(url, `{"delivery_ref": "DN-2", "status": "delivered"}`)
	last := a.changes()[len(a.changes())-1]
	if a.status != 200 || orderStatus() != "fulfilled" || last["entity"] != "order" || last["to"] != "fulfilled" {
		t.Fatalf("last delivered: %d %s (order %s)", a.status, a.raw, orderStatus())
	}
	// A refused move answers 409 and changes nothing.
	if a := f.post(url, `{"delivery_ref": "DN-2", "status": "pending"}`); a.status != 409 {
		t.Fatalf("delivered back to pending: %d %s", a.status, a.raw)
	}
	if f.one(`SELECT status FROM deliveries WHERE org_id = $1 AND number = 'DN-2'`) != "delivered" || orderStatus() != "fulfilled" {
		t.Fatal("a refused move changed something")
	}
	if a := f.post(url, `{"delivery_ref": "DN-3", "status": "lost at sea"}`); a.status != 422 {
		t.Fatalf("unknown status: %d", a.status)
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'delivery.status_changed'`) != 4 {
		t.Fatal("delivery.status_changed events")
	}
}
