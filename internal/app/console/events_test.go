package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	guuid "github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// eventWithDelivery stores an event about an order, emitted by the
// fixture's receipt when byReceipt, created ago (a Postgres interval)
// before now, and its failed delivery to sub; it returns their ids.
func (f *fixture) eventWithDelivery(sub guuid.UUID, byReceipt bool, ago string) (event, delivery string) {
	f.t.Helper()
	var receipt *string
	if byReceipt {
		receipt = &f.receipt
	}
	if err := f.d.Pool().QueryRow(context.Background(), `
		WITH e AS (INSERT INTO events (id, org_id, type, data, receipt_id, entity_type, entity_id, created_at)
		           VALUES (gen_random_uuid(), $1, 'order.invoiced', '{"order_ref": "SO-9", "invoice_ref": "INV-9"}', $3::uuid, 'order', 'SO-9',
		                   now() - $4::interval) RETURNING id, created_at)
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, last_status_code, created_at)
		SELECT gen_random_uuid(), $1, e.id, $2, 'failed', 1, 503, e.created_at FROM e RETURNING event_id::text, id::text`,
		f.org.ID, sub, receipt, ago).Scan(&event, &delivery); err != nil {
		f.t.Fatal(err)
	}
	return event, delivery
}

// The deliveries list finds deliveries by the reference of the receipt
// whose effect emitted their event (in any case), by event, by delivery id
// and by when they were created; a filter that cannot match is a 400
// naming the value.
func TestDeliveriesAreFoundByWhatSupportKnows(t *testing.T) {
	f := newFixture(t)
	sub := f.subscription()
	_, ours := f.eventWithDelivery(sub.ID, true, "0")
	otherEvent, other := f.eventWithDelivery(sub.ID, false, "2 days")
	member, _ := f.signIn("member@acme.example")
	unknown := guuid.NewString()
	for _, c := range []struct {
		q          url.Values
		ours, them bool
	}{
		{url.Values{"ref": {"so-9"}}, true, false},
		{url.Values{"ref": {"INV-9"}}, true, false},
		{url.Values{"ref": {"SO-404"}}, false, false},
		{url.Values{"id": {other}}, false, true},
		{url.Values{"id": {other}, "status": {"succeeded"}}, false, false},
		{url.Values{"event": {otherEvent}}, false, true},
		{url.Values{"after": {"2026-01-01T00:00"}}, true, true},
		{url.Values{"after": {"2099-01-01T00:00"}}, false, false},
	} {
		status, page := member.get("/console/deliveries?" + c.q.Encode())
		listed := func(id string) bool { return strings.Contains(page, `href="/console/deliveries/`+id+`"`) }
		if status != 200 || listed(ours) != c.ours || listed(other) != c.them {
			t.Errorf("%s: %d, ours listed %v (want %v), the other %v (want %v)", c.q.Encode(), status,
				listed(ours), c.ours, listed(other), c.them)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"/console/deliveries?id=not-a-uuid", `The delivery filter names no delivery: &#34;not-a-uuid&#34; is not a delivery id.`},
		{"/console/deliveries?event=nope", `The event filter names no event: &#34;nope&#34; is not an event id.`},
		{"/console/deliveries?event=" + unknown, "The event filter names no event of this organisation: " + unknown + "."},
		{"/console/deliveries?id=" + unknown, "The delivery filter names no delivery of this organisation: " + unknown + "."},
		{"/console/deliveries?after=2026-11-02T10:00&before=2026-11-01T10:00", "From (2026-11-02 10:00 UTC) is later than To (2026-11-01 10:00 UTC): no delivery can match."},
	} {
		if status, page := member.get(c.path); status != http.StatusBadRequest || !strings.Contains(page, c.want) {
			t.Errorf("%s: %d, want 400 saying %q:\n%s", c.path, status, c.want, page)
		}
	}
}

// An event's page shows its payload, what it is about, the receipt that
// caused it (linked) and its delivery to every subscription, each named by
// its URL; deliveries and receipts link to it.
func TestEventPageShowsItsCauseAndEveryDelivery(t *testing.T) {
	f := newFixture(t)
	sub := f.subscription()
	event, delivery := f.eventWithDelivery(sub.ID, true, "0")
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	crm, err := f.d.CreateSubscription(context.Background(), sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://crm.example.com/in?token=hidden"})
	if err != nil {
		t.Fatal(err)
	}
	var second string
	if err := f.d.Pool().QueryRow(context.Background(), `
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts)
		VALUES (gen_random_uuid(), $1, $2, $3, 'succeeded', 1) RETURNING id::text`, f.org.ID, event, crm.ID).Scan(&second); err != nil {
		t.Fatal(err)
	}
	member, _ := f.signIn("member@acme.example")
	status, page := member.get("/console/events/" + event)
	if status != 200 {
		t.Fatalf("the event's page: %d %s", status, page)
	}
	for _, want := range []string{"order.invoiced", `<code class="wrap">order SO-9</code>`,
		`href="/console/receipts/` + f.receipt + `" id="event-receipt"`,
		`href="/console/deliveries/` + delivery + `"`, `href="/console/deliveries/` + second + `"`,
		"https://erp.example.com/hooks", "https://crm.example.com/in", `&#34;invoice_ref&#34;: &#34;INV-9&#34;`} {
		if !strings.Contains(page, want) {
			t.Errorf("the event's page lacks %s", want)
		}
	}
	if strings.Contains(page, "token=hidden") {
		t.Errorf("the event's page shows a subscription URL's query")
	}
	if status, _ := member.get("/console/events/" + guuid.NewString()); status != http.StatusNotFound {
		t.Errorf("an unknown event: %d", status)
	}
	for _, path := range []string{"/console/deliveries/" + delivery, "/console/deliveries", "/console/receipts/" + f.receipt} {
		if _, page := member.get(path); !strings.Contains(page, `href="/console/events/`+event+`"`) {
			t.Errorf("%s does not link to the event's page", path)
		}
	}
	if _, page := member.get("/console/deliveries/" + delivery); !strings.Contains(page, `href="/console/webhooks/`+sub.ID.String()+`"`) {
		t.Errorf("the delivery's page does not link to its subscription's page")
	}
}
