package console_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

var key = []byte("0123456789abcdef0123456789abcdef")

type fixture struct {
	t        *testing.T
	d        *testdb.DB
	srv      *httptest.Server
	org      domain.Organisation
	svc      *integrations.Service
	endpoint uuid
	// token is the endpoint's: it is posted to at /api/in/<token>.
	token   string
	receipt string
}

type uuid = string

// newFixture serves the API with the console over a fresh schema: an
// organisation (GBP) with an owner and a member, an endpoint, and one
// failed receipt. No Temporal: these tests stay off the routes that start
// workflows.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(key)
	service := integrations.New(integrations.Deps{DB: d.DB, Sealer: sealer, BaseURL: "http://commerce.test"})
	s := api.New(api.Deps{DB: d.DB, Service: service, Cursors: cursor.New(key), BaseURL: "http://commerce.test"})
	s.Mount(console.Prefix, console.New(console.Deps{DB: d.DB, Service: service, BaseURL: "http://commerce.test"}))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", Currency: "GBP", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddUser(ctx, org.ID, "member@acme.example", domain.UserMember); err != nil {
		t.Fatal(err)
	}
	e, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP invoices",
		Action: domain.ActionOrderInvoice})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, d: d, srv: srv, org: org, svc: service, endpoint: e.ID.String(), token: e.Token}
	body := `{"order_ref": "SO-9", "invoice_ref": "INV-9", "amount_minor": 123456}`
	if err := d.Pool().QueryRow(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code, error)
		VALUES (gen_random_uuid(), $1, $2, 'order_invoice', now() - interval '1 hour', convert_to($3, 'UTF8'), length($3), 'inbound/x',
		        'failed', 404, 'order SO-9 not found')
		RETURNING id::text`, org.ID, e.ID, body).Scan(&f.receipt); err != nil {
		t.Fatal(err)
	}
	// Stored as a receipt of an older release was: the backfill reads its
	// references.
	if _, err := d.BackfillReceiptRefs(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// writes are the audit log's entries but its sign-ins.
func (f *fixture) writes(entries []db.AuditEntry, err error) ([]db.AuditEntry, error) {
	var out []db.AuditEntry
	for _, e := range entries {
		if e.Action != "console.sign_in" {
			out = append(out, e)
		}
	}
	return out, err
}

// browser is a client with its own cookies, not following redirects.
type browser struct {
	f *fixture
	c *http.Client
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{f: f, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) (int, string) {
	b.f.t.Helper()
	resp, err := b.c.Get(b.f.srv.URL + path)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusSeeOther {
		return b.get(strings.TrimPrefix(resp.Header.Get("Location"), b.f.srv.URL))
	}
	return resp.StatusCode, string(raw)
}

func (b *browser) post(path string, form url.Values) (int, string) {
	b.f.t.Helper()
	resp, err := b.c.PostForm(b.f.srv.URL+path, form)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusSeeOther {
		return b.get(resp.Header.Get("Location"))
	}
	return resp.StatusCode, string(raw)
}

// signIn makes a link for email and follows it.
func (f *fixture) signIn(email string) (*browser, string) {
	f.t.Helper()
	token, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, email)
	if err != nil {
		f.t.Fatal(err)
	}
	b := f.browser()
	status, page := b.post(strings.TrimPrefix(console.LoginURL(f.srv.URL, token), f.srv.URL), nil)
	if status != 200 || !strings.Contains(page, email) {
		f.t.Fatalf("sign-in as %s: %d %s", email, status, page)
	}
	return b, token
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page: %s", page)
	}
	return m[1]
}

// A link signs in once, within its ten minutes, and is kept only hashed;
// the session cookie is HttpOnly and SameSite=Lax; signing out ends the
// session.
func TestSignInLinkWorksOnceAndBecomesASession(t *testing.T) {
	f := newFixture(t)
	token, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM console_links WHERE token_hash = $1`, secrets.Hash(token)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("the link is not stored by its hash: %d %v", stored, err)
	}
	b := f.browser()
	// Opening the link (what a mail scanner does) shows a button and
	// spends nothing, however often.
	for range 2 {
		status, page := b.get(strings.TrimPrefix(console.LoginURL(f.srv.URL, token), f.srv.URL))
		if status != http.StatusOK || !strings.Contains(page, `<form method="post" action="/console/login/`+token+`"`) {
			t.Fatalf("opening the link: %d %s", status, page)
		}
	}
	resp, err := b.c.PostForm(console.LoginURL(f.srv.URL, token), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "commerce_console" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/console" || cookie.MaxAge != 12*3600 {
		t.Fatalf("session cookie %+v", cookie)
	}
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM console_sessions WHERE token_hash = $1`,
		secrets.Hash(cookie.Value)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("the session is not stored by its hash: %d %v", stored, err)
	}
	if status, page := b.get("/console/"); status != 200 || !strings.Contains(page, "ERP invoices") || !strings.Contains(page, "owner@acme.example") {
		t.Fatalf("endpoints page: %d %s", status, page)
	}
	// Used once.
	if status, _ := f.browser().post("/console/login/"+token, nil); status != http.StatusUnauthorized {
		t.Fatalf("second use of the link: %d", status)
	}
	// Expired.
	late, _ := f.d.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	f.d.Pool().Exec(context.Background(), `UPDATE console_links SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, secrets.Hash(late))
	if status, _ := f.browser().post("/console/login/"+late, nil); status != http.StatusUnauthorized {
		t.Fatalf("expired link: %d", status)
	}
	// Not a user of the organisation.
	if _, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, "stranger@acme.example"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("link for a stranger: %v", err)
	}
	// Without a session: the sign-in page, 401.
	if status, page := f.browser().get("/console/receipts"); status != http.StatusUnauthorized || !strings.Contains(page, "commerce console login") {
		t.Fatalf("receipts without a session: %d %s", status, page)
	}
	_, page := b.get("/console/")
	if status, _ := b.post("/console/logout", url.Values{"csrf": {csrf(t, page)}}); status != 200 {
		t.Fatalf("sign out: %d", status)
	}
	if status, _ := b.get("/console/"); status != http.StatusUnauthorized {
		t.Fatalf("after signing out: %d", status)
	}
}

