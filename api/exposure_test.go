package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/signature"
)

// The tests of this file each reproduce what a review of the exposed
// service found, and hold the answer it now gets (docs/security.md).

// A secret shown once is kept nowhere: an Idempotency-Key keeps the answer
// of creating a subscription, or of rotating its secret, without the
// secret, so a retry gets it with secret null; and both answers say no
// cache may store them.
func TestAnAnswerThatCarriesASecretIsNeverKept(t *testing.T) {
	f := newFixture(t)
	post := func(path, body, key string) (int, http.Header, map[string]any) {
		t.Helper()
		status, h, b := f.do(http.MethodPost, path, f.key, strings.NewReader(body), api.IdempotencyKeyHeader, key)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return status, h, out
	}
	const create = `{"url": "https://8.8.8.8/hooks"}`
	status, h, first := post("/api/v1/webhooks/subscriptions", create, "k1")
	secret, _ := first["secret"].(string)
	if status != http.StatusCreated || !strings.HasPrefix(secret, "whsec_") || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %v %v", status, first, h)
	}
	status, h, again := post("/api/v1/webhooks/subscriptions", create, "k1")
	if status != http.StatusCreated || h.Get(api.ReplayedHeader) != "true" || again["secret"] != nil || again["id"] != first["id"] ||
		h.Get("Cache-Control") != "no-store" {
		t.Fatalf("the retry: %d %v %v; want the same subscription with secret null, not to be stored", status, again, h)
	}
	rotatePath := "/api/v1/webhooks/subscriptions/" + first["id"].(string) + "/rotate-secret"
	status, h, rotated := post(rotatePath, `{}`, "k2")
	if status != http.StatusOK || !strings.HasPrefix(fmt.Sprint(rotated["secret"]), "whsec_") || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("rotate: %d %v", status, rotated)
	}
	if status, _, again := post(rotatePath, `{}`, "k2"); status != http.StatusOK || again["secret"] != nil {
		t.Fatalf("the rotation's retry: %d %v", status, again)
	}
	var kept int
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM api_idempotency_keys
		WHERE position('whsec_' in convert_from(response, 'UTF8')) > 0`).Scan(&kept); err != nil || kept != 0 {
		t.Fatalf("%d kept answers hold a secret (%v)", kept, err)
	}
}

// rawRequest sends head (and what body says) on a fresh connection and
// returns the status line and whether the server closed the connection
// after its answer; it gives up after wait.
func rawRequest(t *testing.T, base, head, body string, wait time.Duration) (status string, closed bool) {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(wait))
	if _, err := conn.Write([]byte(head + body)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "no answer: " + err.Error(), false
	}
	resp.Body.Close()
	return resp.Status, resp.Close
}

// A request refused before its body is read (unknown token, bad key, over
// the limit) is answered at once and the connection closed: the server does
// not wait to read and drop a body the client has not sent.
func TestEarlyRefusalsAnswerAtOnceAndClose(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ name, head, want string }{
		{"unknown inbound token", "POST /api/in/in_unknown HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", "404"},
		{"bad key", "POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ck_bad\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", "401"},
		{"over the limit", "POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.key + "\r\nContent-Type: application/json\r\nContent-Length: 99000000\r\n\r\n", "413"},
		{"no such route", "POST /api/v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "404"},
	} {
		status, closed := rawRequest(t, f.srv.URL, c.head, "{", 5*time.Second)
		if !strings.HasPrefix(status, c.want) || !closed {
			t.Errorf("%s: %q (closed %v), want %s at once and the connection closed", c.name, status, closed, c.want)
		}
	}
}

// trickle sends head, then the body a byte a second, and reports how long
// the server took to answer or close the connection.
func trickle(t *testing.T, base, head string, wait time.Duration) time.Duration {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		_, _ = conn.Read(buf) // an answer, or the close
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return time.Since(start)
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				<-done
				return time.Since(start)
			}
		}
	}
}

// A body that trickles in is cut off at its route's read deadline (a
// megabyte a second, and ten seconds more): the inbound route's 1 MB in 11
// seconds, a REST write's under one deadline even when an Idempotency-Key
// makes two readers of it. The server here has no read timeout of its own.
func TestSlowBodiesAreCutOffAtTheirRoutesDeadline(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	const bound = 18 * time.Second // the deadline is 11 s; two would be 22
	inbound := fmt.Sprintf("POST /api/in/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", ep.Token)
	rest := "POST /api/v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.key +
		"\r\nIdempotency-Key: slow-1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
	for name, head := range map[string]string{"inbound post": inbound, "REST write with an Idempotency-Key": rest} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if took := trickle(t, f.srv.URL, head, 40*time.Second); took > bound {
				t.Errorf("a trickling body held the connection %v, want it cut off within %v", took, bound)
			}
		})
	}
}

// Creating a subscription refuses every form of a non-public address a
// delivery would refuse, and says so without naming an address.
func TestSubscriptionsRefuseNonPublicTargetsInEveryForm(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{"http://2130706433/h", "http://0x7f000001/h", "http://127.1/h", "http://0177.0.0.1/h",
		"http://localhost./h", "http://127.0.0.1./h", "http://[::127.0.0.1]/h", "http://metadata.google.internal/h", "http://vm/h"} {
		status, _, b := f.do(http.MethodPost, "/api/v1/webhooks/subscriptions", f.key, strings.NewReader(`{"url": "`+target+`"}`))
		if status != http.StatusBadRequest || !strings.Contains(string(b), "non-public address") || strings.Contains(string(b), "127.0") ||
			strings.Contains(string(b), "resolves to ") {
			t.Errorf("%s: %d %s", target, status, b)
		}
	}
}

// Every answer says not to sniff its type; over an https base URL, every
// answer says to use https only; /metrics is not on the public listener.
func TestAnswersCarryTheSecurityHeadersAndMetricsAreNotPublic(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	for _, r := range []struct{ method, path, key string }{
		{http.MethodGet, "/api/v1/products", f.key}, {http.MethodGet, "/api/v1/products", ""},
		{http.MethodPost, "/api/in/" + ep.Token, ""}, {http.MethodGet, "/nothing", ""},
	} {
		_, h, _ := f.do(r.method, r.path, r.key, strings.NewReader(`{}`))
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff", r.method, r.path)
		}
		if h.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s %s: HSTS over an http base URL", r.method, r.path)
		}
	}
	if status, _, _ := f.do(http.MethodGet, "/metrics", "", nil); status != http.StatusNotFound {
		t.Errorf("/metrics on the public listener: %d", status)
	}
	s := api.New(api.Deps{DB: f.db.DB, Cursors: cursor.New(make([]byte, 32)), BaseURL: "https://commerce.example"})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if hsts := rec.Header().Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=") {
		t.Errorf("no HSTS over an https base URL: %q", hsts)
	}
}

// A client's X-Request-Id is kept only when it is short and plain; a
// receipt keeps at most 1 KB of each header.
func TestClientSizedValuesAreBounded(t *testing.T) {
	f := newFixture(t)
	for id, kept := range map[string]bool{"abc-123_x.y": true, strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false, strings.Repeat("x", 900<<10): false, "a b": false, "a;b\"": false} {
		_, h, _ := f.do(http.MethodGet, "/healthz", "", nil, "X-Request-Id", id)
		got := h.Get("X-Request-Id")
		if (got == id) != kept || len(got) > 64 || got == "" {
			t.Errorf("X-Request-Id of %d bytes: answered %d bytes (kept %v, want %v)", len(id), len(got), got == id, kept)
		}
	}
	ep := f.erpEndpoint(t)
	_, h, _ := f.postInbound(ep.Token, `{"order_ref": "SO-1", "status": "processing"}`,
		"User-Agent", strings.Repeat("u", 300<<10), "X-Forwarded-For", strings.Repeat("1.1.1.1,", 40<<10))
	var headers map[string]string
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT headers FROM inbound_receipts WHERE org_id = $1 AND id = $2`,
		f.org.ID, h.Get("X-Receipt-Id")).Scan(&headers); err != nil {
		t.Fatal(err)
	}
	for name, v := range headers {
		if len(v) > 1<<10 {
			t.Errorf("the receipt keeps %d bytes of %s", len(v), name)
		}
	}
	if len(headers["User-Agent"]) != 1<<10 {
		t.Errorf("User-Agent kept as %d bytes, want its first 1 KB", len(headers["User-Agent"]))
	}
}

