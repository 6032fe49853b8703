package console_test

import (
	"context"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Every page the console links to, reached by following its links from
// the first page, holds its shape with long values seeded where a page
// shows them (a receiver's 2 KB answer without a space, a 500-character
// subscription URL, the longest reference a receipt keeps, a 500-character
// value in a posted body and its error, a 200-character endpoint name): at
// 1280 px and on a 390 px phone axe-core finds nothing and no page scrolls
// sideways (browsertest checks both on every page opened).
func TestEveryPageHoldsItsShapeWithLongValues(t *testing.T) {
	f := newFixture(t)
	seedLongValues(t, f)
	for _, width := range []int{1280, 390} {
		b := f.newTab(0)
		if width < 720 {
			b.Phone(width, 844)
		} else {
			b.Run("a desktop screen", emulation.SetDeviceMetricsOverride(int64(width), 900, 1, false))
			b.Screen = width
		}
		f.signInTab(b, "owner@acme.example")
		queue := []string{"/console/"}
		seen := map[string]bool{pageKind(queue[0]): true}
		var walked []string
		for len(queue) > 0 && len(walked) < 80 {
			page := queue[0]
			queue = queue[1:]
			if status := b.Open(page); status != 200 {
				t.Errorf("%d px: %s answered %d", width, page, status)
				continue
			}
			walked = append(walked, page)
			var links []string
			b.Eval("the page's links", `[...document.querySelectorAll("a[href]")].map(a => a.getAttribute("href"))`, &links)
			for _, l := range links {
				if p, ok := walkable(l); ok && !seen[pageKind(p)] {
					seen[pageKind(p)] = true
					queue = append(queue, p)
				}
			}
		}
		slices.Sort(walked)
		t.Logf("%d px: %d pages: %s", width, len(walked), strings.Join(walked, " "))
		// The pages a support person lands on are among them.
		for _, want := range []string{"/console/receipts", "/console/deliveries", "/console/webhooks", "/console/audit", "/console/replays/"} {
			if !slices.ContainsFunc(walked, func(p string) bool { return strings.HasPrefix(p, want) }) {
				t.Errorf("%d px: the walk never reached %s", width, want)
			}
		}
	}
}

// walkable says whether href is a console page to walk to, and its path:
// a GET link within the console, not one that signs out or leaves it.
func walkable(href string) (string, bool) {
	u, err := url.Parse(href)
	if err != nil || u.IsAbs() || !strings.HasPrefix(u.Path, "/console/") {
		return "", false
	}
	for _, skip := range []string{"/console/login", "/console/logout", "/console/sign-out", "/console/static/"} {
		if strings.HasPrefix(u.Path, skip) {
			return "", false
		}
	}
	return u.RequestURI(), true
}

var idInPath = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// pageKind is what makes two links the same page for the walk: the path
// with its ids replaced, and the names of its query's parameters.
func pageKind(p string) string {
	u, _ := url.Parse(p)
	keys := make([]string, 0, len(u.Query()))
	for k := range u.Query() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return idInPath.ReplaceAllString(u.Path, ":id") + "?" + strings.Join(keys, "&")
}

// seedLongValues gives the fixture's organisation the longest values its
// pages show.
func seedLongValues(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	long := "https://erp.example.com/" + strings.Repeat("hooks/", 70) + "in?token=s3cret&x=" + strings.Repeat("y", 40)
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: long})
	if err != nil {
		t.Fatal(err)
	}
	answer := strings.Repeat("AnswerWithoutAnySpace", 100) // 2,100 characters
	if _, err := f.d.Pool().Exec(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', jsonb_build_object('company', $3::text)) RETURNING id),
		d AS (INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, last_status_code, last_error)
		      SELECT gen_random_uuid(), $1, e.id, $2, 'failed', 1, 500, $3 FROM e RETURNING id)
		INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
		SELECT gen_random_uuid(), $1, d.id, 1, now(), 120, 500, $3, $3 FROM d`, f.org.ID, sub.ID, answer); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("Endpoint name ", 15)[:200]
	e, err := f.d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: f.org.ID, AsEmail: "owner@acme.example", Name: name, Action: domain.ActionOrderInvoice})
	if err != nil {
		t.Fatal(err)
	}
	ref := "SO-" + strings.Repeat("0", domain.MaxRefLength-3)
	value := strings.Repeat("V", 500)
	body := `{"order_ref": "` + ref + `", "invoice_ref": "` + value + `", "amount_minor": 1}`
	if _, err := f.d.Pool().Exec(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code, error)
		VALUES (gen_random_uuid(), $1, $2, 'order_invoice', now() - interval '1 minute', convert_to($3, 'UTF8'), length($3), 'inbound/y',
		        'failed', 422, 'invoice ' || $4 || ' is not valid')`, f.org.ID, e.ID, body, value); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.BackfillReceiptRefs(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	key, _, err := f.d.CreateAPIKey(ctx, f.org.ID, strings.Repeat("k", 200), []domain.Scope{domain.ScopeProductsRead})
	if err != nil {
		t.Fatal(err)
	}
	// A bulk replay of the failed receipts, and the audit log naming it,
	// the endpoint and the subscription, written with the long-named key:
	// the walk reaches the bulk replay's page from the log.
	batch, _, err := f.d.CreateReplayBatch(ctx, db.NewReplayBatch{OrgID: f.org.ID, Outcomes: []domain.Outcome{domain.OutcomeFailed},
		CreatedBy: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []db.NewAuditEntry{
		{TargetType: "replay_batch", TargetID: batch.String(), Action: "replay_batch.start"},
		{TargetType: "endpoint", TargetID: e.ID.String(), Action: "endpoint.create"},
		{TargetType: "subscription", TargetID: sub.ID.String(), Action: "subscription.create"},
	} {
		e.OrgID, e.Actor = f.org.ID, "key:"+key.ID.String()
		if err := f.d.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// A receipt's trace names each delivery's receiver (without its path's
// query), not the subscription's id.
func TestAReceiptsTraceNamesEachDeliverysReceiver(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	sub, err := f.d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://erp.example.com/hooks?token=s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Pool().Exec(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data, receipt_id) VALUES (gen_random_uuid(), $1, 'order.invoice_recorded', '{}', $3) RETURNING id)
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts)
		SELECT gen_random_uuid(), $1, e.id, $2, 'succeeded', 1 FROM e`, f.org.ID, sub.ID, f.receipt); err != nil {
		t.Fatal(err)
	}
	owner, _ := f.signIn("owner@acme.example")
	status, page := owner.get("/console/receipts/" + f.receipt)
	if status != 200 || !strings.Contains(page, `delivery</span></a> to <span class="wrap">https://erp.example.com/hooks?…</span>, 1 attempt(s)`) ||
		strings.Contains(page, "s3cret") || strings.Contains(page, sub.ID.String()) {
		t.Fatalf("the trace does not name the receiver: %d %s", status, page)
	}
}
