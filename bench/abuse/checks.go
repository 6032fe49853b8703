package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/signature"

	"github.com/commerce-integration/commerce/bench/internal/procs"
)

// Answers the checks allow.
var (
	refusedBody   = []int{400, 413, 422}
	anyBodyAnswer = []int{200, 201, 202, 400, 409, 413, 422}
	// inboundAccepted is a valid post: applied or unchanged (200), or still
	// running or parked (202).
	inboundAccepted = []int{200, 202}
	// inboundStateful is a valid post naming a record whose state may not
	// allow it (409) or whose values the record refuses (422).
	inboundStateful = []int{200, 202, 409, 422}
)

// actions are the inbound actions, in the order the table sends them.
var actions = []string{"create_request", "upsert_customers", "upsert_products", "erp_order_status",
	"order_invoice", "purchase_order_ack", "supplier_invoice", "delivery_status"}

// actionField is each action's main member, where the nested and malformed
// values go.
var actionField = map[string]string{
	"create_request": "text", "upsert_customers": "customers", "upsert_products": "products",
	"erp_order_status": "order_ref", "order_invoice": "invoice_ref", "purchase_order_ack": "lines",
	"supplier_invoice": "invoiced_qty", "delivery_status": "delivery_ref",
}

// round is every check once: the limit-size bodies first, so that the
// clients send them at the same moment, then the rest.
func (s *suite) round(r int) []job {
	var jobs []job
	jobs = append(jobs, s.writeJobs()...)
	jobs = append(jobs, s.inboundJobs()...)
	jobs = append(jobs, s.scenarioJobs(r)...)
	jobs = append(jobs, s.malformedJobs()...)
	jobs = append(jobs, s.queryJobs()...)
	jobs = append(jobs, s.headerJobs()...)
	jobs = append(jobs, s.cursorJobs()...)
	return jobs
}

func (s *suite) times(n int, j func() job) []job {
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i] = j()
	}
	return jobs
}

// upserted checks a bulk answer wrote n rows and refused none.
func upserted(n int) func(a *answer) error {
	return func(a *answer) error {
		var out struct {
			Upserted int               `json:"upserted"`
			Errors   []json.RawMessage `json:"errors"`
		}
		if err := a.decode(&out); err != nil {
			return err
		}
		if out.Upserted != n || len(out.Errors) != 0 {
			return fmt.Errorf("upserted %d with %d row errors, want %d and none", out.Upserted, len(out.Errors), n)
		}
		return nil
	}
}