// A kept Standard Webhooks signature is masked like X-Service-Signature.
func TestReceiptsMaskBothSignatureSchemes(t *testing.T) {
	f := newFixture(t)
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	body := `{"order_ref": "SO-1", "status": "processing"}`
	h := http.Header{}
	signature.SignRequest(h, []string{*ep.Secret}, "msg_1", time.Now(), []byte(body))
	_, answer, _ := f.postInbound(ep.Token, body, signature.HeaderWebhookID, h.Get(signature.HeaderWebhookID),
		signature.HeaderWebhookTimestamp, h.Get(signature.HeaderWebhookTimestamp), signature.HeaderWebhookSignature, h.Get(signature.HeaderWebhookSignature))
	status, _, b := f.do(http.MethodGet, "/api/v1/inbound/receipts/"+answer.Get("X-Receipt-Id"), f.key, nil)
	var d struct{ Headers map[string]string }
	_ = json.Unmarshal(b, &d)
	sig := d.Headers[signature.HeaderWebhookSignature]
	if status != http.StatusOK || sig != "v1,***" || strings.Contains(string(b), strings.TrimPrefix(h.Get(signature.HeaderWebhookSignature), "v1,")) {
		t.Fatalf("receipt %d, webhook-signature kept as %q", status, sig)
	}
}

// A tracking address must be an absolute http or https URL of at most
// 2,048 characters: a javascript: one is refused, not stored and sent out.
func TestTrackingURLMustBeAWebAddress(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	for _, u := range []string{"javascript:alert(1)//", "data:text/html,x", "/relative", "https://t.example/" + strings.Repeat("x", 2048)} {
		body, _ := json.Marshal(map[string]string{"order_ref": "SO-1", "status": "processing", "tracking_url": u})
		status, _, b := f.postInbound(ep.Token, string(body))
		if status != http.StatusBadRequest || !strings.Contains(string(b), "tracking_url") {
			t.Errorf("tracking_url %.40q: %d %s", u, status, b)
		}
	}
}

