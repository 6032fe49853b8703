package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/commerce-integration/commerce/domain"
)

// TestConsoleFindsByReferenceAndShowsTheBulkSelection drives the receipts
// list and the bulk replay in a browser: a reference is found in any case
// and by its first characters, a receipt by the id its sender got in
// X-Receipt-Id; every row shows its references and a parked row what it
// waits for; the bulk form opened from a filtered list keeps its
// reference, shows how many receipts it selects and the first ten, and
// the finished batch lists every receipt it skipped, with the reason.
func TestConsoleFindsByReferenceAndShowsTheBulkSelection(t *testing.T) {
	f := newInbound(t)
	invoices, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	first := f.post(invoices, `{"order_ref": "SO-2026-0202", "invoice_ref": "INV-1", "amount_minor": 100}`)
	second := f.post(invoices, `{"order_ref": "SO-2026-0250", "invoice_ref": "INV-2", "amount_minor": 200}`)
	other := f.post(invoices, `{"order_ref": "PO-77", "invoice_ref": "INV-3", "amount_minor": 300}`)
	for _, p := range []answer{first, second, other} {
		if p.str("outcome") != "parked" || p.receipt == "" {
			t.Fatalf("a post for an order not there yet: %d %s", p.status, p.raw)
		}
	}
	b := newBrowser(t, f.srv.URL)()
	f.signIn(b, "owner@acme.example")

	rows := func() []string {
		var ids []string
		b.Run("read the rows", chromedp.Evaluate(`[...document.querySelectorAll('a.receipt-link')].map(a => a.dataset.id)`, &ids))
		return ids
	}
	for _, c := range []struct {
		ref  string
		want []string
	}{
		{"so-2026-0202", []string{first.receipt}},            // another case
		{"SO-2026", []string{second.receipt, first.receipt}}, // a prefix, newest first
		{"SO", nil}, // under three characters: whole references only
		{second.receipt, []string{second.receipt}}, // the id X-Receipt-Id gave
		{"2026-0202", nil},                         // not text anywhere in the body
		{"inv-3", []string{other.receipt}},         // an invoice reference
	} {
		b.Open("/console/receipts?ref=" + c.ref)
		if got := rows(); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("ref %q lists %v, want %v", c.ref, got, c.want)
		}
	}

	// The row shows its references, each a link to the receipts naming it,
	// and what a parked post waits for.
	b.Open("/console/receipts?ref=INV-1")
	row := b.Text("main table tbody tr")
	if !strings.Contains(row, "SO-2026-0202") || !strings.Contains(row, "INV-1") || !strings.Contains(row, "waits for") {
		t.Fatalf("the row shows %q; want its references and what it waits for", row)
	}
	b.Click(`td.refs a.ref`)
	if got := rows(); len(got) != 1 || got[0] != first.receipt {
		t.Fatalf("the reference's link lists %v, want the receipt that names it", got)
	}
	b.Open("/console/receipts/" + first.receipt)
	if got := b.Text("#refs"); got != "SO-2026-0202, INV-1" {
		t.Fatalf("the receipt's references read %q", got)
	}

	// The bulk form from a list filtered by reference keeps the reference,
	// and shows what it selects before anything starts.
	b.Open("/console/receipts?outcome=parked&ref=SO-2026&endpoint=" + epID)
	b.Click("#bulk-link")
	var ref string
	b.Run("read the bulk form's reference", chromedp.Evaluate(`document.querySelector('input[name=ref]').value`, &ref))
	if ref != "SO-2026" {
		t.Fatalf("the bulk form opened with reference %q, want the list's SO-2026", ref)
	}
	if got := b.Text("#selection-count"); got != "2" {
		t.Fatalf("the bulk form says the filters select %q receipts, want 2", got)
	}
	var shown int
	b.Run("count the first ten", chromedp.Evaluate(`document.querySelectorAll('#selection-first tbody tr').length`, &shown))
	if shown != 2 {
		t.Fatalf("the bulk form lists %d receipts, want the 2 selected", shown)
	}
	// A paused endpoint: the replay rules skip each receipt, and the
	// finished batch says which and why.
	if _, err := f.DB.SetEndpointState(context.Background(), f.org.ID, mustID(t, epID), domain.EndpointPaused); err != nil {
		t.Fatal(err)
	}
	b.Click("#start-bulk")
	if got := b.Text("#confirm-question"); !strings.Contains(got, "the 2 receipt(s)") || !strings.Contains(got, `"SO-2026"`) {
		t.Fatalf("the confirmation asks %q", got)
	}
	if got := b.Text("#selection-count"); got != "2" {
		t.Fatalf("the confirmation says %q receipts, want 2", got)
	}
	b.Click("#confirm")
	f.eventually("the batch finishes", func() bool {
		return f.count(`SELECT count(*) FROM replay_batches WHERE org_id = $1 AND status = 'completed'`) == 1
	})
	var url string
	b.Run("read the batch's address", chromedp.Location(&url))
	b.Open(strings.TrimPrefix(url, f.srv.URL))
	table := b.Text("#batch-problems")
	for _, want := range []string{"SO-2026-0202", "SO-2026-0250", "skipped", "paused"} {
		if !strings.Contains(table, want) {
			t.Errorf("the finished batch's list of receipts not replayed lacks %q: %q", want, table)
		}
	}
}