// Every page renders for a member, with times as <time> elements and money
// in the organisation's currency; the member sees no action buttons and
// every action is refused 403; a form without the session's CSRF token is
// refused 403 too.
func TestMemberReadsButCannotActAndFormsNeedTheirToken(t *testing.T) {
	f := newFixture(t)
	member, _ := f.signIn("member@acme.example")
	for path, want := range map[string]string{
		"/console/":                                          "ERP invoices",
		"/console/receipts":                                  f.receipt,
		"/console/receipts?outcome=failed":                   f.receipt,
		"/console/receipts?outcome=applied":                  "No receipts match",
		"/console/receipts?ref=INV-9&endpoint=" + f.endpoint: f.receipt,
		"/console/receipts/" + f.receipt:                     "order SO-9 not found",
		"/console/webhooks":                                  "No subscriptions",
		"/console/deliveries":                                "No deliveries match",
		"/console/audit":                                     "console.sign_in",
		"/console/replays/new":                               "admins and owners",
	} {
		status, page := member.get(path)
		if status != 200 || !strings.Contains(page, want) {
			t.Fatalf("%s: %d, want %q in %s", path, status, want, page)
		}
		if strings.Contains(page, "/dry-run") || strings.Contains(page, "/pause") || strings.Contains(page, "Create endpoint") {
			t.Fatalf("%s shows a member an action", path)
		}
	}
	_, page := member.get("/console/receipts/" + f.receipt)
	if strings.Contains(page, `id="trace-id"`) {
		t.Fatal("a receipt received untraced shows a trace")
	}
	// A receipt received in a trace shows its id.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	if _, err := f.d.Pool().Exec(context.Background(), `UPDATE inbound_receipts SET trace_id = $2 WHERE id = $1`, f.receipt, traceID); err != nil {
		t.Fatal(err)
	}
	_, page = member.get("/console/receipts/" + f.receipt)
	if !strings.Contains(page, `<code id="trace-id">`+traceID+`</code>`) {
		t.Fatalf("the receipt page does not show its trace id: %s", page)
	}
	if !strings.Contains(page, `<time datetime="`) || !strings.Contains(page, `&#34;invoice_ref&#34;: &#34;INV-9&#34;`) ||
		!strings.Contains(page, `<code>amount_minor</code> <span class="money">GBP 1,234.56</span>`) {
		t.Fatalf("receipt page lacks its time element or pretty body: %s", page)
	}
	token := csrf(t, page)
	for _, path := range []string{"/console/receipts/" + f.receipt + "/replay", "/console/receipts/" + f.receipt + "/dry-run",
		"/console/endpoints/" + f.endpoint + "/pause", "/console/endpoints", "/console/replays", "/console/webhooks"} {
		if status, body := member.post(path, url.Values{"csrf": {token}, "name": {"x"}, "action": {"order_invoice"}, "outcome": {"failed"}}); status != http.StatusForbidden ||
			!strings.Contains(body, "member") {
			t.Fatalf("member POST %s: %d %s", path, status, body)
		}
	}

	owner, _ := f.signIn("owner@acme.example")
	_, page = owner.get("/console/receipts/" + f.receipt)
	if !strings.Contains(page, "/dry-run") {
		t.Fatal("the owner sees no replay button")
	}
	for _, form := range []url.Values{{}, {"csrf": {"forged"}}, {"csrf": {token}}} { // the member's token is not the owner's
		if status, body := owner.post("/console/endpoints/"+f.endpoint+"/pause", form); status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Fatalf("pause with CSRF %v: %d %s", form, status, body)
		}
	}
	var state string
	f.d.Pool().QueryRow(context.Background(), `SELECT state FROM inbound_endpoints WHERE id = $1`, f.endpoint).Scan(&state)
	if state != "active" {
		t.Fatalf("a refused form paused the endpoint: %s", state)
	}
}

