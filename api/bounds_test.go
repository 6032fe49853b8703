package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// maxAnswer is the most any answer but a bulk import's may weigh.
const maxAnswer = 64 << 10

// The reproduction of the issue: 8 MB of {} in a customers array (2.7
// million items). The customer after the 500th is refused as soon as it is
// read, so the answer is a short 400 at once, and the server allocates about
// what reading the body takes, not a decoded value per item.
func TestCustomersPastTheLimitAreRefusedAtTheCustomerAfterIt(t *testing.T) {
	f := newFixture(t)
	huge := `{"customers": [` + strings.Repeat(`{},`, 2_700_000) + `{}]}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	status, b := f.post("/api/v1/customers", huge)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MB body: %d in %s, %d bytes of answer, %d MB allocated", len(huge)>>20, status, elapsed, len(b), allocated>>20)
	if status != http.StatusBadRequest || !strings.Contains(errorBody(t, b), "500") {
		t.Fatalf("%d %.300s", status, b)
	}
	if len(b) > maxAnswer || elapsed > 5*time.Second || allocated > 128<<20 {
		t.Fatalf("answer of %d bytes after %s, %d MB allocated", len(b), elapsed, allocated>>20)
	}
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1`); n != 0 {
		t.Fatalf("%d customers written", n)
	}
}

// Past the item limit nothing more is read: a body whose rest is not even
// JSON answers the limit, on the REST route (400) as on an inbound post
// (413), for customers and products alike.
func TestItemLimitsAnswerBeforeTheRestOfTheBodyIsRead(t *testing.T) {
	f := newFixture(t)
	inbound := func(action domain.Action) string {
		ep, err := f.db.CreateEndpoint(context.Background(), nil, db.NewEndpoint{OrgID: f.org.ID, AsEmail: "owner@acme.example",
			Name: string(action), Action: action})
		if err != nil {
			t.Fatal(err)
		}
		return "/api/in/" + ep.Token
	}
	garbage := ` and then no more JSON`
	cases := []struct {
		name, path, body string
		status           int
		limit            string
	}{
		{"REST customers", "/api/v1/customers", `{"customers": [` + strings.Repeat(`{},`, 501) + garbage, 400, "500"},
		{"REST products", "/api/v1/products/bulk", `{"products": [` + strings.Repeat(`{},`, 10_001) + garbage, 413, "10000"},
		{"inbound customers", inbound(domain.ActionUpsertCustomers), `{"customers": [` + strings.Repeat(`{},`, 501) + garbage, 413, "500"},
		{"inbound products", inbound(domain.ActionUpsertProducts), `{"products": [` + strings.Repeat(`{},`, 1001) + garbage, 413, "1000"},
	}
	for _, c := range cases {
		status, _, b := f.do(http.MethodPost, c.path, f.key, strings.NewReader(c.body))
		if status != c.status || !strings.Contains(errorBody(t, b), c.limit) {
			t.Errorf("%s: %d %s, want %d naming %s", c.name, status, b, c.status, c.limit)
		}
	}
}

// The write routes read their bodies as they arrive, yet a body over the
// route's limit answers 413 whatever decoding it found first (here, more
// customers than a call may carry, which alone is a 400), with a declared
// length or without one (chunked), as before the body was streamed.
func TestBodyOverTheLimitAnswers413WhateverItHolds(t *testing.T) {
	f := newFixture(t)
	const limit = 8 << 20
	over := `{"customers": [` + strings.Repeat(`{"company": "A"},`, 600)
	over += strings.Repeat(" ", limit+1-len(over)-2) + "]}"
	exact := `{"customers": [{"company": "A"}]}`
	exact += strings.Repeat(" ", limit-len(exact))
	chunked := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }
	cases := []struct {
		name   string
		body   io.Reader
		status int
	}{
		{"one byte over, declared", strings.NewReader(over), http.StatusRequestEntityTooLarge},
		{"one byte over, chunked", chunked(over), http.StatusRequestEntityTooLarge},
		{"exactly the limit, chunked", chunked(exact), http.StatusOK},
	}
	for _, c := range cases {
		status, _, b := f.do(http.MethodPost, "/api/v1/customers", f.key, c.body)
		if status != c.status {
			t.Errorf("%s: %d %.200s, want %d", c.name, status, b, c.status)
		}
		if status == http.StatusRequestEntityTooLarge && !strings.Contains(errorBody(t, b), "8388608") {
			t.Errorf("%s: %s does not name the limit", c.name, b)
		}
	}
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1`); n != 1 {
		t.Fatalf("%d customers written, want the one of the body at the limit", n)
	}
}

// However broken a body is, its error answer names a few problems, each
// short, and counts the rest; a bulk import's row reasons are short too.
func TestErrorAnswersStaySmallWhateverTheBody(t *testing.T) {
	s := newStockFixture(t)
	long := strings.Repeat("x", 1<<20)
	unknownMembers := func(n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"kind": "adjustment", "qty": 1, "product_id": %q`, s.product)
		for i := range n {
			fmt.Fprintf(&b, `, "%s%d": 1`, strings.Repeat("y", 2000), i)
		}
		return b.String() + "}"
	}
	cases := []struct {
		name, path, body string
		status           int
	}{
		{"400 unknown fields of a movement", "/api/v1/stock/movements", unknownMembers(400), 400},
		{"a 1 MB email", "/api/v1/customers", `{"customers": [{"company": "A", "email": "` + long + `"}]}`, 400},
		{"a 1 MB field name", "/api/v1/customers", `{"customers": [{"company": "A", "` + long + `": 1}]}`, 400},
		{"a 1 MB field name in the body", "/api/v1/customers", `{"customers": [], "` + long + `": 1}`, 400},
		{"a 1 MB text", "/api/v1/requests", `{"text": "` + strings.Repeat("é", 200_000) + `"}`, 400},
	}
	for _, c := range cases {
		status, b := s.post(c.path, c.body)
		msg := errorBody(t, b)
		if status != c.status || len(b) > maxAnswer {
			t.Errorf("%s: %d with %d bytes: %.300s", c.name, status, len(b), b)
		}
		t.Logf("%s: %d bytes: %.200s", c.name, len(b), msg)
	}
	if _, b := s.post("/api/v1/stock/movements", unknownMembers(400)); !strings.Contains(string(b), "and 380 more") {
		t.Errorf("the movement's answer does not count the problems it leaves out: %.500s", b)
	}

	var rows []string
	long = long[:256<<10]
	for _, row := range []string{
		`{"sku": "A", "title": "t", "currency": "` + long + `"}`,
		`{"sku": "A", "title": "t", "status": "` + long + `"}`,
		`{"sku": "A", "title": "t", "` + long + `": 1}`,
		`{"sku": "A", "title": "t", "attrs": {"n": 1` + strings.Repeat("0", 256<<10) + `}}`,
	} {
		rows = append(rows, strings.Repeat(row+",", 10))
	}
	status, b := s.post("/api/v1/products/bulk", `{"products": [`+strings.Join(rows, "")+`{"sku": "OK", "title": "fine"}]}`)
	var a bulkAnswer
	if err := json.Unmarshal(b, &a); status != 200 || err != nil || len(a.Errors) != 40 || a.Upserted != 1 {
		t.Fatalf("bulk: %d %.500s", status, b)
	}
	for _, e := range a.Errors {
		if len(e.Reason) > 300 {
			t.Errorf("row %d: a reason of %d bytes: %.200s", e.Index, len(e.Reason), e.Reason)
		}
	}
}
