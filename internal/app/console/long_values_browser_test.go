package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Long values hold the pages' shape: a receiver's 1.5 KB answer without a
// space, the same error, and a 500-character subscription URL whose query
// carries the receiver's token. At 1280 and 390 px no page is wider than
// the screen, the error column stays readable, the answer scrolls in a box
// the keyboard reaches (axe-core runs on every page), and the URL's query
// is shown nowhere in the lists, the filter or the delivery's page.
func TestLongValuesHoldThePagesShape(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	long := "https://erp.example.com/" + strings.Repeat("hooks/", 70) + "in?token=s3cret-receiver-token&x=" + strings.Repeat("y", 20)
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: long})
	if err != nil {
		t.Fatal(err)
	}
	word := strings.Repeat("ErrorWithoutAnySpace", 75) // 1,500 characters
	var delivery string
	if err := f.d.Pool().QueryRow(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', '{}') RETURNING id),
		d AS (INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, last_status_code, last_error)
		      SELECT gen_random_uuid(), $1, e.id, $2, 'failed', 1, 500, $3 FROM e RETURNING id)
		INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
		SELECT gen_random_uuid(), $1, d.id, 1, now(), 120, 500, $3, $3 FROM d RETURNING delivery_id::text`,
		f.org.ID, sub.ID, word).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	pages := []string{"/console/deliveries", "/console/deliveries/" + delivery, "/console/webhooks"}
	for _, width := range []int{1280, 390} {
		b := f.newTab(0)
		if width < 720 {
			b.Phone(width, 844)
		} else {
			b.Run("a desktop screen", emulation.SetDeviceMetricsOverride(int64(width), 900, 1, false))
			b.Screen = width
		}
		f.signInTab(b, "owner@acme.example")
		for _, page := range pages {
			if status := b.Open(page); status != 200 {
				t.Fatalf("%d px, %s: %d", width, page, status)
			}
			var html string
			b.Eval("the page's markup", `document.documentElement.outerHTML`, &html)
			if strings.Contains(html, "s3cret") {
				t.Errorf("%d px, %s shows the URL's query", width, page)
			}
		}
		b.Open("/console/deliveries/" + delivery)
		errCell := b.Box("#attempts tr td.wrap")
		if w := errCell.Right - errCell.Left; w < 100 {
			t.Errorf("%d px: the error column is %.0f px wide", width, w)
		}
		if got := b.Text("#attempts pre.answer"); !strings.HasPrefix(got, "ErrorWithoutAnySpace") {
			t.Errorf("%d px: the answer shows %.40q", width, got)
		}
	}
}
