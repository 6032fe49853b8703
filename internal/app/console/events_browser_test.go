package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// An event's page holds its shape with long values: a 500-character
// reference as what the event is about and in its payload, and a
// 500-character subscription URL whose query is never shown. At 1280 and
// 390 px it is no wider than the screen and passes axe-core; the receipt
// that caused it is one click away.
func TestEventPageHoldsItsShapeWithLongValues(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	long := "https://erp.example.com/" + strings.Repeat("hooks/", 70) + "in?token=s3cret-receiver-token"
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: long})
	if err != nil {
		t.Fatal(err)
	}
	ref := "SO-" + strings.Repeat("LONGREFERENCE", 38) // 497 characters
	var event string
	if err := f.d.Pool().QueryRow(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data, receipt_id, entity_type, entity_id)
		           VALUES (gen_random_uuid(), $1, 'order.invoiced', jsonb_build_object('order_ref', $3::text), $4::uuid, 'order', $3) RETURNING id)
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, last_status_code, last_error)
		SELECT gen_random_uuid(), $1, e.id, $2, 'failed', 1, 500, $5 FROM e RETURNING event_id::text`,
		f.org.ID, sub.ID, ref, f.receipt, strings.Repeat("ErrorWithoutAnySpace", 75)).Scan(&event); err != nil {
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
		if status := b.Open("/console/events/" + event); status != 200 {
			t.Fatalf("%d px: the event's page: %d", width, status)
		}
		if width == 1280 {
			b.Screenshot("event")
		}
		var html string
		b.Eval("the page's markup", `document.documentElement.outerHTML`, &html)
		if strings.Contains(html, "s3cret") {
			t.Errorf("%d px: the event's page shows the URL's query", width)
		}
		if got := b.Text("#event-entity"); !strings.Contains(got, ref) {
			t.Errorf("%d px: the entity reads %.60q", width, got)
		}
		if got := b.Text("#event-receipt"); got != "order_invoice post SO-9" {
			t.Errorf("%d px: the event's cause reads %q, want its post's name", width, got)
		}
		if status := b.Click("#event-receipt"); status != 200 {
			t.Fatalf("%d px: the receipt that caused the event: %d", width, status)
		}
		if got := b.Text("#receipt-id"); got != f.receipt {
			t.Errorf("%d px: the link led to receipt %q", width, got)
		}
	}
}
