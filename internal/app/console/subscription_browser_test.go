package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// A subscription's page holds its shape with a 500-character URL whose
// query is never shown, a 2 KB last error, and a day of figures: at 1280
// and 390 px it is no wider than the screen and passes axe-core; its
// charts fit, and its backlog links open the filtered list.
func TestSubscriptionPageHoldsItsShapeWithLongValues(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	long := "https://erp.example.com/" + strings.Repeat("hooks/", 70) + "in?token=s3cret-receiver-token"
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: long})
	if err != nil {
		t.Fatal(err)
	}
	f.seedSubscriptionPage(sub.ID)
	if _, err := f.d.Pool().Exec(ctx, `UPDATE webhook_subscriptions SET last_failure_error = $3 WHERE org_id = $1 AND id = $2`,
		f.org.ID, sub.ID, strings.Repeat("ErrorWithoutAnySpace", 100)); err != nil {
		t.Fatal(err)
	}
	path := "/console/webhooks/" + sub.ID.String()
	for _, width := range []int{1280, 390} {
		b := f.newTab(0)
		if width < 720 {
			b.Phone(width, 844)
		} else {
			b.Run("a desktop screen", emulation.SetDeviceMetricsOverride(int64(width), 900, 1, false))
			b.Screen = width
		}
		f.signInTab(b, "owner@acme.example")
		if status := b.Open(path); status != 200 {
			t.Fatalf("%d px: the subscription's page: %d", width, status)
		}
		if width == 1280 {
			b.Screenshot("subscription")
		}
		var html string
		b.Eval("the page's markup", `document.documentElement.outerHTML`, &html)
		if strings.Contains(html, "s3cret") {
			t.Errorf("%d px: the subscription's page shows the URL's query", width)
		}
		if chart := b.Box("svg.chart"); chart.Right > float64(width) || chart.Right-chart.Left < 100 {
			t.Errorf("%d px: the chart spans %.0f to %.0f", width, chart.Left, chart.Right)
		}
		if status := b.Click(`#subscription-backlog a[href$="status=held"]`); status != 200 {
			t.Fatalf("%d px: the held deliveries: %d", width, status)
		}
		var held int
		b.Eval("count the listed deliveries", `document.querySelectorAll('tbody tr .w-held').length`, &held)
		if held != 1 {
			t.Errorf("%d px: the held link lists %d held deliveries", width, held)
		}
	}
}