// writeJobs sends each REST write route its worst case at its limit, and
// the smallest body past it.
func (s *suite) writeJobs() []job {
	n := s.copies()
	post := func(what, path string, body []byte, want ...int) probe {
		return probe{what: what, method: http.MethodPost, url: s.api(path), key: s.key(), body: body, want: want}
	}
	over := func(what, path string, body []byte, want ...int) probe {
		p := post(what, path, body, want...)
		p.raw, p.tail = true, []byte(" ")
		return p
	}
	var jobs []job
	// The worst cases are sent one byte under their limits, so that they
	// are read and decoded whole whatever the server makes of a body of
	// exactly the limit (checked on its own below).
	bulk := s.check("bulk: 10,000 rows in 32 MB")
	jobs = append(jobs, s.times(n, func() job {
		p := post("10,000 rows in 32 MB", "/products/bulk", under(s.bodies.bulk), 200)
		p.then = upserted(bulkRows)
		return s.one(bulk, p)
	})...)
	customers := s.check("customers: 500 at their longest in 8 MB")
	jobs = append(jobs, s.times(n, func() job {
		return s.one(customers, post("500 customers at their longest", "/customers", under(s.bodies.customers), 200))
	})...)
	empty := s.check("customers: 2.7 million {} in 8 MB")
	jobs = append(jobs, s.times(n, func() job {
		body := under(s.bodies.customersEmpty)
		return s.one(empty, post(fmt.Sprintf("%d bytes of {}", len(body)), "/customers", body, refusedBody...))
	})...)
	request := s.check("requests: 100,000 characters in 2 MB")
	jobs = append(jobs, s.times(n, func() job {
		return s.one(request, post("100,000 escaped characters", "/requests", under(s.bodies.request), 201))
	})...)
	movement := s.check("stock movements: 1 MB")
	movementBody := func(size int) []byte {
		return movementAt(s.ids["demo "+stockedSKU], fmt.Sprintf("abuse-%d", s.seq.Add(1)), 1, size)
	}
	jobs = append(jobs, s.times(n, func() job {
		return s.one(movement, post("a movement padded to 1 MB", "/stock/movements", movementBody(movementLimit-1), 201))
	})...)

	// README: "A body over its route's limit ... answers 413": a body of
	// exactly the limit is not over it.
	exact := s.check("write routes: a body of exactly the limit")
	jobs = append(jobs,
		s.one(exact, post("bulk: 32 MB exactly", "/products/bulk", s.bodies.bulk, 200)),
		s.one(exact, post("customers: 8 MB exactly", "/customers", s.bodies.customers, 200)),
		s.one(exact, post("requests: 2 MB exactly", "/requests", s.bodies.request, 201)),
		s.one(exact, post("stock movements: 1 MB exactly", "/stock/movements", movementBody(movementLimit), 201)))

	past := s.check("write routes: one byte or one row past the limit")
	jobs = append(jobs, s.times(n, func() job {
		return s.one(past, over("bulk: 32 MB + 1 byte", "/products/bulk", s.bodies.bulk, 413))
	})...)
	jobs = append(jobs,
		s.one(past, post("bulk: 10,001 rows", "/products/bulk", s.bodies.bulk10001, 413)),
		s.one(past, over("customers: 8 MB + 1 byte", "/customers", s.bodies.customersEmpty, 413)),
		s.one(past, post("customers: 501", "/customers", s.bodies.customers501, 400, 413)),
		s.one(past, over("requests: 2 MB + 1 byte", "/requests", s.bodies.request, 413)),
		s.one(past, over("stock movements: 1 MB + 1 byte", "/stock/movements",
			movementAt(s.ids["demo "+stockedSKU], "abuse-over", 1, movementLimit), 413)))

	slow := s.check("bulk: slow upload")
	p := post(fmt.Sprintf("%d rows sent over %s", s.size.SlowRows, s.size.SlowFor), "/products/bulk", s.bodies.slow, 200)
	p.slow, p.then = s.size.SlowFor, upserted(s.size.SlowRows)
	jobs = append(jobs, s.one(slow, p))

	reuse := s.check("stock movements: key reused with another body")
	jobs = append(jobs, func(ctx context.Context) {
		key := fmt.Sprintf("abuse-reuse-%d", s.seq.Add(1))
		first := movementAt(s.ids["demo "+stockedSKU], key, 1, 0)
		if a := s.send(ctx, reuse, post("first use", "/stock/movements", first, 201)); a == nil || a.status != 201 {
			return
		}
		s.send(ctx, reuse, post("same key, another qty", "/stock/movements", movementAt(s.ids["demo "+stockedSKU], key, 2, 0), 409))
	})

	category := s.check("bulk: 3,000-character category beside good rows")
	jobs = append(jobs, func(ctx context.Context) {
		good := fmt.Sprintf("ABUSE-LC-%d", s.seq.Add(1))
		p := post("rows 0 and 2 good, row 1 with a 3,000-character category", "/products/bulk", longCategoryRows(good), 200)
		p.then = func(a *answer) error {
			var out struct {
				Upserted int `json:"upserted"`
				Errors   []struct {
					Index int `json:"index"`
				} `json:"errors"`
			}
			if err := a.decode(&out); err != nil {
				return err
			}
			// The long row is refused as that row's error, or written.
			refused := out.Upserted == 2 && len(out.Errors) == 1 && out.Errors[0].Index == 1
			if !refused && (out.Upserted != 3 || len(out.Errors) != 0) {
				return fmt.Errorf("upserted %d with errors %+v, want 2 and row 1's, or 3", out.Upserted, out.Errors)
			}
			return s.productsExist(ctx, good+"-A", good+"-B")
		}
		s.send(ctx, category, p)
	})
	return jobs
}

// under is a padded body less its last space: one byte under its limit.
func under(body []byte) []byte { return body[:len(body)-1] }