// An owner pauses and resumes an endpoint, creates one (its URL and secret
// shown once), and dry-runs a replay: the preview shows the change in the
// organisation's money and writes nothing. Each write is in the audit log
// under the console user.
func TestOwnerActsAndTheAuditLogSaysWho(t *testing.T) {
	f := newFixture(t)
	owner, _ := f.signIn("owner@acme.example")
	_, page := owner.get("/console/")
	token := csrf(t, page)
	// Pausing asks first, naming the endpoint, and pauses nothing until
	// confirmed.
	if status, page := owner.post("/console/endpoints/"+f.endpoint+"/pause", url.Values{"csrf": {token}}); status != 200 ||
		!strings.Contains(page, `Pause the endpoint &#34;ERP invoices&#34;?`) || !strings.Contains(page, `name="confirm" value="yes"`) {
		t.Fatalf("pause, unconfirmed: %d %s", status, page)
	}
	if status, page := owner.get("/console/"); status != 200 || strings.Contains(page, `<strong class="badge paused">paused</strong>`) {
		t.Fatalf("an unconfirmed pause paused the endpoint: %s", page)
	}
	if status, page := owner.post("/console/endpoints/"+f.endpoint+"/pause", url.Values{"csrf": {token}, "confirm": {"yes"}}); status != 200 ||
		!strings.Contains(page, "paused: posts answer 409") || !strings.Contains(page, `<strong class="badge paused">paused</strong>`) {
		t.Fatalf("pause: %d %s", status, page)
	}
	if status, page := owner.post("/console/endpoints/"+f.endpoint+"/resume", url.Values{"csrf": {token}}); status != 200 || !strings.Contains(page, "resumed") {
		t.Fatalf("resume: %d %s", status, page)
	}
	status, page := owner.post("/console/endpoints", url.Values{"csrf": {token}, "name": {"Carrier"}, "action": {"delivery_status"}, "require_signature": {"1"}})
	if status != http.StatusCreated || !strings.Contains(page, "http://commerce.test/api/in/") || !strings.Contains(page, "whsec_") {
		t.Fatalf("create endpoint: %d %s", status, page)
	}
	if status, page := owner.post("/console/endpoints", url.Values{"csrf": {token}, "name": {""}, "action": {"delivery_status"}}); status != http.StatusBadRequest ||
		!strings.Contains(page, "Refused: endpoint name must be 1 to 200 characters") {
		t.Fatalf("create endpoint without a name: %d %s", status, page)
	}

	// The order exists now: a dry run would record the invoice.
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-9", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 200000}]}]}`))
	if _, err := f.d.Seed(context.Background(), f.org.ID, sf); err != nil {
		t.Fatal(err)
	}
	status, page = owner.post("/console/receipts/"+f.receipt+"/dry-run", url.Values{"csrf": {token}})
	if status != 200 || !strings.Contains(page, "nothing was written") || !strings.Contains(page, "confirm-replay") ||
		!strings.Contains(page, `<td><code>invoice:INV-9</code></td><td>—</td><td>issued</td>`) {
		t.Fatalf("dry run: %d %s", status, page)
	}
	// It names the post by its action and reference, its id a click away.
	if !strings.Contains(page, `title="Receipt `+f.receipt+`">order_invoice post SO-9</a>`) || strings.Contains(page, ">"+f.receipt+"<") {
		t.Fatalf("the dry run does not name its post: %s", page)
	}
	// A receipt the replay rules refuse says why, on its page, answered
	// with the refusal's status (409, as the API answers it).
	owner.post("/console/endpoints/"+f.endpoint+"/pause", url.Values{"csrf": {token}, "confirm": {"yes"}})
	status, page = owner.post("/console/receipts/"+f.receipt+"/dry-run", url.Values{"csrf": {token}})
	if status != http.StatusConflict || !strings.Contains(page, `<p class="flash bad" role="status" id="flash">Refused: `) || !strings.Contains(page, "paused") ||
		!strings.Contains(page, "order SO-9 not found") {
		t.Fatalf("dry run of a paused endpoint's receipt: %d %s", status, page)
	}
	var receipts int
	f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbound_receipts WHERE org_id = $1`, f.org.ID).Scan(&receipts)
	if receipts != 1 {
		t.Fatalf("the dry run wrote a receipt: %d", receipts)
	}

	// The log names who and what: the user's email, the endpoint's name
	// linked to its page, where its id is (in the link's title too), never
	// an id as the text a person reads.
	_, page = owner.get("/console/audit")
	for _, want := range []string{"<td class=\"wrap\">owner@acme.example</td>", "endpoint.pause", "endpoint.resume", "endpoint.create",
		`<a href="/console/endpoints/` + f.endpoint + `/mapping" title="endpoint ` + f.endpoint + `">endpoint ERP invoices</a>`,
		`">endpoint Carrier</a>`} {
		if !strings.Contains(page, want) {
			t.Fatalf("audit log lacks %q: %s", want, page)
		}
	}
	if strings.Contains(page, ">"+f.endpoint) || strings.Contains(page, "console:owner") {
		t.Fatalf("audit log shows an id or an actor's raw form as text: %s", page)
	}
}

