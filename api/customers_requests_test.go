package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// customerAnswer is the answer of POST /api/v1/customers.
type customerAnswer struct{ Created, Updated int }

func (f *fixture) customers(body string) (int, customerAnswer, string) {
	f.t.Helper()
	status, b := f.post("/api/v1/customers", body)
	var a customerAnswer
	_ = json.Unmarshal(b, &a)
	return status, a, string(b)
}

func TestCustomersAreMatchedByExternalIDThenDomain(t *testing.T) {
	f := newFixture(t)
	f.seed(`{"customers": [
		{"company": "Acme Ltd", "email_domain": "acme.example", "external_refs": {"external_id": "ERP-1"}},
		{"company": "Beta GmbH", "email_domain": "beta.example"},
		{"company": "Gamma plc", "email_domain": "gamma.example"}]}`)
	status, a, body := f.customers(`{"customers": [
		{"company": "Acme Limited", "external_id": "ERP-1", "email": "buyer@beta.example"},
		{"company": "Beta Group", "email": "Ann@Beta.example", "phone": "+44 20 7946 0000"},
		{"company": "Delta", "email": "delta@gmail.com"},
		{"company": "Delta", "email": "delta@gmail.com"},
		{"company": "Gamma New", "external_id": "NEW-9", "email": "x@gamma.example"},
		{"company": "Epsilon", "phone": "0161 496 0000"}]}`)
	if status != 200 || a.Created != 3 || a.Updated != 3 {
		t.Fatalf("%d %s", status, body)
	}
	check := func(sql string, want int) {
		t.Helper()
		if n := f.count(sql); n != want {
			t.Errorf("%s: %d, want %d", sql, n, want)
		}
	}
	// external_id wins over the email's domain (beta.example).
	check(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'Acme Limited' AND external_refs->>'external_id' = 'ERP-1'`, 1)
	check(`SELECT count(*) FROM customer_contacts c JOIN customers x ON x.id = c.customer_id WHERE c.org_id = $1 AND x.company = 'Acme Limited' AND c.email = 'buyer@beta.example'`, 1)
	// Matched by domain, with the email and phone as a contact.
	check(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'Beta Group'`, 1)
	check(`SELECT count(*) FROM customer_contacts WHERE org_id = $1 AND email = 'ann@beta.example' AND phone = '+44 20 7946 0000' AND is_primary`, 1)
	// gmail.com never matches: the same free-mail customer twice is two customers.
	check(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'Delta' AND email_domain IS NULL`, 2)
	// An unknown external_id falls back to the domain and is recorded there.
	check(`SELECT count(*) FROM customers WHERE org_id = $1 AND company = 'Gamma New' AND external_refs->>'external_id' = 'NEW-9'`, 1)
	check(`SELECT count(*) FROM customers WHERE org_id = $1`, 6)
	check(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'customer.created'`, 3)
	check(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'customer.updated'`, 3)

	// Retrying with external ids and business emails creates nothing new.
	_, again, _ := f.customers(`{"customers": [{"company": "Acme Limited", "external_id": "ERP-1"}, {"company": "Beta Group", "email": "ann@beta.example"}]}`)
	if again.Created != 0 || again.Updated != 2 {
		t.Fatalf("retry %+v", again)
	}
	// The retry changed nothing: no customer.updated for it.
	check(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'customer.updated'`, 3)
	// A new phone for a known contact is a change.
	f.customers(`{"customers": [{"company": "Beta Group", "email": "ann@beta.example", "phone": "+44 20 7946 0001"}]}`)
	check(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'customer.updated'`, 4)
	// A customer sent with neither external_id nor email is created again.
	_, noKey, _ := f.customers(`{"customers": [{"company": "Epsilon", "phone": "0161 496 0000"}]}`)
	if noKey.Created != 1 {
		t.Fatalf("no external_id nor email: %+v", noKey)
	}
}

func TestCustomersRejectAnInvalidEntryWithoutWritingAny(t *testing.T) {
	f := newFixture(t)
	cases := map[string]string{
		`{"customers": [{"company": "Fine"}, {"company": ""}]}`:                 "customers[1]",
		`{"customers": [{"company": "Fine"}, {"company": "X", "email": "no"}]}`: "customers[1]",
		`{"customers": [{"company": "Fine"}, {"email": "a@b.example"}]}`:        "customers[1]",
		`{"customers": "x"}`: "customers",
		`{}`:                 "customers",
	}
	for body, want := range cases {
		status, _, b := f.customers(body)
		if status != 400 || !strings.Contains(b, want) {
			t.Errorf("%s: %d %s", body, status, b)
		}
	}
	var many strings.Builder
	many.WriteString(`{"customers": [`)
	for i := range 501 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"company": "C%d"}`, i)
	}
	many.WriteString("]}")
	if status, _, b := f.customers(many.String()); status != 400 || !strings.Contains(b, "500") {
		t.Errorf("501 customers: %d %s", status, b)
	}
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1`); n != 0 {
		t.Fatalf("%d customers written by rejected calls", n)
	}
}

func TestCreateRequest(t *testing.T) {
	f := newFixture(t)
	status, b := f.post("/api/v1/requests", `{"text": "\n  Please quote 500 x M8 bolts, A2 stainless\nDelivery to Leeds"}`)
	if status != 201 {
		t.Fatalf("%d %s", status, b)
	}
	var r struct{ ID, Title, URL string }
	_ = json.Unmarshal(b, &r)
	if r.Title != "Please quote 500 x M8 bolts, A2 stainless" || r.URL != "http://localhost/ai/requests/"+r.ID {
		t.Fatalf("answer %s", b)
	}
	_, _, detail := f.do("GET", "/api/v1/requests/"+r.ID, f.key, nil)
	var thread domain.RequestDetail
	_ = json.Unmarshal(detail, &thread)
	var blocks []map[string]any
	_ = json.Unmarshal(thread.Messages[0].Blocks, &blocks)
	if len(thread.Messages) != 1 || thread.Messages[0].Role != domain.RoleUser || blocks[0]["type"] != "text" ||
		!strings.HasPrefix(blocks[0]["text"].(string), "\n  Please quote") {
		t.Fatalf("thread %s", detail)
	}
	if n := f.count(`SELECT count(*) FROM request_threads r JOIN users u ON u.id = r.created_by WHERE r.org_id = $1 AND u.role = 'owner'`); n != 1 {
		t.Fatal("the request is not attributed to the owner")
	}
	if n := f.count(`SELECT count(*) FROM usage_events WHERE org_id = $1`); n != 0 {
		t.Fatalf("opening a request drew %d usage events", n)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'request.created'`); n != 1 {
		t.Fatal("no request.created event")
	}
	// Limits count characters, not bytes.
	if status, b := f.post("/api/v1/requests", fmt.Sprintf(`{"text": %q, "title": %q}`, strings.Repeat("é", 100000), strings.Repeat("ü", 200))); status != 201 {
		t.Fatalf("100000 characters of text and 200 of title: %d %s", status, b)
	}
	for name, body := range map[string]string{
		"text too long":  fmt.Sprintf(`{"text": %q}`, strings.Repeat("a", 100001)),
		"title too long": fmt.Sprintf(`{"text": "x", "title": %q}`, strings.Repeat("ü", 201)),
		"no text":        `{"title": "x"}`,
		"blank text":     `{"text": "   "}`,
	} {
		if status, b := f.post("/api/v1/requests", body); status != 400 {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
	// An organisation without an owner cannot attribute a request: 422.
	orphan, _, _ := f.db.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "No owner"})
	_, key, _ := f.db.CreateAPIKey(context.Background(), orphan.ID, "k", domain.AllScopes)
	status, _, b = f.do("POST", "/api/v1/requests", key, strings.NewReader(`{"text": "hello"}`))
	if status != 422 || !strings.Contains(errorBody(t, b), "owner") {
		t.Fatalf("no owner: %d %s", status, b)
	}
	var threads int
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM request_threads WHERE org_id = $1`, orphan.ID).Scan(&threads)
	if threads != 0 {
		t.Fatal("a thread was written for an organisation without owner")
	}
}