// longCategoryRows are three products, the middle one with a category of
// 3,000 random letters: random, so that the value stays too long for an
// index entry once compressed.
func longCategoryRows(sku string) []byte {
	return fmt.Appendf(nil, `{"products":[{"sku":"%s-A","title":"good"},{"sku":"%s-X","title":"long","category":"%s"},{"sku":"%s-B","title":"good"}]}`,
		sku, sku, randomLetters(categoryLong), sku)
}

func randomLetters(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[int(b[i])%62]
	}
	return string(b)
}

// productsExist checks the demo organisation has every SKU.
func (s *suite) productsExist(ctx context.Context, skus ...string) error {
	for _, sku := range skus {
		var page struct {
			Products []json.RawMessage `json:"products"`
		}
		if err := s.getJSON(ctx, s.key(), "/products?sku="+sku, &page); err != nil {
			return err
		}
		if len(page.Products) != 1 {
			return fmt.Errorf("good row %s was not written", sku)
		}
	}
	return nil
}

// inbound is a post to the demo organisation's unsigned endpoint of action.
func (s *suite) inbound(action, what string, body []byte, want ...int) probe {
	return probe{what: action + ": " + what, method: http.MethodPost, url: s.srv.state.InboundURLs[action], body: body, want: want}
}

// inboundJobs sends each inbound action a body at the 1 MB limit (the
// upserts at their count limits), the smallest bodies past the limits, and
// 1 MB of empty rows.
func (s *suite) inboundJobs() []job {
	n := s.copies()
	var jobs []job
	at := s.check("inbound: each action at 1 MB (500 customers, 1000 products)")
	for _, action := range actions {
		want := inboundStateful
		if action == "create_request" || strings.HasPrefix(action, "upsert_") {
			want = inboundAccepted
		}
		jobs = append(jobs, s.times(n, func() job { return s.one(at, s.inbound(action, "1 MB", s.bodies.inbound[action], want...)) })...)
	}
	past := s.check("inbound: past 1 MB, 500 customers or 1000 products")
	for _, action := range actions {
		p := s.inbound(action, "1 MB + 1 byte", s.bodies.inbound[action], 413)
		p.raw, p.tail = true, []byte(" ")
		jobs = append(jobs, s.one(past, p))
	}
	jobs = append(jobs,
		s.one(past, s.inbound("upsert_customers", "501 customers", s.bodies.inboundCustomers501, 413)),
		s.one(past, s.inbound("upsert_products", "1001 products", s.bodies.inboundProducts1001, 413)))
	empty := s.check("inbound: 1 MB of {} rows")
	jobs = append(jobs,
		s.one(empty, s.inbound("upsert_customers", "1 MB of {}", s.bodies.inboundCustEmpty, 400, 413)),
		s.one(empty, s.inbound("upsert_products", "1 MB of {}", s.bodies.inboundProdEmpty, 400, 413)))

	category := s.check("inbound: 3,000-character category beside good rows")
	jobs = append(jobs, func(ctx context.Context) {
		good := fmt.Sprintf("ABUSE-ILC-%d", s.seq.Add(1))
		p := s.inbound("upsert_products", "rows 0 and 2 good, row 1 with a 3,000-character category", longCategoryRows(good), 200)
		p.then = func(*answer) error { return s.productsExist(ctx, good+"-A", good+"-B") }
		s.send(ctx, category, p)
	})
	return jobs
}

// writeRoute is a route that takes a JSON body.
type writeRoute struct {
	name, url, key, field string
}

func (s *suite) writeRoutes() []writeRoute {
	routes := []writeRoute{
		{"POST /products/bulk", s.api("/products/bulk"), s.key(), "products"},
		{"POST /customers", s.api("/customers"), s.key(), "customers"},
		{"POST /requests", s.api("/requests"), s.key(), "text"},
		{"POST /stock/movements", s.api("/stock/movements"), s.key(), "qty"},
	}
	for _, action := range actions {
		routes = append(routes, writeRoute{"inbound " + action, s.srv.state.InboundURLs[action], "", actionField[action]})
	}
	return routes
}