func TestMoneyIsFormattedFromMinorUnits(t *testing.T) {
	for _, c := range []struct {
		minor    any
		currency string
		want     string
	}{{int64(123456), "GBP", "GBP 1,234.56"}, {float64(-5), "EUR", "EUR -0.05"}, {1500, "JPY", "JPY 1,500"}, {float64(1234567), "KWD", "KWD 1,234.567"}} {
		if got := console.Money(c.minor, c.currency); got != c.want {
			t.Errorf("Money(%v, %s) = %q, want %q", c.minor, c.currency, got, c.want)
		}
	}
}

// Durations read as a person says them, not as "115434 ms".
func TestDurationsReadAsAPersonSaysThem(t *testing.T) {
	for ms, want := range map[int]string{0: "0 ms", 340: "340 ms", 2400: "2.4 s", 42000: "42 s", 115434: "1 min 55 s", 7_500_000: "2 h 5 min"} {
		if got := console.Duration(ms); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ms, got, want)
		}
	}
}

// A filter's datetime-local value is read in the zone its tz names (UTC
// when none); RFC 3339 keeps its own offset; a zone that does not exist is
// refused, naming the value.
func TestFilterTimesAreReadInTheFormsZone(t *testing.T) {
	for _, c := range []struct{ tz, raw, want string }{
		{"", "2026-11-26T06:33", "2026-11-26T06:33:00Z"},
		{"UTC", "2026-11-26T06:33:20", "2026-11-26T06:33:20Z"},
		{"America/Los_Angeles", "2026-11-25T22:33", "2026-11-26T06:33:00Z"},     // PST, UTC-8
		{"America/Los_Angeles", "2026-07-25T22:33", "2026-07-26T05:33:00Z"},     // PDT, UTC-7
		{"Asia/Kolkata", "2026-11-26T12:03", "2026-11-26T06:33:00Z"},            // UTC+5:30
		{"America/Los_Angeles", "2026-11-26T06:33:00Z", "2026-11-26T06:33:00Z"}, // its own offset
		{"Asia/Kolkata", "2026-11-25T22:33:00-08:00", "2026-11-26T06:33:00Z"},
	} {
		loc, err := console.FormZone(c.tz)
		if err != nil {
			t.Fatalf("zone %q: %v", c.tz, err)
		}
		got, err := console.FormTime("From", c.raw, loc)
		if err != nil || got == nil || got.UTC().Format(time.RFC3339) != c.want {
			t.Errorf("%q in %q = %v, %v; want %s", c.raw, c.tz, got, err, c.want)
		}
	}
	if got, err := console.FormTime("From", " ", time.UTC); got != nil || err != nil {
		t.Errorf("an empty time: %v, %v", got, err)
	}
	loc, _ := console.FormZone("America/Los_Angeles")
	if _, err := console.FormTime("From", "yesterday", loc); domain.ErrorCode(err) != domain.EINVALID ||
		!strings.Contains(domain.ErrorMessage(err), "From is not a date and time (YYYY-MM-DDTHH:MM, in America/Los_Angeles)") {
		t.Errorf("a time that is not one: %v", err)
	}
	for _, tz := range []string{"Mars/Olympus_Mons", "Local", "../../etc/passwd", "/etc/localtime"} {
		if _, err := console.FormZone(tz); domain.ErrorCode(err) != domain.EINVALID ||
			!strings.Contains(domain.ErrorMessage(err), `The time zone filter "tz" names no time zone: `+strconv.QuoteToASCII(tz)) {
			t.Errorf("zone %q: %v", tz, err)
		}
	}
}