// A database that refuses connections (here a role allowed one, which the
// pool's first holds) answers 503 with Retry-After, not 500, and counts it.
func TestARefusedDatabaseConnectionAnswers503(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	role := "limited_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if _, err := f.db.Pool().Exec(ctx, `CREATE ROLE `+role+` LOGIN CONNECTION LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.db.Pool().Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	u, _ := url.Parse(f.db.URL)
	u.User = url.User(role)
	limited, err := db.Connect(ctx, u.String(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Close()
	s := api.New(api.Deps{DB: limited, Logger: zap.NewNop(), Cursors: cursor.New(make([]byte, 32)), BaseURL: "http://localhost",
		Service: integrations.New(integrations.Deps{DB: limited, BaseURL: "http://localhost"})})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, path := range []string{"/api/v1/products", "/api/in/in_" + strings.Repeat("a", 43)} {
		method := http.MethodGet
		if strings.HasPrefix(path, "/api/in/") {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+f.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || body["error"] != "Service unavailable" {
			t.Errorf("%s with the database refusing: %d %v %v", path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	m := httptest.NewServer(s.Metrics())
	defer m.Close()
	resp, err := http.Get(m.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	if !strings.Contains(b.String(), "commerce_http_database_unavailable_total 2") {
		t.Errorf("the refusals are not counted:\n%.2000s", b.String())
	}
}

// A pool whose every connection stays in use answers 503 with Retry-After
// after its acquire wait, instead of holding the request; once a
// connection is free the same request is answered.
func TestAnExhaustedPoolAnswers503WithRetryAfter(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	small, err := db.ConnectWith(ctx, f.db.URL, db.Options{MaxConns: 1, AcquireWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	s := api.New(api.Deps{DB: small, Logger: zap.NewNop(), Cursors: cursor.New(make([]byte, 32)), BaseURL: "http://localhost"})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func() (int, string, map[string]string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/products", nil)
		req.Header.Set("Authorization", "Bearer "+f.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), body
	}
	held, err := small.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	status, retry, body := get()
	if status != http.StatusServiceUnavailable || retry != "5" || body["error"] != "Service unavailable" {
		t.Errorf("with the pool exhausted: %d Retry-After %q %v", status, retry, body)
	}
	held.Release()
	if status, _, body := get(); status != http.StatusOK {
		t.Errorf("with a connection free again: %d %v", status, body)
	}
}

// An early refusal closes its connection at once whatever the body it
// declares: a body of at most 256 KB is not read after the answer (Go's
// server reads one to reuse the connection, as long as the read deadline
// allows) any more than a larger one is.
func TestEarlyRefusalsCloseTheConnectionAtOnceWhateverTheDeclaredSize(t *testing.T) {
	f := newFixture(t)
	u, _ := url.Parse(f.srv.URL)
	for _, size := range []int{10, 100_000, 256 << 10, 99_000_000} {
		for _, c := range []struct{ name, head string }{
			{"unknown inbound token", "POST /api/in/in_unknown HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"},
			{"bad key", "POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ck_bad\r\nContent-Type: application/json\r\n"},
			{"no such route", "POST /api/v1/nothing HTTP/1.1\r\nHost: x\r\n"},
		} {
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = conn.SetDeadline(start.Add(5 * time.Second))
			if _, err := fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n{", c.head, size); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("%s, %d bytes declared: %v", c.name, size, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// Then the connection ends: EOF, not a wait for the body.
			_, err = r.ReadByte()
			if elapsed := time.Since(start); err == nil || elapsed > time.Second {
				t.Errorf("%s, %d bytes declared: %s, then %v after %s; want the connection closed at once", c.name, size, resp.Status, err,
					elapsed.Round(time.Millisecond))
			}
			conn.Close()
		}
	}
}

// An organisation's subscriptions are capped (100 unless an operator sets
// another): one more is answered 422, naming the cap, so that one key
// cannot make an event fan out to any number of deliveries.
func TestSubscriptionsPastTheOrganisationsCapAre422(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.SetSubscriptionCap(context.Background(), f.org.ID, 2); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		status, _, b := f.do(http.MethodPost, "/api/v1/webhooks/subscriptions", f.key, strings.NewReader(`{"url": "https://8.8.8.8/hooks?apikey=k"}`))
		switch {
		case i < 2 && status != http.StatusCreated:
			t.Fatalf("subscription %d: %d %s", i+1, status, b)
		case i == 2 && (status != http.StatusUnprocessableEntity || !strings.Contains(string(b), "its cap of 2")):
			t.Fatalf("a subscription past the cap: %d %s; want 422 naming the cap", status, b)
		}
	}
	if c, err := f.db.GetSubscriptionCap(context.Background(), f.org.ID); err != nil || c.Held != 2 {
		t.Fatalf("%+v %v", c, err)
	}
}