// malformedJobs sends every JSON route malformed and deeply nested bodies.
func (s *suite) malformedJobs() []job {
	var jobs []job
	for _, kind := range []struct {
		check  string
		bodies func(string) []malformedBody
	}{{"malformed JSON", malformedBodies}, {"deeply nested JSON", nestedBodies}} {
		c := s.check(kind.check)
		for _, r := range s.writeRoutes() {
			for _, b := range kind.bodies(r.field) {
				want := refusedBody
				if b.lenient {
					want = anyBodyAnswer
				}
				jobs = append(jobs, s.one(c, probe{what: r.name + ", " + b.name, method: http.MethodPost, url: r.url,
					key: r.key, body: b.body, want: want}))
			}
		}
	}
	return jobs
}

// queryJobs puts invalid UTF-8 in every query parameter of every GET route
// of the OpenAPI document, in every path id, and raw in the request line.
func (s *suite) queryJobs() []job {
	var jobs []job
	query := s.check("invalid UTF-8 in query parameters")
	path := s.check("invalid UTF-8 in path ids")
	for _, r := range s.routes {
		concrete := strings.ReplaceAll(r.path, "{id}", uuid.NewString())
		for _, q := range r.query {
			for _, v := range s.size.UTF8 {
				jobs = append(jobs, s.one(query, probe{what: "GET " + r.path + "?" + q + "=" + v, method: http.MethodGet,
					url: s.base + concrete + "?" + q + "=" + v, key: s.key(), want: []int{400}}))
			}
		}
		if r.paged() {
			jobs = append(jobs, s.one(query, probe{what: "GET " + r.path + "?limit=1&%FF=1", method: http.MethodGet,
				url: s.base + r.path + "?limit=1&%FF=1", key: s.key(), want: []int{200, 400}}))
		}
		if strings.Contains(r.path, "{id}") {
			for _, v := range s.size.UTF8 {
				p := strings.ReplaceAll(r.path, "{id}", v)
				jobs = append(jobs, s.one(path, probe{what: "GET " + p, method: http.MethodGet, url: s.base + p,
					key: s.key(), want: []int{400, 404}}))
			}
		}
	}
	for _, v := range s.size.UTF8 {
		jobs = append(jobs, s.one(path, probe{what: "POST /api/in/in_" + v, method: http.MethodPost,
			url: s.base + "/api/in/in_" + v, body: []byte(`{}`), want: []int{400, 404}}))
	}
	raw := s.check("raw invalid bytes in the request line")
	for _, target := range []string{"/api/v1/products?search=\xff\xfe", "/api/v1/customers?search=\xc3", "/api/v1/orders/\xff"} {
		jobs = append(jobs, s.one(raw, probe{what: fmt.Sprintf("GET %q", target), method: http.MethodGet, url: s.base + "/",
			raw: true, target: target, key: s.key(), want: []int{400, 404}, plain: true}))
	}
	return jobs
}

// headerJobs sends oversized headers and request lines.
func (s *suite) headerJobs() []job {
	c := s.check("oversized headers and request lines")
	big := func(n int) string { return strings.Repeat("a", n) }
	many := http.Header{}
	for i := range 5000 {
		many.Set(fmt.Sprintf("X-Abuse-%d", i), big(100))
	}
	signed := s.signed["erp_order_status"]
	return []job{
		s.one(c, probe{what: "a 2 MB header", method: http.MethodGet, url: s.base + "/healthz", raw: true,
			header: http.Header{"X-Abuse": {big(2 << 20)}}, want: []int{400, 431}, plain: true}),
		s.one(c, probe{what: "5,000 headers", method: http.MethodGet, url: s.api("/products?limit=1"), key: s.key(),
			header: many, want: []int{200, 400, 431}, plain: true}),
		s.one(c, probe{what: "a 100 KB bearer key", method: http.MethodGet, url: s.api("/products"), key: big(100 << 10),
			want: []int{401}}),
		s.one(c, probe{what: "a 100 KB signature", method: http.MethodPost, url: signed.URL,
			header: http.Header{signature.Header: {"t=1,v1=" + strings.Repeat("0", 100<<10)}},
			body:   []byte(`{"order_ref":"` + replayOrder + `","status":"cancelled"}`), want: []int{401}}),
		s.one(c, probe{what: "a 100 KB Idempotency-Key", method: http.MethodPost, url: s.srv.state.InboundURLs["create_request"],
			header: http.Header{"Idempotency-Key": {big(100 << 10)}}, body: []byte(`{"text":"abuse long key","external_ref":"abuse-long-key"}`),
			want: []int{200, 202, 400, 422}}),
		s.one(c, probe{what: "a 900 KB query", method: http.MethodGet, url: s.api("/products?search=" + big(900<<10)),
			key: s.key(), want: []int{400, 414, 431}, plain: true}),
		s.one(c, probe{what: "a 1 MB path", method: http.MethodGet, url: s.base + "/", raw: true,
			target: "/api/v1/orders/" + big(1<<20), key: s.key(), want: []int{400, 404, 414, 431}, plain: true}),
	}
}

