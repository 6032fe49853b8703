package domain

import (
	"errors"
	"strings"
	"testing"
)

func TestParseInboundAcceptsEachActionsShape(t *testing.T) {
	for action, body := range map[Action]string{
		ActionCreateRequest:    `{"text": "  Need 5 bolts\nsoon ", "customer": {"company": "B", "email": "a@b.example"}, "external_ref": " CRM-1 "}`,
		ActionUpsertCustomers:  `{"customers": [{"company": "B", "external_id": "E1"}]}`,
		ActionUpsertProducts:   `{"products": [{"sku": "S", "title": "T"}]}`,
		ActionERPOrderStatus:   `{"quote_ref": "Q-1", "status": "Shipped", "tracking_url": "https://t.example/1"}`,
		ActionOrderInvoice:     `{"order_ref": "SO-1", "invoice_ref": "I-1", "amount_minor": 0, "currency": "GBP", "invoice_status": "paid"}`,
		ActionPurchaseOrderAck: `{"po_number": "P-1", "lines": [{"position": 2, "expected_date": "2026-12-01"}]}`,
		ActionSupplierInvoice:  `{"po_number": "P-1", "invoice_ref": "S-1", "invoiced_qty": [{"position": 1, "qty": 2.5}]}`,
		ActionDeliveryStatus:   `{"consignment_ref": "C-1", "status": "out for delivery"}`,
	} {
		if _, err := ParseInbound(action, []byte(body)); err != nil {
			t.Errorf("%s: %v", action, err)
		}
	}
	b, _ := ParseInbound(ActionCreateRequest, []byte(`{"text": "  Need 5 bolts\nsoon ", "external_ref": " CRM-1 "}`))
	if r := b.(CreateRequestBody); r.Title != "Need 5 bolts" || *r.ExternalRef != "CRM-1" {
		t.Fatalf("create_request normalised to %+v", r)
	}
	p, _ := ParseInbound(ActionPurchaseOrderAck, []byte(`{"po_number": " P-1 ", "lines": [{"expected_date": "2026-12-01"}]}`))
	if a := p.(POAckBody); a.PONumber != "P-1" || a.Lines[0].Date.String() != "2026-12-01" {
		t.Fatalf("purchase_order_ack parsed to %+v", a)
	}
}

func TestParseInboundNamesTheProblem(t *testing.T) {
	for _, c := range []struct {
		action Action
		body   string
		code   Code
		names  string
	}{
		{ActionCreateRequest, `[]`, EINVALID, "JSON object"},
		{ActionCreateRequest, `{"text": ""}`, EINVALID, "text"},
		{ActionCreateRequest, `{"text": "x", "customer": {"email": "nope"}}`, EINVALID, "customer.email"},
		{ActionCreateRequest, `{"text": "x"} {"text": "y"}`, EINVALID, "one JSON object"},
		{ActionUpsertCustomers, `{}`, EINVALID, "customers is required"},
		{ActionUpsertCustomers, `{"customers": [{"company": "A"}], "extra": 1}`, EINVALID, `"extra"`},
		{ActionUpsertCustomers, `{"customers": [` + strings.Repeat(`{"company": "A"},`, 500) + `{"company": "A"}]}`, ETOOLARGE, "500"},
		{ActionUpsertProducts, `{"products": [` + strings.Repeat(`{"sku": "A"},`, 1000) + `{"sku": "A"}]}`, ETOOLARGE, "1000"},
		{ActionERPOrderStatus, `{"status": "open"}`, EINVALID, "order_ref or quote_ref"},
		{ActionERPOrderStatus, `{"order_ref": "SO-1", "status": " "}`, EINVALID, "status"},
		{ActionERPOrderStatus, `{"order_ref": "SO-1\u0000", "status": "open"}`, EINVALID, "NUL"},
		{ActionOrderInvoice, `{"order_ref": "SO-1", "invoice_ref": "I", "amount_minor": -1}`, EINVALID, "amount_minor"},
		{ActionOrderInvoice, `{"order_ref": "SO-1", "invoice_ref": "I", "amount_minor": 1.5}`, EINVALID, "amount_minor"},
		{ActionPurchaseOrderAck, `{"po_number": "P", "lines": [{"expected_date": "soon"}]}`, EINVALID, "lines[0].expected_date"},
		{ActionSupplierInvoice, `{"po_number": "P"}`, EINVALID, "invoice_ref"},
		{ActionSupplierInvoice, `{"po_number": "P", "invoice_ref": "S", "invoiced_qty": -2}`, EINVALID, "invoiced_qty"},
		{ActionSupplierInvoice, `{"po_number": "P", "invoice_ref": "S", "invoiced_qty": [{"position": 1, "qty": 1}, {"position": 1, "qty": 1}]}`, EINVALID, "invoiced_qty[1]"},
		{ActionDeliveryStatus, `{"status": "shipped"}`, EINVALID, "delivery_ref, consignment_ref or order_ref"},
		{ActionDeliveryStatus, `{"delivery_ref": "` + strings.Repeat("d", 501) + `", "status": "shipped"}`, EINVALID, "500 characters"},
	} {
		_, err := ParseInbound(c.action, []byte(c.body))
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || !strings.Contains(e.Message, c.names) {
			t.Errorf("%s %.80s: %v, want %s naming %q", c.action, c.body, err, c.code, c.names)
		}
	}
}

