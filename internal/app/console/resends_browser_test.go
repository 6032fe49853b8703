package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// The bulk resend form, opened from a filtered deliveries list, shows how
// many failed or exhausted deliveries the filters select and the first
// ten, oldest first; Start asks for confirmation showing them again. A
// bulk resend's page reports what it did, and the page of past bulk
// actions lists bulk replays and resends, each linked to its report. At
// 1280 and 390 px every page passes axe-core and fits the screen.
func TestBulkResendPagesShowTheSelectionAndTheReports(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://erp.example.com/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	// 12 failed deliveries, 2 exhausted, 3 succeeded.
	for status, n := range map[string]int{"failed": 12, "exhausted": 2, "succeeded": 3} {
		if _, err := f.d.Pool().Exec(ctx, `
			WITH e AS (INSERT INTO events (id, org_id, type, data, created_at)
			           SELECT gen_random_uuid(), $1, 'customer.created', '{}', now() - make_interval(mins => g) FROM generate_series(1, $4) g
			           RETURNING id, created_at)
			INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, last_status_code, last_error, created_at)
			SELECT gen_random_uuid(), $1, e.id, $2, $3, 5, 503, 'Service Unavailable', e.created_at FROM e`,
			f.org.ID, sub.ID, status, n); err != nil {
			t.Fatal(err)
		}
	}
	// A past bulk resend of the exhausted ones, and a bulk replay.
	resend, total, err := f.d.CreateResendBatch(ctx, db.NewResendBatch{OrgID: f.org.ID, Statuses: []domain.WebhookStatus{domain.WebhookExhausted}, CreatedBy: "console:owner@acme.example"})
	if err != nil || total != 2 {
		t.Fatalf("recording a bulk resend: %d %v", total, err)
	}
	why := "not resent: it is succeeded now"
	if err := f.d.FinishResendItem(ctx, f.org.ID, resend, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.d.FinishResendItem(ctx, f.org.ID, resend, 2, &why); err != nil {
		t.Fatal(err)
	}
	if err := f.d.EndResendBatch(ctx, f.org.ID, resend); err != nil {
		t.Fatal(err)
	}
	replay, _, err := f.d.CreateReplayBatch(ctx, db.NewReplayBatch{OrgID: f.org.ID, Outcomes: []domain.Outcome{domain.OutcomeFailed}, CreatedBy: "console:owner@acme.example"})
	if err != nil {
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
		if status := b.Open("/console/deliveries?status=failed&subscription=" + sub.ID.String()); status != 200 {
			t.Fatalf("%d px: deliveries answered %d", width, status)
		}
		if status := b.Click("#resend-link"); status != 200 {
			t.Fatalf("%d px: the bulk resend link answered %d", width, status)
		}
		if got := b.Text("#selection-count"); got != "12" {
			t.Errorf("%d px: the form says the filters select %q, want the 12 failed", width, got)
		}
		var rows int
		b.Eval("count the first rows", `document.querySelectorAll("#selection-first tbody tr").length`, &rows)
		if rows != 10 {
			t.Errorf("%d px: the form lists %d deliveries, want the first 10", width, rows)
		}
		if status := b.Click("#start-resend"); status != 200 || !strings.Contains(b.Text("#confirm-question"), "Resend the 12 delivery(ies)") ||
			b.Text("#selection-count") != "12" {
			t.Errorf("%d px: Start answered %d asking %q", width, status, b.Text("#confirm-question"))
		}

		if status := b.Open("/console/resends/" + resend.String()); status != 200 {
			t.Fatalf("%d px: the bulk resend's page answered %d", width, status)
		}
		if width == 1280 {
			b.Screenshot("bulk-resend-report")
		}
		if b.Text("#resend-total") != "2" || b.Text("#resend-resent") != "1" || b.Text("#resend-not-resent") != "1" ||
			!strings.Contains(b.Text("#resend-problems"), why) {
			t.Errorf("%d px: the report reads total %s, resent %s, not resent %s, problems %q", width,
				b.Text("#resend-total"), b.Text("#resend-resent"), b.Text("#resend-not-resent"), b.Text("#resend-problems"))
		}
		if status := b.Open("/console/bulk"); status != 200 {
			t.Fatalf("%d px: the past bulk actions answered %d", width, status)
		}
		if width == 1280 {
			b.Screenshot("bulk-actions")
		}
		if !b.Present(`#bulk-resends a[href="/console/resends/`+resend.String()+`"]`) || !b.Present(`#bulk-replays a[href="/console/replays/`+replay.String()+`"]`) {
			t.Errorf("%d px: the past bulk actions do not link the bulk resend and the bulk replay", width)
		}
	}
}