// cursorJobs sends every paged list genuine, forged, altered, truncated,
// foreign and misplaced cursors.
func (s *suite) cursorJobs() []job {
	var jobs []job
	genuine := s.check("cursors: genuine (control)")
	forged := s.check("cursors: forged or altered")
	truncated := s.check("cursors: truncated")
	foreign := s.check("cursors: another organisation's")
	misplaced := s.check("cursors: another list's or filter's")
	get := func(c *check, what, path, cursor string, want int) job {
		return s.one(c, probe{what: what + " on " + path, method: http.MethodGet,
			url: s.base + path + "?limit=1&cursor=" + cursor, key: s.key(), want: []int{want}})
	}
	var lists []string
	for _, r := range s.routes {
		if r.paged() {
			lists = append(lists, r.path)
		}
	}
	for i, list := range lists {
		mine, theirs := s.cursors[list][0], s.cursors[list][1]
		jobs = append(jobs,
			get(genuine, "its own cursor", list, mine, 200),
			get(forged, "random bytes", list, randomCursor(len(mine)), 400),
			get(forged, "one bit flipped", list, flipBit(mine), 400),
			get(forged, "MAC zeroed", list, zeroMAC(mine), 400),
			get(forged, "100 KB", list, strings.Repeat("A", 100<<10), 400),
			get(forged, "not base64", list, "%21%21%21", 400),
			get(truncated, "half", list, mine[:len(mine)/2], 400),
			get(truncated, "less one character", list, mine[:len(mine)-1], 400),
			get(truncated, "less its MAC", list, dropMAC(mine), 400),
			get(foreign, "the other organisation's cursor", list, theirs, 400),
			get(misplaced, "the cursor of "+lists[(i+1)%len(lists)], list, s.cursors[lists[(i+1)%len(lists)]][0], 400),
		)
	}
	jobs = append(jobs,
		s.one(misplaced, probe{what: "a search=M cursor with search=N", method: http.MethodGet,
			url: s.api("/products?search=N&limit=1&cursor=" + s.searchCursor), key: s.key(), want: []int{400}}),
		s.one(misplaced, probe{what: "a search=M cursor without search", method: http.MethodGet,
			url: s.api("/products?limit=1&cursor=" + s.searchCursor), key: s.key(), want: []int{400}}))
	return jobs
}

// macSize is the length of a cursor's MAC (internal/cursor).
const macSize = 16

func randomCursor(n int) string {
	b := make([]byte, max(macSize+1, n*3/4))
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func flipBit(c string) string {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return c + "A"
	}
	b[len(b)/3] ^= 1
	return base64.RawURLEncoding.EncodeToString(b)
}

func zeroMAC(c string) string {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) <= macSize {
		return c
	}
	clear(b[len(b)-macSize:])
	return base64.RawURLEncoding.EncodeToString(b)
}

func dropMAC(c string) string {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) <= macSize {
		return c[:1]
	}
	return base64.RawURLEncoding.EncodeToString(b[:len(b)-macSize])
}