// The receipts list reads its From/To in the zone tz names and keeps tz in
// the bulk replay link; an unknown zone is a 400 page naming the value.
func TestReceiptsFilterInTheViewersZone(t *testing.T) {
	f := newFixture(t)
	member, _ := f.signIn("member@acme.example")
	var at time.Time
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT received_at FROM inbound_receipts WHERE id = $1`, f.receipt).Scan(&at); err != nil {
		t.Fatal(err)
	}
	la, _ := time.LoadLocation("America/Los_Angeles")
	// The minute before the receipt's, to the one after, on a Los Angeles
	// wall clock.
	wall := at.In(la).Truncate(time.Minute)
	after, before := wall.Add(-time.Minute).Format("2006-01-02T15:04"), wall.Add(2*time.Minute).Format("2006-01-02T15:04")
	inLA := "/console/receipts?" + url.Values{"tz": {"America/Los_Angeles"}, "after": {after}, "before": {before}}.Encode()
	status, page := member.get(inLA)
	if status != 200 || !strings.Contains(page, f.receipt) {
		t.Fatalf("a range around the receipt in Los Angeles time: %d %s", status, page)
	}
	for _, want := range []string{`From (<span class="zone" data-zone-name>America/Los_Angeles</span>)`,
		`name="tz" value="America/Los_Angeles"`, `name="after" value="` + after + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the filtered list lacks %s", want)
		}
	}
	// The same wall clock read as UTC (no tz: a browser without the
	// script, whose page says UTC) is hours away: nothing.
	asUTC := "/console/receipts?" + url.Values{"after": {after}, "before": {before}}.Encode()
	if status, page := member.get(asUTC); status != 200 || strings.Contains(page, f.receipt) ||
		!strings.Contains(page, `From (<span class="zone" data-zone-name>UTC</span>)`) ||
		!strings.Contains(page, `Times are shown in <span id="shown-zone">UTC</span>.`) {
		t.Fatalf("the Los Angeles range read as UTC: %d %s", status, page)
	}
	owner, _ := f.signIn("owner@acme.example")
	_, page = owner.get(inLA)
	if !strings.Contains(page, "tz=America%2FLos_Angeles") {
		t.Errorf("the bulk replay link does not carry the zone: %s", page)
	}
	if status, page := member.get("/console/receipts?tz=Mars%2FOlympus_Mons&after=2026-11-26T06:00"); status != http.StatusBadRequest ||
		!strings.Contains(page, `The time zone filter &#34;tz&#34; names no time zone: &#34;Mars/Olympus_Mons&#34;`) {
		t.Fatalf("an unknown zone: %d %s", status, page)
	}
}

