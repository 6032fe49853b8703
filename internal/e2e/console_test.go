package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/browsertest"
)

// tab is a browser tab of its own (its own cookies) on the console.
type tab = browsertest.Tab

// newBrowser returns a tab factory on the console at base.
func newBrowser(t *testing.T, base string) func() *tab {
	t.Helper()
	return browsertest.New(t, base, filepath.Join("..", ".."))
}

// sessionCookie is a tab's console session cookie (HttpOnly: read through
// the browser's own protocol, as a script on the page could not).
func sessionCookie(b *tab) *http.Cookie {
	b.T.Helper()
	var cookies []*network.Cookie
	b.Run("read cookies", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().WithURLs([]string{b.Base + "/console/"}).Do(ctx)
		return err
	}))
	for _, c := range cookies {
		if c.Name == "commerce_console" {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax || c.Path != "/console" {
				b.T.Fatalf("session cookie %+v is not HttpOnly, SameSite=Lax on /console", c)
			}
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	b.T.Fatal("the tab has no console session cookie")
	return nil
}

// signIn opens a fresh one-time link for email, as `commerce console login`
// prints it.
func (f *inboundFixture) signIn(b *tab, email string) {
	f.T.Helper()
	token, err := f.DB.CreateConsoleLink(context.Background(), f.org.ID, email)
	if err != nil {
		f.T.Fatal(err)
	}
	if status := b.Open(strings.TrimPrefix(console.LoginURL(f.srv.URL, token), f.srv.URL)); status != 200 {
		f.T.Fatalf("sign-in link answered %d", status)
	}
	// Opening the link shows a button; pressing it signs in.
	if status := b.Click("#signin button"); status != 200 {
		f.T.Fatalf("signing in answered %d", status)
	}
	if got := b.Text("#flash"); !strings.Contains(got, "Signed in as "+email) {
		f.T.Fatalf("after the sign-in link: %q", got)
	}
}

// postForm posts a form to the console as a browser would, with the
// session cookie of a tab, and returns the status.
func (f *inboundFixture) postForm(cookie *http.Cookie, path string, form url.Values) (int, string) {
	f.T.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		f.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// The console in a real browser: the owner signs in with a one-time link,
// finds a failed post, dry-runs its replay (nothing is written), confirms
// it (the invoice is recorded), cancels a parked post, and runs a bulk
// replay whose page refreshes itself until it completes; a member sees no
// replay button and a direct POST is refused 403; a form without its CSRF
// token is refused 403. With COMMERCE_CONSOLE_SCREENSHOTS=dir it saves
// screenshots of the pages on the way (docs/console.md).
func TestConsoleInTheBrowser(t *testing.T) {
	f := newInbound(t)
	if _, err := f.DB.AddUser(context.Background(), f.org.ID, "member@acme.example", domain.UserMember); err != nil {
		t.Fatal(err)
	}
	f.Outbox()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	invoices, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	f.endpoint(domain.ActionDeliveryStatus, false)
	// Three invoices posted for SO-1 that failed (as if its total had been
	// too small then): each applies when replayed now.
	f.one(`WITH ins AS (
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code, error, response)
		SELECT id, $1, $2, 'order_invoice', now() - make_interval(mins => 90 - i), b, length(b), 'inbound/' || id, 'failed', 422,
		       'the invoice amount is above order SO-1''s total', '{"error": "the invoice amount is above order SO-1''s total"}'
		FROM (SELECT gen_random_uuid() AS id, i,
		             convert_to(format('{"order_ref": "SO-1", "invoice_ref": "INV-%s", "amount_minor": %s}', i, 100 * i), 'UTF8') AS b
		      FROM generate_series(1, 3) i) s
		RETURNING 1) SELECT count(*)::text FROM ins`, epID)
	// Stored as by an older release: the backfill reads their references.
	if _, err := f.DB.BackfillReceiptRefs(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	// And one post for an order not there yet: it parks.
	parked := f.post(invoices, `{"order_ref": "SO-LATER", "invoice_ref": "INV-P", "amount_minor": 100}`)
	if parked.status != 202 || parked.str("outcome") != "parked" {
		t.Fatalf("post for an order not there yet: %d %s", parked.status, parked.raw)
	}

	newTab := newBrowser(t, f.srv.URL)
	owner := newTab()

	// Sign in: the link works once.
	f.signIn(owner, "owner@acme.example")
	sessionCookie(owner)
	owner.Screenshot("endpoints")
	if got := owner.Text("main table tbody"); !strings.Contains(got, "failed 3") || !strings.Contains(got, "parked 1") {
		t.Fatalf("endpoints page counts: %q", got)
	}
	// Times are in the viewer's zone; their UTC text stays as the title.
	var title string
	var ok bool
	owner.Run("read a time", chromedp.AttributeValue("main time", "title", &title, &ok, chromedp.ByQuery))
	if shown := owner.Text("main time"); !ok || !strings.HasSuffix(title, "UTC") || shown == title || strings.HasSuffix(shown, "UTC") {
		t.Fatalf("time shown %q (UTC %q): not converted to the viewer's zone", shown, title)
	}

	// Finding the failed post: follow the endpoint's count, then search by
	// reference.
	if status := owner.Click(`a.o-failed`); status != 200 {
		t.Fatalf("receipts page: %d", status)
	}
	if got := owner.Text("main table tbody"); strings.Count(got, "failed") != 3 {
		t.Fatalf("the failed receipts are not listed: %q", got)
	}
	owner.Run("search by reference", chromedp.SetValue(`input[name="ref"]`, "INV-2", chromedp.ByQuery))
	owner.Click(`form.filters button[type="submit"]`)
	owner.Screenshot("receipts")
	var links []string
	owner.Run("list receipts", chromedp.Evaluate(`[...document.querySelectorAll("a.receipt-link")].map(a => a.dataset.id)`, &links))
	if len(links) != 1 {
		t.Fatalf("search for INV-2 lists %v", links)
	}
	failed := links[0]
	owner.Click("a.receipt-link")
	if got := owner.Text("#outcome"); got != "failed" {
		t.Fatalf("receipt page outcome %q", got)
	}
	if got := owner.Text("#body"); !strings.Contains(got, `"invoice_ref": "INV-2"`) {
		t.Fatalf("receipt body %q", got)
	}
	if got := owner.Text("main"); !strings.Contains(got, "GBP 2.00") {
		t.Fatalf("the receipt's amount is not shown as money: %q", got)
	}
	owner.Screenshot("receipt")

	// Dry run: the preview shows the change and writes nothing.
	if status := owner.Click("#dry-run"); status != 200 {
		t.Fatalf("dry run: %d", status)
	}
	if got := owner.Text("#dry-outcome"); got != "applied" {
		t.Fatalf("dry run outcome %q", got)
	}
	if got := owner.Text("table.changes"); !strings.Contains(got, "invoice:INV-2") {
		t.Fatalf("dry run changes %q", got)
	}
	owner.Screenshot("dry-run")
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND replay_of IS NOT NULL`); n != 0 {
		t.Fatalf("the dry run made %d replays", n)
	}
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref = 'INV-2'`); n != 0 {
		t.Fatal("the dry run recorded the invoice")
	}

	// Confirm: the replay applies, and its receipt page says so.
	owner.Click("#confirm-replay")
	if got := owner.Text("#flash"); !strings.HasPrefix(got, "Replayed: the new receipt's outcome is applied") {
		t.Fatalf("after the replay: %q", got)
	}
	if got := owner.Text("#outcome"); got != "applied" {
		t.Fatalf("the replay's receipt is %q", got)
	}
	if !owner.Present(`#temporal-link[href^="` + TemporalUIURL + `/namespaces/"]`) {
		t.Fatal("the receipt page has no link to its workflow in the Temporal UI")
	}
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref = 'INV-2'`); n != 1 {
		t.Fatal("the replay did not record the invoice")
	}
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND replay_of = $2`, failed); n != 1 {
		t.Fatalf("%d replays of the receipt", n)
	}

	// Cancel the parked post.
	owner.Open("/console/receipts/" + parked.receipt)
	owner.Click("#cancel")
	// The question names the post as support knows it, not by its id.
	if got := owner.Text("#confirm-question"); !strings.Contains(got, "Cancel the parked order_invoice post SO-LATER received ") || strings.Contains(got, parked.receipt) {
		t.Fatalf("cancelling asks %q", got)
	}
	owner.Click("#confirm")
	if got := owner.Text("#flash"); !strings.HasPrefix(got, "Cancelled") || owner.Text("#outcome") != "cancelled" {
		t.Fatalf("after cancelling: %q, outcome %q", got, owner.Text("#outcome"))
	}

	// A form without its CSRF token is refused 403 and changes nothing.
	owner.Open("/console/")
	owner.Run("drop the CSRF token", chromedp.Evaluate(
		`document.querySelector('form[action$="/pause"] input[name="csrf"]').remove()`, nil))
	if status := owner.Click(`form[action$="/pause"] button`); status != http.StatusForbidden {
		t.Fatalf("pause without a CSRF token answered %d", status)
	}
	if got := owner.Text("#error"); !strings.Contains(got, "CSRF") {
		t.Fatalf("the refusal says %q", got)
	}
	if n := f.count(`SELECT count(*) FROM inbound_endpoints WHERE org_id = $1 AND state <> 'active'`); n != 0 {
		t.Fatal("a form without its CSRF token paused an endpoint")
	}

	// A member reads, but has no replay button, and a direct POST with the
	// member's own session and CSRF token is refused 403.
	member := newTab()
	f.signIn(member, "member@acme.example")
	member.Open("/console/receipts/" + failed)
	if got := member.Text("#outcome"); got != "failed" {
		t.Fatalf("the member reads outcome %q", got)
	}
	if member.Present("#dry-run") || member.Present(`form[action$="/replay"]`) {
		t.Fatal("the member is shown a replay button")
	}
	var token string
	member.Run("read the member's CSRF token", chromedp.Value(`input[name="csrf"]`, &token, chromedp.ByQuery))
	if status, body := f.postForm(sessionCookie(member), "/console/receipts/"+failed+"/replay", url.Values{"csrf": {token}}); status != http.StatusForbidden ||
		!strings.Contains(body, "member@acme.example is a member") {
		t.Fatalf("the member's replay POST answered %d: %s", status, body)
	}
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND replay_of = $2`, failed); n != 1 {
		t.Fatalf("the member's POST replayed: %d replays", n)
	}

	// Bulk replay of the failed posts, with its progress. The worker is
	// stopped while it starts, so the first page shows it running; the page
	// then refreshes itself (no clicks) until it completes.
	f.Worker.Stop()
	owner.Open("/console/receipts?outcome=failed&endpoint=" + epID)
	owner.Click(`a[href^="/console/replays/new?"]`)
	owner.Screenshot("bulk-replay-form")
	owner.Click("#start-bulk")
	// Asked first, with how many receipts it covers, and the endpoint by its
	// name: the two failed posts not yet resolved (INV-2's, resolved by its
	// replay above, is left out).
	if got := owner.Text("#confirm-question"); !strings.Contains(got, "Replay the 2 receipt(s) these filters select") ||
		strings.Contains(got, epID) {
		t.Fatalf("starting the bulk replay asks %q", got)
	}
	owner.Click("#confirm")
	if got := owner.Text("#flash"); !strings.Contains(got, "started over 2 receipt(s)") {
		t.Fatalf("after starting the bulk replay: %q", got)
	}
	if got := owner.Text("#batch-status"); got != "running" {
		t.Fatalf("bulk replay %q before its worker runs", got)
	}
	owner.Screenshot("bulk-replay-running")
	f.Worker = f.StartWorker()
	f.eventuallyWithin(2*time.Minute, "the bulk replay page showing it completed", func() bool {
		var s string
		ctx, cancel := context.WithTimeout(owner.Ctx, 5*time.Second)
		defer cancel()
		// The page reloads itself meanwhile: a read may meet it mid-load.
		_ = chromedp.Run(ctx, chromedp.Text("#batch-status", &s, chromedp.ByQuery))
		return strings.TrimSpace(s) == "completed"
	})
	if done, total, failedN := owner.Text("#batch-done"), owner.Text("#batch-total"), owner.Text("#batch-failed"); done != "2" || total != "2" || failedN != "0" {
		t.Fatalf("bulk replay done %s of %s, %s failed; want 2 of 2, none failed", done, total, failedN)
	}
	owner.Axe("the bulk replay completed")
	owner.Screenshot("bulk-replay-completed")
	// Each invoice once: INV-2's, recorded by its replay, and INV-1's and
	// INV-3's by the bulk replay.
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref IN ('INV-1', 'INV-2', 'INV-3')`); n != 3 {
		t.Fatalf("%d invoices recorded for the three posts", n)
	}

	// Webhooks: subscribe (the secret shown once), then the deliveries of
	// what the replays emitted, and resend one.
	owner.Open("/console/webhooks")
	owner.Run("fill the subscription", chromedp.SetValue("#s-url", rc.srv.URL+"/hooks", chromedp.ByQuery))
	if status := owner.Click(`form[action="/console/webhooks"] button`); status != http.StatusCreated {
		t.Fatalf("subscribe: %d", status)
	}
	if secret := owner.Text("#subscription-secret"); !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("subscription secret %q", secret)
	}
	f.seed(`{"orders": [{"number": "SO-LATER", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1000}]}]}`)
	owner.Open("/console/receipts/" + parked.receipt)
	owner.Click("#dry-run")
	owner.Click("#confirm-replay")
	f.eventually("a delivery of the replay's event", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded'`) > 0
	})
	owner.Open("/console/webhooks")
	owner.Screenshot("webhooks")
	owner.Open("/console/deliveries")
	owner.Screenshot("deliveries")
	owner.Click(`form[action$="/resend"] button`)
	if got := owner.Text("#flash"); !strings.HasPrefix(got, "Resent") {
		t.Fatalf("after resending: %q", got)
	}

	owner.Open("/console/audit")
	owner.Screenshot("audit")
	got := owner.Text("main table")
	// The audit log names the console user for each write, and each record
	// as support knows it.
	for _, want := range []string{"owner@acme.example", "receipt.replay", "receipt.cancel", "replay_batch.start", "subscription.create", "delivery.resend",
		"order_invoice post SO-LATER", "bulk replay started ", "subscription to http://127.0.0.1:", "order.invoice_recorded to http://127.0.0.1:"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the audit log lacks %q: %s", want, got)
		}
	}

	// On a 390 px phone no page scrolls sideways: wide tables scroll in
	// their own box.
	phone := newTab()
	phone.Phone(390, 844)
	// The sign-in page and the page after it are measured too.
	f.signIn(phone, "owner@acme.example")
	batch := f.one(`SELECT id::text FROM replay_batches WHERE org_id = $1 LIMIT 1`)
	delivery := f.one(`SELECT id::text FROM webhook_deliveries WHERE org_id = $1 LIMIT 1`)
	for _, path := range []string{"/console/", "/console/receipts", "/console/receipts/" + failed, "/console/receipts/" + parked.receipt,
		"/console/replays/new", "/console/replays/new?outcome=failed&outcome=unchanged", "/console/replays/" + batch, "/console/webhooks", "/console/deliveries", "/console/deliveries/" + delivery,
		"/console/audit", "/console/no-such-page", "/console/login/cs_unknown", "/console/receipts?ref=%00"} {
		phone.Open(path)
	}
	// And the pages a form answers with: a dry run, the confirmations,
	// a new endpoint's and a new subscription's one-time secrets.
	phone.Open("/console/receipts/" + failed)
	phone.Click("#dry-run")
	phone.Open("/console/")
	phone.Click(`form[action$="/pause"] button`)
	phone.Open("/console/webhooks")
	phone.Click(`form[action$="/active"] button`)
	phone.Open("/console/webhooks")
	phone.Click(`form[action$="/recover"] button`)
	phone.Open("/console/replays/new?outcome=failed&outcome=unchanged")
	phone.Click("#start-bulk")
	phone.Open("/console/")
	phone.Run("fill the endpoint", chromedp.SetValue("#ep-name", "From a phone", chromedp.ByQuery))
	phone.Click(`form[action="/console/endpoints"] button`)
	phone.Open("/console/webhooks")
	phone.Run("fill the subscription", chromedp.SetValue("#s-url", rc.srv.URL+"/phone", chromedp.ByQuery))
	phone.Click(`form[action="/console/webhooks"] button`)
	// Signed out.
	phone.Click(`form[action="/console/logout"] button`)
}