// scenarioJobs are the checks made of several steps in order: a signed post
// sent again, an Idempotency-Key reused, and replays that must be refused.
func (s *suite) scenarioJobs(r int) []job {
	return []job{
		func(ctx context.Context) { s.signedRepeat(ctx, r) },
		func(ctx context.Context) { s.idempotencyKey(ctx) },
		func(ctx context.Context) { s.replayRefused401(ctx) },
		func(ctx context.Context) { s.replayRefused413(ctx) },
		func(ctx context.Context) { s.replayPausedOrDeleted(ctx) },
	}
}

// sameAnswer checks an answer repeats first's status and body, marked
// Idempotent-Replayed.
func sameAnswer(first *answer) func(a *answer) error {
	return func(a *answer) error {
		var x, y map[string]any
		if json.Unmarshal(first.body, &x) != nil || json.Unmarshal(a.body, &y) != nil {
			return fmt.Errorf("answered %s, want the first answer %s", excerpt(a.body), excerpt(first.body))
		}
		var changed []string
		for k := range mergeKeys(x, y) {
			if !reflect.DeepEqual(x[k], y[k]) {
				changed = append(changed, k)
			}
		}
		if len(changed) > 0 {
			slices.Sort(changed)
			return fmt.Errorf("answered another body than the first answer (%s differ)", strings.Join(changed, ", "))
		}
		if a.header.Get("Idempotent-Replayed") != "true" {
			return fmt.Errorf("no Idempotent-Replayed: true header")
		}
		return nil
	}
}

func mergeKeys(maps ...map[string]any) map[string]bool {
	keys := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			keys[k] = true
		}
	}
	return keys
}

// signedRepeat posts a signed delivery move to failed, then one back to in
// transit, then the first post again as captured: it must answer the
// first answer and leave the delivery in transit.
func (s *suite) signedRepeat(ctx context.Context, r int) {
	c := s.check("signed post sent again")
	ep := s.signed["delivery_status"]
	signed := func(what, status string, want ...int) probe {
		body := fmt.Appendf(nil, `{"delivery_ref":%q,"status":%q,"tracking_url":"https://track.example.com/abuse/%d-%s"}`,
			repeatDelivery, status, r, status)
		return probe{what: what, method: http.MethodPost, url: ep.URL, body: body, want: want,
			header: http.Header{signature.Header: {signature.Sign(*ep.Secret, time.Now(), body)}}}
	}
	failed := signed("signed post: failed", "failed", 200)
	first := s.send(ctx, c, failed)
	if first == nil || first.status != 200 {
		return
	}
	if a := s.send(ctx, c, signed("signed post: back in transit", "in_transit", 200)); a == nil || a.status != 200 {
		return
	}
	again := failed
	again.what, again.want, again.then = "the failed post sent again", []int{first.status}, sameAnswer(first)
	s.send(ctx, c, again)
	s.statusStays(ctx, c, "/deliveries/", repeatDelivery, "in_transit")
}

// statusStays fails c unless the record ref, read at path+its id, is still
// in status want.
func (s *suite) statusStays(ctx context.Context, c *check, path, ref, want string) {
	var r struct {
		Status string `json:"status"`
	}
	if err := s.getJSON(ctx, s.key(), path+s.ids[ref], &r); err != nil {
		c.fail("reading %s: %v", ref, err)
	} else if r.Status != want {
		c.fail("%s is %s afterwards, want %s", ref, r.Status, want)
	}
}

// idempotencyKey posts a request with an Idempotency-Key, the same post
// again (the first answer, one request), and the key with another body
// (422).
func (s *suite) idempotencyKey(ctx context.Context) {
	c := s.check("Idempotency-Key repeated, and with another body")
	key := "abuse-" + procs.RandomHex(8)
	text := "abuse idempotency " + key
	post := func(what, body string, want ...int) probe {
		p := s.inbound("create_request", what, []byte(body), want...)
		p.header = http.Header{"Idempotency-Key": {key}}
		return p
	}
	body := fmt.Sprintf(`{"text":%q}`, text)
	first := s.send(ctx, c, post("first post", body, inboundAccepted...))
	if first == nil || first.status >= 300 {
		return
	}
	again := post("the same post again", body, first.status)
	again.then = sameAnswer(first)
	s.send(ctx, c, again)
	s.send(ctx, c, post("the key with another body", fmt.Sprintf(`{"text":%q}`, text+" changed"), 422))
	if n, err := s.countRequests(ctx, text); err != nil {
		c.fail("listing requests: %v", err)
	} else if n != 1 {
		c.fail("the key's post opened %d requests, want 1", n)
	}
}