// Static files go gzipped to a browser that takes gzip, as they are to
// one that does not, with an ETag that answers 304, cacheable for a day.
func TestStaticFilesAreCompressedAndCacheable(t *testing.T) {
	f := newFixture(t)
	get := func(header ...string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/console/static/console.css", nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		// Go's transport would ask for gzip and undo it itself.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, raw
	}
	plain, css := get()
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || !strings.Contains(string(css), "box-sizing") ||
		!strings.HasPrefix(plain.Header.Get("Content-Type"), "text/css") || !strings.Contains(plain.Header.Get("Cache-Control"), "max-age=86400") {
		t.Fatalf("plain: %d %v", plain.StatusCode, plain.Header)
	}
	zipped, gz := get("Accept-Encoding", "gzip, br")
	if zipped.Header.Get("Content-Encoding") != "gzip" || len(gz) >= len(css) {
		t.Fatalf("gzip: %v, %d bytes for %d", zipped.Header, len(gz), len(css))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	if back, _ := io.ReadAll(zr); !bytes.Equal(back, css) {
		t.Fatal("the gzipped file is not the file")
	}
	if again, _ := get("Accept-Encoding", "gzip", "If-None-Match", zipped.Header.Get("ETag")); again.StatusCode != http.StatusNotModified {
		t.Fatalf("a repeat with its ETag: %d", again.StatusCode)
	}
}

// A failing endpoint and a failing subscription say so on their pages:
// since when, and why.
func TestFailingEndpointsAndSubscriptionsSaySo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sub := f.subscription()
	if _, err := f.d.Pool().Exec(ctx, `UPDATE webhook_subscriptions SET failing_since = now(), consecutive_failures = 7,
		last_failure_status = 503, last_failure_error = 'the receiver answered 503' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Pool().Exec(ctx, `UPDATE inbound_endpoints SET failing_since = now() WHERE id = $1`, f.endpoint); err != nil {
		t.Fatal(err)
	}
	b, _ := f.signIn("member@acme.example")
	for path, want := range map[string][]string{
		"/console/":         {`class="badge failing"`, "since <time", "more than half of its posts of the last 15 minutes failed"},
		"/console/webhooks": {`class="badge failing"`, "since <time", "7 failed attempts in a row; the last: the receiver answered 503"},
	} {
		status, page := b.get(path)
		for _, w := range want {
			if status != 200 || !strings.Contains(page, w) {
				t.Errorf("%s: %d, want %q in it", path, status, w)
			}
		}
	}
}

// An owner sets a subscription's delivery settings on the Webhooks page;
// the page says them, with the backlog; a setting out of its range is
// refused and changes nothing; the change is in the audit log.
func TestOwnerSetsASubscriptionsDeliverySettings(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sub := f.subscription()
	owner, _ := f.signIn("owner@acme.example")
	_, page := owner.get("/console/webhooks")
	if !strings.Contains(page, "no rate limit · 10 at once") || !strings.Contains(page, `action="/console/webhooks/`+sub.ID.String()+`/settings"`) {
		t.Fatalf("the webhooks page lacks the settings or their form: %s", page)
	}
	token := csrf(t, page)
	path := "/console/webhooks/" + sub.ID.String() + "/settings"
	status, page := owner.post(path, url.Values{"csrf": {token}, "rate_limit_per_second": {"5"}, "max_in_flight": {"2"}, "ordering": {"per_entity"}})
	if status != 200 || !strings.Contains(page, "at most 5 a second, 2 at once, one at a time per entity") ||
		!strings.Contains(page, "5/s · 2 at once · per entity, in order") {
		t.Fatalf("set the settings: %d %s", status, page)
	}
	if status, page := owner.post(path, url.Values{"csrf": {token}, "rate_limit_per_second": {"0"}, "max_in_flight": {"2"}, "ordering": {"none"}}); status != http.StatusBadRequest ||
		!strings.Contains(page, "Refused: rate_limit_per_second must be 1 to 1000") {
		t.Fatalf("a rate of 0: %d %s", status, page)
	}
	var settings string
	if err := f.d.Pool().QueryRow(ctx, `SELECT rate_limit_per_second || ' ' || max_in_flight || ' ' || ordering FROM webhook_subscriptions WHERE id = $1`,
		sub.ID).Scan(&settings); err != nil || settings != "5 2 per_entity" {
		t.Fatalf("stored settings %q (%v)", settings, err)
	}
	// An empty rate lifts the limit.
	if status, page := owner.post(path, url.Values{"csrf": {token}, "rate_limit_per_second": {""}, "max_in_flight": {"2"}, "ordering": {"none"}}); status != 200 ||
		!strings.Contains(page, "no rate limit, 2 at once, in no particular order") {
		t.Fatalf("lift the rate: %d %s", status, page)
	}
	entries, err := f.writes(f.d.ListAudit(ctx, f.org.ID, db.Page{Limit: 10}))
	if err != nil || len(entries) != 2 || entries[0].Action != "subscription.update" {
		t.Fatalf("audit %+v %v, want the two updates", entries, err)
	}
}

// subscription subscribes https://erp.example.com/hooks to every event.
func (f *fixture) subscription() db.CreatedSubscription {
	f.t.Helper()
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	sub, err := f.d.CreateSubscription(context.Background(), sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://erp.example.com/hooks"})
	if err != nil {
		f.t.Fatal(err)
	}
	return sub
}

// An owner skips a failed delivery from its page, once confirmed; a
// delivery already skipped offers no Skip, and the skip is audited.
func TestOwnerSkipsAFailedDelivery(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sub := f.subscription()
	var delivery string
	if err := f.d.Pool().QueryRow(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', '{}') RETURNING id)
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts)
		SELECT gen_random_uuid(), $1, e.id, $2, 'failed', 1 FROM e RETURNING id::text`, f.org.ID, sub.ID).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	owner, _ := f.signIn("owner@acme.example")
	path := "/console/deliveries/" + delivery
	_, page := owner.get(path)
	if !strings.Contains(page, `action="`+path+`/skip"`) {
		t.Fatalf("a failed delivery's page offers no Skip: %s", page)
	}
	token := csrf(t, page)
	if status, page := owner.post(path+"/skip", url.Values{"csrf": {token}}); status != 200 || !strings.Contains(page, `name="confirm" value="yes"`) {
		t.Fatalf("skip, unconfirmed: %d %s", status, page)
	}
	status, page := owner.post(path+"/skip", url.Values{"csrf": {token}, "confirm": {"yes"}})
	if status != 200 || !strings.Contains(page, "Skipped: this delivery ends without another attempt.") ||
		!strings.Contains(page, `<span class="badge w-skipped">skipped</span>`) || strings.Contains(page, `action="`+path+`/skip"`) {
		t.Fatalf("skip: %d %s", status, page)
	}
	entries, err := f.writes(f.d.ListAudit(ctx, f.org.ID, db.Page{Limit: 10}))
	if err != nil || len(entries) != 1 || entries[0].Action != "delivery.skip" {
		t.Fatalf("audit %+v %v", entries, err)
	}
}