// Findings of the console's second review, in a real browser: the bulk
// replay link keeps every filter of the list; a filter holding a NUL or
// invalid UTF-8, or naming a status that does not exist, is a 400 page
// naming the filter, with the request id (never a 500); a sign-in link
// opened by a mail scanner is not used up; pages carry a favicon and the
// static files are cacheable.
func TestConsoleReviewFindingsInTheBrowser(t *testing.T) {
	f := newInbound(t)
	_, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	b := newBrowser(t, f.srv.URL)()

	// A link fetched as a scanner would (GET, twice) is still good after.
	token, err := f.DB.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	link := console.LoginURL(f.srv.URL, token)
	for range 2 {
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a scanner's GET of the link: %d", resp.StatusCode)
		}
	}
	if status := b.Open(strings.TrimPrefix(link, f.srv.URL)); status != 200 {
		t.Fatalf("opening the link: %d", status)
	}
	if status := b.Click("#signin button"); status != 200 || !strings.Contains(b.Text("#flash"), "Signed in as owner@acme.example") {
		t.Fatalf("signing in after a scanner fetched the link: %d %q", status, b.Text("#flash"))
	}

	// The bulk replay link opens the form with the list's filters.
	list := "/console/receipts?outcome=parked&outcome=cancelled&endpoint=" + epID + "&after=2026-11-26T06:00"
	if status := b.Open(list); status != 200 {
		t.Fatalf("the filtered list: %d", status)
	}
	if status := b.Click("#bulk-link"); status != 200 {
		t.Fatalf("the bulk replay link: %d", status)
	}
	var checked []string
	var endpoint, after string
	b.Run("read the bulk form", chromedp.Evaluate(`[...document.querySelectorAll('input[name=outcome]:checked')].map(e => e.value)`, &checked),
		chromedp.Evaluate(`document.querySelector('select[name=endpoint]').value`, &endpoint),
		chromedp.Evaluate(`document.querySelector('input[name=after]').value`, &after))
	slices.Sort(checked)
	if !slices.Equal(checked, []string{"cancelled", "parked"}) || endpoint != epID || after != "2026-11-26T06:00" {
		t.Fatalf("the bulk form opened with outcomes %v, endpoint %q, from %q; want the list's filters", checked, endpoint, after)
	}

	// Bad filter values: 400 pages that name the filter and the request id.
	for _, c := range []struct{ path, want string }{
		{"/console/receipts?ref=%00", `The filter "ref" holds a control character`},
		{"/console/receipts?ref=%ff%fe", `The filter "ref" holds bytes that are not UTF-8 text`},
		{"/console/deliveries?event_type=%00", `The filter "event_type" holds a control character`},
		{"/console/deliveries?status=bogus", `The status filter names a status that does not exist: "bogus"`},
	} {
		if status := b.Open(c.path); status != http.StatusBadRequest {
			t.Errorf("%s answered %d, want 400", c.path, status)
			continue
		}
		if got := b.Text("#error"); !strings.Contains(got, c.want) {
			t.Errorf("%s says %q, want %q", c.path, got, c.want)
		}
		if id := b.Text("#request-id code"); id == "" {
			t.Errorf("%s shows no request id", c.path)
		}
	}

	// A form field alike: a NUL typed into the bulk form's reference is a
	// 400 page naming the field, not a 500 from the database.
	b.Open("/console/replays/new")
	b.Run("type a NUL", chromedp.Evaluate(`document.querySelector('form[action="/console/replays"] input[name=ref]').value = "SO\u0000"`, nil))
	if status := b.Click("#start-bulk"); status != http.StatusBadRequest {
		t.Errorf("a bulk form with a NUL in its reference answered %d, want 400", status)
	}
	if got := b.Text("#error"); !strings.Contains(got, `The field "ref" holds a control character`) {
		t.Errorf("a bulk form with a NUL in its reference says %q", got)
	}
	if id := b.Text("#request-id code"); id == "" {
		t.Error("the 400 page of a form shows no request id")
	}

	// A fault of the service (here a table gone for the time of one
	// request): a 500 page with the request id, and nothing of the
	// database's own words.
	rename := func(from, to string) {
		t.Helper()
		if _, err := f.DB.Pool().Exec(context.Background(), `ALTER TABLE `+from+` RENAME TO `+to); err != nil {
			t.Fatal(err)
		}
	}
	rename("audit_log", "audit_log_away")
	status := b.Open("/console/audit")
	rename("audit_log_away", "audit_log")
	if status != http.StatusInternalServerError {
		t.Errorf("the audit page without its table answered %d, want 500", status)
	}
	if id := b.Text("#request-id code"); id == "" {
		t.Error("the 500 page shows no request id")
	}
	if got := b.Text("main"); strings.Contains(got, "audit_log") || strings.Contains(got, "SQLSTATE") || strings.Contains(got, "relation") {
		t.Errorf("the 500 page tells the database's error: %q", got)
	}

	// A parked post: its dry run warns that a replay would park again and
	// does not make replaying the first action; replaying anyway is shown
	// as a warning, not a success. An applied post offers no replay.
	invoices, _, _ := f.endpoint(domain.ActionOrderInvoice, false)
	parked := f.post(invoices, `{"order_ref": "SO-NOT-YET", "invoice_ref": "INV-W", "amount_minor": 100}`)
	if parked.str("outcome") != "parked" {
		t.Fatalf("post for an order not there yet: %d %s", parked.status, parked.raw)
	}
	// Its row says what it waits for, and links by its time.
	b.Open("/console/receipts?outcome=parked")
	if got := b.Text("main table tbody"); !strings.Contains(got, "waits for") || !strings.Contains(got, "SO-NOT-YET") {
		t.Fatalf("the parked row does not say what it waits for: %q", got)
	}
	b.Open("/console/receipts/" + parked.receipt)
	b.Click("#dry-run")
	if !b.Present("#dry-warning") || !b.Present("#confirm-replay.secondary") || !b.Present("#back-to-receipt") {
		t.Fatal("the dry run of a replay that would park again neither warns nor puts going back first")
	}
	b.Click("#confirm-replay")
	if got := b.Text("#flash"); !strings.HasPrefix(got, "Warning: the replay did not go through") || !b.Present("#flash.warn") {
		t.Fatalf("a replay that parked again is shown as %q", got)
	}
	applied := f.post(invoices, `{"order_ref": "SO-1", "invoice_ref": "INV-A", "amount_minor": 100}`)
	if applied.str("outcome") != "applied" {
		t.Fatalf("a post that applies: %d %s", applied.status, applied.raw)
	}
	b.Open("/console/receipts/" + applied.receipt)
	b.Click("#dry-run")
	if b.Present("#confirm-replay") || !b.Present("#applied-note") {
		t.Fatal("an applied receipt's dry run offers a replay")
	}

	// A failed post's trace lists its inbound.receipt.failed event and
	// that event's delivery, whose page says why it failed (the receiver's
	// answer), what was sent, and where it came from.
	f.Outbox()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error": "ERP down for maintenance"}`)
	})
	if _, err := f.DB.CreateSubscription(context.Background(), Sealer(), db.NewSubscription{OrgID: f.org.ID, URL: rc.srv.URL + "/hooks",
		EventTypes: []string{domain.EventInboundReceiptFailed}}); err != nil {
		t.Fatal(err)
	}
	failedPost := f.post(invoices, `{"order_ref": "SO-1", "invoice_ref": "INV-TOO-BIG", "amount_minor": 999999999}`)
	if failedPost.status != http.StatusUnprocessableEntity || failedPost.receipt == "" {
		t.Fatalf("a post that fails: %d %s", failedPost.status, failedPost.raw)
	}
	f.eventually("the failure event's delivery attempted", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.org_id = d.org_id AND e.id = d.event_id
			WHERE d.org_id = $1 AND e.type = 'inbound.receipt.failed' AND d.status = 'failed'`) > 0
	})
	b.Open("/console/receipts/" + failedPost.receipt)
	if got := b.Text("#trace-events"); !strings.Contains(got, "inbound.receipt.failed") || !strings.Contains(got, "failed") {
		t.Fatalf("the failed receipt's trace: %q", got)
	}
	b.Click(`#trace-events a[href^="/console/deliveries/"]`)
	if got := b.Text("#attempts"); !strings.Contains(got, `{"error": "ERP down for maintenance"}`) {
		t.Fatalf("the delivery's attempts do not show the receiver's answer: %q", got)
	}
	if got := b.Text("#sent-body"); !strings.Contains(got, `"type": "inbound.receipt.failed"`) || !strings.Contains(got, failedPost.receipt) {
		t.Fatalf("what the delivery sends: %q", got)
	}
	if got := b.Text("#sent-headers"); !strings.Contains(got, "v1,***") || strings.Contains(got, "whsec_") {
		t.Fatalf("the headers sent, signatures masked: %q", got)
	}
	if got := b.Text("#delivery-receipt"); got != "order_invoice post SO-1" || !b.Present(`#delivery-receipt[href="/console/receipts/`+failedPost.receipt+`"]`) ||
		!b.Present("#delivery-subscription") {
		t.Fatalf("the delivery links to its receipt as %q", got)
	}
	// The event's deliveries, to every subscription: this one among them.
	var deliveryPath string
	b.Run("read the delivery's address", chromedp.Evaluate(`location.pathname`, &deliveryPath))
	b.Click("#delivery-event")
	if !b.Present("#event-filter") || !b.Present(`main table a[href="`+deliveryPath+`"]`) {
		t.Fatalf("the event's deliveries do not list the delivery %s", deliveryPath)
	}
	b.Open(deliveryPath)
	// The subscription filter is a choice a person reads, by URL.
	b.Click("#delivery-subscription")
	var chosen string
	b.Run("read the subscription filter", chromedp.Evaluate(`document.querySelector('#subscription-filter').selectedOptions[0].textContent`, &chosen))
	if chosen != rc.srv.URL+"/hooks" {
		t.Fatalf("the deliveries list's subscription filter shows %q", chosen)
	}

	// Switching a subscription off and recovering its deliveries ask
	// first, naming the URL and how many deliveries; going back changes
	// nothing.
	b.Open("/console/webhooks")
	b.Click(`form[action$="/active"] button`)
	if got := b.Text("#confirm-question"); !strings.Contains(got, "Switch off the subscription to "+rc.srv.URL+"/hooks") {
		t.Fatalf("switching off asks %q", got)
	}
	b.Click("#confirm-cancel")
	if n := f.count(`SELECT count(*) FROM webhook_subscriptions WHERE org_id = $1 AND active`); n != 1 {
		t.Fatal("going back from the confirmation switched the subscription off")
	}
	b.Click(`form[action$="/recover"] button`)
	if got := b.Text("#confirm-question"); !strings.Contains(got, "Send again the 1 failed or exhausted deliveries to "+rc.srv.URL+"/hooks") {
		t.Fatalf("recovering asks %q", got)
	}

	// A favicon, and static files a browser may keep.
	var icon string
	b.Open("/console/")
	b.Run("read the icon link", chromedp.Evaluate(`document.querySelector('link[rel=icon]').href`, &icon))
	for _, u := range []string{icon, f.srv.URL + "/console/static/console.css"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") {
			t.Errorf("%s: %d, Cache-Control %q", u, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}

	// Creating an endpoint shows its URL once (a page axe checks too).
	b.Run("fill the endpoint", chromedp.SetValue("#ep-name", "From the console", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('input[name=require_signature]').checked = true`, nil))
	if status := b.Click(`form[action="/console/endpoints"] button`); status != http.StatusCreated {
		t.Fatalf("creating an endpoint: %d", status)
	}
	if url, secret := b.Text("#endpoint-url"), b.Text("#endpoint-secret"); !strings.Contains(url, "/api/in/") || secret == "" {
		t.Fatalf("the created endpoint's URL %q, secret %q", url, secret)
	}
}

// Finding 5 of the console's review: the pages show times in the viewer's
// zone, so the filters take times in that zone, and the page names it. A
// viewer in Los Angeles reads the newest receipt's time on the list,
// enters a range of a minute either side of it in the filter's inputs, and
// finds that receipt (not the older one); the labels and the footer name
// America/Los_Angeles. The zone stays in the list's address and goes with
// the bulk replay link, whose form selects just that receipt; the webhooks
// page's recovery time is a day ago on the Los Angeles clock.
func TestConsoleFiltersTakeTheViewersZone(t *testing.T) {
	f := newInbound(t)
	_, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	receipt := func(ago string) string {
		return f.one(`INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code, error)
			SELECT id, $1, $2, 'order_invoice', now() - $3::interval, convert_to($4, 'UTF8'), length($4), 'inbound/' || id, 'failed', 404,
			       'order SO-1 not found'
			FROM (SELECT gen_random_uuid() AS id) s
			RETURNING id::text`, epID, ago, `{"order_ref": "SO-1", "invoice_ref": "INV-1", "amount_minor": 100}`)
	}
	older := receipt("3 hours")
	newest := receipt("10 seconds")
	if _, err := f.DB.CreateSubscription(context.Background(), Sealer(), db.NewSubscription{OrgID: f.org.ID,
		URL: "https://erp.example.com/hooks"}); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, f.srv.URL)()
	// This viewer is in Los Angeles (in place of the tab's London).
	b.Run("move the tab to Los Angeles", emulation.SetTimezoneOverride(""), emulation.SetTimezoneOverride("America/Los_Angeles"))
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	f.signIn(b, "owner@acme.example")
	b.Open("/console/receipts")

	// The newest row's time as shown ("26 Nov 2026, 22:33:12 PST" or
	// "Nov 26, 2026, 10:33:12 PM PST", as the browser's locale has it),
	// which is its instant on the Los Angeles clock.
	var shown, at string
	var ok bool
	b.Run("read the newest row's time", chromedp.Text("a.receipt-link time", &shown, chromedp.ByQuery),
		chromedp.AttributeValue("a.receipt-link time", "datetime", &at, &ok, chromedp.ByQuery))
	const clock = `(\d{1,2}):(\d{2}):\d{2}[\s\x{a0}\x{202f}]*([AP]M)?`
	var day, month, year, hour, minute, half string
	if m := regexp.MustCompile(`(\d{1,2}) ([A-Z][a-z]{2})[a-z]* (\d{4}),? ` + clock).FindStringSubmatch(shown); m != nil {
		day, month, year, hour, minute, half = m[1], m[2], m[3], m[4], m[5], m[6]
	} else if m := regexp.MustCompile(`([A-Z][a-z]{2})[a-z]* (\d{1,2}), (\d{4}),? ` + clock).FindStringSubmatch(shown); m != nil {
		month, day, year, hour, minute, half = m[1], m[2], m[3], m[4], m[5], m[6]
	} else {
		t.Fatalf("the newest row's time reads %q", shown)
	}
	layout := "2 Jan 2006 15:04"
	if half != "" {
		layout = "2 Jan 2006 3:04 PM"
	}
	wall, err := time.Parse(layout, strings.TrimSuffix(day+" "+month+" "+year+" "+hour+":"+minute+" "+half, " "))
	instant, ierr := time.Parse(time.RFC3339Nano, at)
	if err != nil || ierr != nil || !ok || instant.In(la).Format("2006-01-02 15:04") != wall.Format("2006-01-02 15:04") {
		t.Fatalf("the newest receipt, received %s, is shown as %q: not on the Los Angeles clock (%v, %v)", at, shown, err, ierr)
	}

	// A minute either side of it, typed as the inputs take it.
	from, to := wall.Add(-time.Minute).Format("2006-01-02T15:04"), wall.Add(time.Minute).Format("2006-01-02T15:04")
	b.Run("enter the range", chromedp.SetValue(`form.filters input[name="after"]`, from, chromedp.ByQuery),
		chromedp.SetValue(`form.filters input[name="before"]`, to, chromedp.ByQuery))
	if status := b.Click(`form.filters button[type="submit"]`); status != http.StatusOK {
		t.Fatalf("filtering: %d", status)
	}
	var links []string
	b.Run("list receipts", chromedp.Evaluate(`[...document.querySelectorAll("a.receipt-link")].map(a => a.dataset.id)`, &links))
	if !slices.Equal(links, []string{newest}) {
		t.Fatalf("From %s To %s (Los Angeles, around the newest row's %q) lists %v; want the newest receipt %s alone (not %s)",
			from, to, shown, links, newest, older)
	}
	// The zone stays in the address, and the inputs show the same values.
	var search, after, before string
	b.Run("read the filtered list", chromedp.Evaluate(`location.search`, &search),
		chromedp.Value(`form.filters input[name="after"]`, &after, chromedp.ByQuery),
		chromedp.Value(`form.filters input[name="before"]`, &before, chromedp.ByQuery))
	if !strings.Contains(search, "tz=America%2FLos_Angeles") || after != from || before != to {
		t.Fatalf("the filtered list is %s with From %q, To %q; want tz and From %q, To %q", search, after, before, from, to)
	}
	// The page names the zone: the labels and the footer.
	if got := b.Text("form.filters"); !strings.Contains(got, "From (America/Los_Angeles)") || !strings.Contains(got, "To (America/Los_Angeles)") {
		t.Fatalf("the filter's labels: %q", got)
	}
	if got := b.Text("#zone-note"); got != "Times are shown in America/Los_Angeles." {
		t.Fatalf("the footer says %q", got)
	}

	// The bulk replay form opens with the range in the same zone, and
	// selects what the list showed.
	if status := b.Click("#bulk-link"); status != http.StatusOK {
		t.Fatalf("the bulk replay link: %d", status)
	}
	var tz string
	b.Run("read the bulk form", chromedp.Value(`#b-after`, &after, chromedp.ByQuery), chromedp.Value(`#b-before`, &before, chromedp.ByQuery),
		chromedp.Value(`form[action="/console/replays"] input[name="tz"]`, &tz, chromedp.ByQuery))
	if after != from || before != to || tz != "America/Los_Angeles" || b.Text(`label[for="b-after"]`) != "Received after (America/Los_Angeles)" {
		t.Fatalf("the bulk form opened with after %q, before %q, tz %q, labelled %q", after, before, tz, b.Text(`label[for="b-after"]`))
	}
	b.Click("#start-bulk")
	if got := b.Text("#confirm-question"); !strings.Contains(got, "Replay the 1 receipt(s) these filters select") ||
		!strings.Contains(got, "received from "+wall.Add(-time.Minute).Format("2006-01-02 15:04")+" America/Los_Angeles") {
		t.Fatalf("starting the bulk replay asks %q", got)
	}

	// Recovering webhook deliveries since a day ago, on the viewer's clock.
	b.Open("/console/webhooks")
	var since string
	b.Run("read the recovery form", chromedp.Value(`form[action$="/recover"] input[name="since"]`, &since, chromedp.ByQuery),
		chromedp.Value(`form[action$="/recover"] input[name="tz"]`, &tz, chromedp.ByQuery))
	s, err := time.ParseInLocation("2006-01-02T15:04", since, la)
	if late := time.Since(s) - 24*time.Hour; err != nil || tz != "America/Los_Angeles" || late < -time.Minute || late > 3*time.Minute ||
		!strings.Contains(b.Text(`form[action$="/recover"]`), "Resend failed since (America/Los_Angeles)") {
		t.Fatalf("the recovery form says since %q in %q (%v): not a day ago in Los Angeles; labelled %q", since, tz, err,
			b.Text(`form[action$="/recover"]`))
	}
}