// countRequests counts the demo organisation's requests titled title.
func (s *suite) countRequests(ctx context.Context, title string) (int, error) {
	n, cursor := 0, ""
	for {
		var page struct {
			Requests []struct {
				Title string `json:"title"`
			} `json:"requests"`
			Next *string `json:"next_cursor"`
		}
		path := "/requests?limit=200"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if err := s.getJSON(ctx, s.key(), path, &page); err != nil {
			return 0, err
		}
		for _, r := range page.Requests {
			if r.Title == title {
				n++
			}
		}
		if page.Next == nil {
			return n, nil
		}
		cursor = *page.Next
	}
}

// replay runs `commerce receipts replay` on the receipt of a, which must be
// refused: a non-zero exit, with a reason.
func (s *suite) replay(ctx context.Context, c *check, what string, a *answer) {
	id := a.header.Get("X-Receipt-Id")
	if id == "" {
		c.fail("%s: the answer names no receipt (X-Receipt-Id)", what)
		return
	}
	start := time.Now()
	out, errOut, code, err := s.srv.cli(ctx, "receipts", "replay", id)
	if err != nil {
		c.record("cli error", 0, time.Since(start))
		c.fail("%s: commerce receipts replay: %v", what, err)
		return
	}
	c.record(fmt.Sprintf("replay exit %d", code), int64(len(out)+len(errOut)), time.Since(start))
	switch {
	case code == 0:
		c.fail("%s: commerce receipts replay carried it out: %s", what, excerpt([]byte(out)))
	case strings.TrimSpace(errOut) == "":
		c.fail("%s: commerce receipts replay refused with no reason", what)
	}
}

// replayRefused401 posts a cancellation without its signature to a signed
// endpoint (401), replays it, and checks the order is not cancelled.
func (s *suite) replayRefused401(ctx context.Context) {
	c := s.check("replay of a post refused 401")
	body := fmt.Appendf(nil, `{"order_ref":%q,"status":"cancelled"}`, replayOrder)
	a := s.send(ctx, c, probe{what: "unsigned cancellation to a signed endpoint", method: http.MethodPost,
		url: s.signed["erp_order_status"].URL, body: body, want: []int{401}})
	if a == nil || a.status != 401 {
		return
	}
	s.replay(ctx, c, "the 401 receipt", a)
	s.statusStays(ctx, c, "/orders/", replayOrder, "confirmed")
}

// replayRefused413 replays a post refused for its size.
func (s *suite) replayRefused413(ctx context.Context) {
	c := s.check("replay of a post refused 413")
	p := s.inbound("erp_order_status", "1 MB + 1 byte", s.bodies.inbound["erp_order_status"], 413)
	p.raw, p.tail = true, []byte(" ")
	if a := s.send(ctx, c, p); a != nil && a.status == 413 {
		s.replay(ctx, c, "the 413 receipt", a)
	}
}

// replayPausedOrDeleted replays posts of an endpoint that was paused, and
// of one that was deleted, after they were applied.
func (s *suite) replayPausedOrDeleted(ctx context.Context) {
	c := s.check("replay on a paused or deleted endpoint")
	body := fmt.Appendf(nil, `{"order_ref":%q,"status":"processing"}`, limitOrder)
	for _, state := range []string{"pause", "delete"} {
		var e endpoint
		if err := s.srv.cliJSON(ctx, &e, "endpoint", "create", "--org", s.srv.state.OrgID, "--as", "owner@demo.example",
			"--name", "abuse "+state, "--action", "erp_order_status"); err != nil {
			c.fail("creating an endpoint: %v", err)
			return
		}
		a := s.send(ctx, c, probe{what: "a post before " + state, method: http.MethodPost, url: e.URL, body: body,
			want: inboundStateful})
		if a == nil || a.status >= 300 {
			return
		}
		if _, errOut, code, err := s.srv.cli(ctx, "endpoint", state, e.ID); err != nil || code != 0 {
			c.fail("commerce endpoint %s: exit %d %v: %s", state, code, err, errOut)
			return
		}
		s.replay(ctx, c, "a receipt of an endpoint after "+state, a)
	}
}

