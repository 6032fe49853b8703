package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	guuid "github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// A failed receipt whose replay applied reads resolved, with a link to
// the replay, on its page and in the list; the list of failures leaves it
// out unless the Resolved filter asks for it. A failed delivery a resend
// then delivered reads resolved on its page and in the deliveries list.
// At 1280 and 390 px, every page passes axe-core and fits the screen.
func TestResolvedFailuresReadResolvedInTheConsole(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	original := guuid.MustParse(f.receipt)
	endpoint := guuid.MustParse(f.endpoint)
	body := []byte(`{"order_ref": "SO-9", "invoice_ref": "INV-9", "amount_minor": 123456}`)
	replay, _, err := f.d.StoreReplay(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: endpoint, Action: domain.ActionOrderInvoice,
		ReceivedAt: time.Now(), Body: body, Size: len(body), BodyComplete: true, ReplayOf: &original})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.UpdateReceipt(ctx, f.org.ID, replay, db.ReceiptUpdate{Outcome: domain.OutcomeApplied}); err != nil {
		t.Fatal(err)
	}
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://erp.example.com/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	var delivery string
	if err := f.d.Pool().QueryRow(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', '{}') RETURNING id)
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, last_status_code, resent_by, resolved_by, resolved_at)
		SELECT gen_random_uuid(), $1, e.id, $2, 'succeeded', 6, 200, 'resend', 'resend', now() FROM e RETURNING id::text`,
		f.org.ID, sub.ID).Scan(&delivery); err != nil {
		t.Fatal(err)
	}

	for _, width := range []int{1280, 390} {
		b := f.newTab(0)
		if width < 720 {
			b.Phone(width, 844)
		} else {
			b.Run("a desktop screen", emulation.SetDeviceMetricsOverride(int64(width), 900, 1, false))
			b.Screen = width
		}
		f.signInTab(b, "owner@acme.example")

		if status := b.Open("/console/receipts?outcome=failed"); status != 200 {
			t.Fatalf("%d px: the failures list answered %d", width, status)
		}
		if b.Present(`a[data-id="` + f.receipt + `"]`) {
			t.Errorf("%d px: the failures list shows a receipt its replay resolved", width)
		}
		if status := b.Open("/console/receipts?outcome=failed&resolved=true"); status != 200 {
			t.Fatalf("%d px: the resolved failures answered %d", width, status)
		}
		if !b.Present(`a[data-id="`+f.receipt+`"]`) || !b.Present(`a.badge.resolved[href="/console/receipts/`+replay.String()+`"]`) {
			t.Errorf("%d px: the resolved failures do not show the receipt resolved, linking to its replay", width)
		}
		if status := b.Open("/console/receipts/" + f.receipt); status != 200 {
			t.Fatalf("%d px: the receipt answered %d", width, status)
		}
		if got := b.Text("#resolution"); !strings.Contains(got, "by the replay "+replay.String()) {
			t.Errorf("%d px: the receipt's resolution reads %q", width, got)
		}
		if status := b.Click("#resolved-by"); status != 200 || b.Text("#receipt-id") != replay.String() {
			t.Errorf("%d px: the resolution's link led to %q (%d), want the replay", width, b.Text("#receipt-id"), status)
		}

		if status := b.Open("/console/deliveries/" + delivery); status != 200 {
			t.Fatalf("%d px: the delivery answered %d", width, status)
		}
		if got := b.Text("#resolution"); !strings.Contains(got, "by a resend") {
			t.Errorf("%d px: the delivery's resolution reads %q", width, got)
		}
		if status := b.Open("/console/deliveries"); status != 200 || !b.Present(".badge.resolved") {
			t.Errorf("%d px: the deliveries list (%d) does not mark the resolved delivery", width, status)
		}
		if status := b.Open("/console/deliveries?resolved=false"); status != 200 || b.Present(".badge.resolved") {
			t.Errorf("%d px: the unresolved deliveries (%d) show the resolved one", width, status)
		}
		if status := b.Open("/console/replays/new?outcome=failed"); status != 200 || !b.Present(`input[name="include_resolved"]`) {
			t.Errorf("%d px: the bulk replay form (%d) offers no way to take resolved receipts", width, status)
		}
	}
}