func TestMatchInvoice(t *testing.T) {
	// 10 x 10.00 and 4 x 25.00 received: 200.00 expected, 14 units.
	lines := []MatchLine{{Position: 1, UnitPriceMinor: 1000, QtyReceived: 10}, {Position: 2, UnitPriceMinor: 2500, QtyReceived: 4}}
	amount := func(v int64) *int64 { return &v }
	total := func(v float64) *InvoicedQty { return &InvoicedQty{Total: &v} }
	kinds := func(vs []Variance) string {
		var k []string
		for _, v := range vs {
			k = append(k, string(v.Kind))
		}
		return strings.Join(k, ",")
	}
	for _, c := range []struct {
		name   string
		amount *int64
		qty    *InvoicedQty
		tol    Tolerances
		want   string
	}{
		{"exact", amount(20000), total(14), DefaultTolerances, ""},
		{"nothing to compare", nil, nil, DefaultTolerances, ""},
		{"within 1 %", amount(20200), nil, DefaultTolerances, ""},
		{"beyond 1 %", amount(20201), nil, DefaultTolerances, "amount"},
		{"under-invoiced beyond 1 %", amount(19799), nil, DefaultTolerances, "amount"},
		{"percentage wider than the floor", amount(21000), nil, Tolerances{AmountPct: 5, AmountMinor: 100}, ""},
		{"quantity above received", nil, total(15), DefaultTolerances, "quantity"},
		{"quantity within its tolerance", nil, total(15), Tolerances{Qty: 1, AmountMinor: 100}, ""},
		{"a line above received", nil, &InvoicedQty{ByLine: []POReceiptLine{{Position: 1, Qty: 10}, {Position: 2, Qty: 5}}}, DefaultTolerances, "quantity"},
		{"a line never ordered", nil, &InvoicedQty{ByLine: []POReceiptLine{{Position: 3, Qty: 1}}}, DefaultTolerances, "quantity"},
		{"both", amount(30000), total(20), DefaultTolerances, "quantity,amount"},
	} {
		vs, received := MatchInvoice(lines, c.amount, c.qty, c.tol)
		if !received || kinds(vs) != c.want {
			t.Errorf("%s: variances %q (received %v), want %q", c.name, kinds(vs), received, c.want)
		}
	}
	vs, _ := MatchInvoice(lines, nil, &InvoicedQty{ByLine: []POReceiptLine{{Position: 2, Qty: 5}}}, DefaultTolerances)
	if len(vs) != 1 || *vs[0].Position != 2 || *vs[0].Expected != 4 || *vs[0].Actual != 5 {
		t.Fatalf("line variance %+v", vs)
	}
	// On a small invoice the 1.00 floor is wider than 1 %.
	small := []MatchLine{{Position: 1, UnitPriceMinor: 1000, QtyReceived: 1}}
	if vs, _ := MatchInvoice(small, amount(1100), nil, DefaultTolerances); len(vs) != 0 {
		t.Fatalf("1.00 over 10.00: %+v", vs)
	}
	if vs, _ := MatchInvoice(small, amount(1101), nil, DefaultTolerances); kinds(vs) != "amount" {
		t.Fatalf("1.01 over 10.00: %+v", vs)
	}
	if _, received := MatchInvoice([]MatchLine{{Position: 1, UnitPriceMinor: 1000}}, amount(1000), nil, DefaultTolerances); received {
		t.Fatal("nothing received must wait for a receipt, not match")
	}
}

// FuzzParseInbound: whatever is posted, the parser answers a value or a 400
// (EINVALID) or 413 (ETOOLARGE) error, and never panics.
func FuzzParseInbound(f *testing.F) {
	for _, seed := range []string{
		`{"text": "hi"}`, `{"customers": [{"company": "A"}]}`, `{"products": [{"sku": "S"}]}`,
		`{"order_ref": "SO-1", "status": "open"}`, `{"order_ref": "SO-1", "invoice_ref": "I", "amount_minor": 1}`,
		`{"po_number": "P", "lines": [{"expected_date": "2026-01-01"}]}`,
		`{"po_number": "P", "invoice_ref": "S", "invoiced_qty": [{"position": 1, "qty": 1}]}`,
		`{"delivery_ref": "D", "status": "shipped"}`, `[]`, `null`, `{"a": {"b": [1, 2, {"c": "\u0000"}]}}`,
	} {
		for i := range Actions {
			f.Add(i, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, i int, body []byte) {
		action := Actions[(i%len(Actions)+len(Actions))%len(Actions)]
		v, err := ParseInbound(action, body)
		if err == nil {
			if v == nil {
				t.Fatalf("%s: no value and no error", action)
			}
			return
		}
		if c := ErrorCode(err); c != EINVALID && c != ETOOLARGE {
			t.Fatalf("%s %q: error %v of kind %s", action, body, err, c)
		}
	})
}

// A body that is not JSON is refused in plain words, naming where, never
// with the decoder's own wording.
func TestABodyThatIsNotJSONIsRefusedInPlainWords(t *testing.T) {
	for body, want := range map[string]string{
		`{"order_ref": nul}`: "the body is not valid JSON: a character at byte 18 cannot be read there",
		`{"order_ref": "SO`:  "the body is not valid JSON: it ends before its value does",
	} {
		_, err := ParseInbound(ActionERPOrderStatus, []byte(body))
		if ErrorCode(err) != EINVALID || ErrorMessage(err) != want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
		if strings.Contains(ErrorMessage(err), "invalid character") || strings.Contains(ErrorMessage(err), "literal") {
			t.Errorf("%s: the decoder's wording leaks: %q", body, ErrorMessage(err))
		}
	}
}