// standardMethods are the methods a metric label may name, besides OTHER.
var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "OTHER"}

// metrics counts the series of /metrics (lines that are not comments) and
// lists the method labels it names.
func (s *suite) metrics(ctx context.Context) (int, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.state.MetricsURL, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("/metrics answered %d", resp.StatusCode)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, nil, err
	}
	n, methods := 0, map[string]bool{}
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if _, rest, ok := strings.Cut(line, `method="`); ok {
			m, _, _ := strings.Cut(rest, `"`)
			methods[m] = true
		}
	}
	var odd []string
	for m := range methods {
		if !slices.Contains(standardMethods, m) {
			odd = append(odd, m)
		}
	}
	return n, odd, nil
}

// madeUpMethod is a 2 KB method name, a valid HTTP token.
func madeUpMethod() string {
	b := make([]byte, 2048)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = 'A' + b[i]%26
	}
	return string(b)
}

// methodsAndSeries sends a made-up method to each target, counts the
// /metrics series, sends many more made-up methods with every client, and
// counts again: the count must not move. It runs alone, so that nothing
// else adds a series in between.
func (s *suite) methodsAndSeries(ctx context.Context) (before, after int) {
	c := s.check("made-up 2 KB methods")
	series := s.check("/metrics series fixed")
	targets := []probe{
		{url: s.base + "/healthz"},
		{url: s.base + "/readyz"},
		{url: s.api("/products"), key: s.key()},
		{url: s.api("/orders/" + s.ids[limitOrder]), key: s.key()},
		{url: s.srv.state.InboundURLs["erp_order_status"]},
		{url: s.base + "/nothing-here"},
	}
	probeAt := func(i int) probe {
		p := targets[i%len(targets)]
		p.method, p.want = madeUpMethod(), []int{400, 404, 405, 501}
		p.what = "a made-up method to " + strings.TrimPrefix(p.url, s.base)
		return p
	}
	for i := range targets {
		s.send(ctx, c, probeAt(i))
	}
	before, _, err := s.metrics(ctx)
	if err != nil {
		series.fail("/metrics: %v", err)
		return 0, 0
	}
	jobs := make([]job, s.size.Methods)
	for i := range jobs {
		jobs[i] = s.one(c, probeAt(i))
	}
	s.pool(ctx, jobs)
	after, odd, err := s.metrics(ctx)
	if err != nil {
		series.fail("/metrics: %v", err)
		return before, 0
	}
	series.note = fmt.Sprintf("%d, then %d after %d more made-up methods", before, after, s.size.Methods)
	if after != before {
		series.fail("%d made-up methods added %d series", s.size.Methods, after-before)
	}
	if len(odd) > 0 {
		series.fail("%d method labels outside the standard methods and OTHER, e.g. %.40s...", len(odd), odd[0])
	}
	return before, after
}

// serverStillUp checks the server still answers after everything.
func (s *suite) serverStillUp(ctx context.Context) {
	c := s.check("server up, no panic logged")
	if !s.srv.running() {
		c.fail("the server is not running")
		return
	}
	s.send(ctx, c, probe{what: "GET /healthz", method: http.MethodGet, url: s.base + "/healthz", want: []int{200}})
}

// noPanics fails the last check for each panic in the server's log.
func (s *suite) noPanics() {
	c := s.check("server up, no panic logged")
	if n, first := s.srv.panics(); n > 0 {
		c.fail("%d panics logged, the first: %.300s", n, first)
	}
}

// memoryCheck compares the server's peak resident memory with the budget.
func (s *suite) memoryCheck(rep *Report) {
	c := s.check("peak RSS under 512 MB")
	c.note = "VmHWM " + bytesText(rep.PeakRSS)
	if rep.Guarded {
		c.fail("the server passed %s of resident memory and was stopped", bytesText(memoryGuard))
	}
	if rep.PeakRSS > rssBudget {
		c.fail("peak RSS %s is over %s", bytesText(rep.PeakRSS), bytesText(rssBudget))
	}
}
