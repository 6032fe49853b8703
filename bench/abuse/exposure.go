package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/bench/internal/procs"
	"github.com/commerce-integration/commerce/signature"
)

// The checks of this file each hold what a review of the exposed service
// found (docs/security.md, "What it sends"): they run once, after the
// rounds.

// slowBound is how long a trickling body may hold a connection: its route's
// deadline (11 s for 1 MB), with room for a loaded machine, and short of
// two deadlines.
const slowBound = 18 * time.Second

func (s *suite) exposureChecks(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.slowBodies(ctx) })
	s.secretsNotKept(ctx)
	s.earlyRefusals(ctx)
	s.targets(ctx)
	s.headersAndMetrics(ctx)
	s.clientSizedValues(ctx)
	s.signatureMasked(ctx)
	s.trackingURL(ctx)
	s.databaseRefusing(ctx)
	wg.Wait()
}

// subscribe posts a subscription to target and returns the status and
// the decoded answer.
func (s *suite) subscribe(ctx context.Context, c *check, target, idempotencyKey string, want ...int) (*answer, map[string]any) {
	p := probe{what: "subscribe " + target, method: http.MethodPost, url: s.api("/webhooks/subscriptions"), key: s.keys[0],
		body: []byte(fmt.Sprintf(`{"url":%q}`, target)), want: want}
	if idempotencyKey != "" {
		p.header = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	a := s.send(ctx, c, p)
	var out map[string]any
	if a != nil {
		_ = a.decode(&out)
	}
	return a, out
}

// secretsNotKept: an answer with a secret is not stored by caches or by an
// Idempotency-Key.
func (s *suite) secretsNotKept(ctx context.Context) {
	c := s.check("answers with a secret: not kept, not cached")
	key := "abuse-secret-" + procs.RandomHex(6)
	first, created := s.subscribe(ctx, c, "https://8.8.8.8/abuse-hooks", key, 201)
	if first == nil || created == nil {
		return
	}
	if secret, _ := created["secret"].(string); !strings.HasPrefix(secret, "whsec_") || first.header.Get("Cache-Control") != "no-store" {
		c.fail("the first answer: secret %q, Cache-Control %q", created["secret"], first.header.Get("Cache-Control"))
	}
	again, repeated := s.subscribe(ctx, c, "https://8.8.8.8/abuse-hooks", key, 201)
	if again != nil && (repeated["secret"] != nil || again.header.Get("Idempotent-Replayed") != "true") {
		c.fail("the retry with the same key: secret %v, replayed %q", repeated["secret"], again.header.Get("Idempotent-Replayed"))
	}
	conn, err := pgx.Connect(ctx, s.srv.dbURL)
	if err != nil {
		c.fail("database: %v", err)
		return
	}
	defer conn.Close(ctx)
	var kept int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM api_idempotency_keys
		WHERE position('whsec_' in convert_from(response, 'UTF8')) > 0`).Scan(&kept); err != nil || kept != 0 {
		c.fail("%d kept answers hold a secret (%v)", kept, err)
	}
}

// rawAnswer writes head and body on a connection of its own and reads the
// answer: its status (0 for none), whether the server closed after it, and
// how long it took.
func rawAnswer(base, head, body string, wait time.Duration) (status int, closed bool, took time.Duration, err error) {
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return 0, false, 0, err
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetDeadline(start.Add(wait))
	if _, err := conn.Write([]byte(head + body)); err != nil {
		return 0, false, 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, false, time.Since(start), err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Close, time.Since(start), nil
}

// earlyRefusals: a request refused before its body is read is answered at
// once, and its connection closed rather than drained.
func (s *suite) earlyRefusals(ctx context.Context) {
	c := s.check("early refusals: answered at once, connection closed")
	token := strings.TrimPrefix(s.srv.state.InboundURLs["erp_order_status"], s.base)
	for _, r := range []struct{ what, head string }{
		{"unknown token", "POST /api/in/in_unknown HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"},
		{"bad key", "POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ck_bad\r\nContent-Length: 100000\r\n\r\n"},
		{"no such route", "POST /api/v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"},
		{"over the route's limit", "POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + s.keys[0] +
			"\r\nContent-Length: 99000000\r\n\r\n"},
		{"over 1 MB to an endpoint", "POST " + token + " HTTP/1.1\r\nHost: x\r\nContent-Length: 99000000\r\n\r\n" + strings.Repeat(" ", 1<<20+1)},
	} {
		status, closed, took, err := rawAnswer(s.base, r.head, "", 15*time.Second)
		c.record(strconv.Itoa(status), 0, took)
		if err != nil || status < 400 || status >= 500 || !closed || took > 5*time.Second {
			c.fail("%s: %d after %v (closed %v, %v), want a 4xx at once and the connection closed", r.what, status, took, closed, err)
		}
	}
}

// trickle sends head, then a byte a second, until the server answers or
// closes; it returns how long that took.
func trickle(base, head string) (time.Duration, error) {
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write([]byte(head)); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.SetReadDeadline(start.Add(2 * slowBound))
		_, _ = conn.Read(make([]byte, 512))
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return time.Since(start), nil
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				<-done
				return time.Since(start), nil
			}
		}
	}
}

// slowBodies: a body sent a byte a second is cut off at its route's
// deadline, once, whatever reads it.
func (s *suite) slowBodies(ctx context.Context) {
	c := s.check("bodies a byte a second: cut off at the route's deadline")
	inbound := strings.TrimPrefix(s.srv.state.InboundURLs["create_request"], s.base)
	heads := map[string]string{
		"inbound post": "POST " + inbound + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
		"REST write with an Idempotency-Key": "POST /api/v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + s.keys[0] +
			"\r\nIdempotency-Key: abuse-slow\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
		"console form": "POST /console/logout HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n",
	}
	var wg sync.WaitGroup
	for what, head := range heads {
		wg.Go(func() {
			took, err := trickle(s.base, head)
			c.record("cut off", 0, took)
			if err != nil || took > slowBound {
				c.fail("%s: held %v (%v), want it cut off within %v", what, took, err, slowBound)
			}
		})
	}
	wg.Wait()
}

// targets: commerce dev lets webhooks reach loopback receivers only, and
// every form of a non-public address is refused without naming one.
func (s *suite) targets(ctx context.Context) {
	c := s.check("webhook targets: loopback only under dev, no form of a private address")
	for _, target := range []string{"http://10.0.0.5/h", "http://192.168.1.1/h", "http://169.254.169.254/latest/meta-data",
		"http://2130706433/h", "http://0x7f000001/h", "http://127.1/h", "http://0177.0.0.1/h",
		"http://10.0.0.5./h", "http://[::127.0.0.1]/h", "http://[fc00::1]/h", "http://metadata.google.internal/h", "http://vm/h",
		// Spellings that IDNA's mapping, which the HTTP client applies
		// before resolving, makes private addresses and reserved names:
		// full-width digits and letters, ideographic and full-width full
		// stops.
		"http://１０.0.0.5/h", "http://10。0.0.5/h", "http://１６９．２５４．１６９．２５４/latest", "http://０ｘａ００００５/h",
		"http://metadata.google。internal/h", "http://ｖｍ/h"} {
		a, out := s.subscribe(ctx, c, target, "", 400)
		if a == nil {
			continue
		}
		msg, _ := out["error"].(string)
		if !strings.Contains(msg, "non-public address") || strings.Contains(msg, "resolves to ") || strings.Contains(msg, "127.0") ||
			strings.Contains(msg, "10.0") || strings.Contains(msg, "169.254") {
			c.fail("%s: %q names an address, or does not say why", target, msg)
		}
	}
	// A loopback receiver is what dev is for.
	if a, out := s.subscribe(ctx, c, s.receiver.URL+"/loopback", "", 201); a != nil {
		if id, _ := out["id"].(string); id != "" {
			s.send(ctx, c, probe{what: "delete the loopback subscription", method: http.MethodDelete,
				url: s.api("/webhooks/subscriptions/" + id), key: s.keys[0], want: []int{204}})
		}
	}
}

// headersAndMetrics: nosniff on every answer, /metrics only on its own
// listener.
func (s *suite) headersAndMetrics(ctx context.Context) {
	c := s.check("nosniff on every answer; /metrics not on the public listener")
	for _, p := range []probe{
		{what: "a list", method: http.MethodGet, url: s.api("/products?limit=1"), key: s.keys[0], want: []int{200}},
		{what: "no key", method: http.MethodGet, url: s.api("/products"), want: []int{401}},
		{what: "an inbound post", method: http.MethodPost, url: s.srv.state.InboundURLs["erp_order_status"], body: []byte(`{`), want: []int{400}},
		{what: "/metrics on the public listener", method: http.MethodGet, url: s.base + "/metrics", want: []int{404}},
	} {
		p.then = func(a *answer) error {
			if a.header.Get("X-Content-Type-Options") != "nosniff" {
				return fmt.Errorf("no X-Content-Type-Options: nosniff")
			}
			return nil
		}
		s.send(ctx, c, p)
	}
	if n, _, err := s.metrics(ctx); err != nil || n == 0 {
		c.fail("the metrics listener (%s): %d series, %v", s.srv.state.MetricsURL, n, err)
	}
}

// clientSizedValues: a client's request id and the headers a receipt keeps
// are bounded.
func (s *suite) clientSizedValues(ctx context.Context) {
	c := s.check("X-Request-Id and kept headers bounded")
	huge := strings.Repeat("x", 900<<10)
	s.send(ctx, c, probe{what: "a 900 KB X-Request-Id", method: http.MethodGet, url: s.base + "/healthz",
		header: http.Header{"X-Request-Id": {huge}}, want: []int{200}, then: func(a *answer) error {
			if id := a.header.Get("X-Request-Id"); id == "" || len(id) > 64 {
				return fmt.Errorf("answered a request id of %d bytes", len(id))
			}
			return nil
		}})
	p := s.inbound("erp_order_status", "a post with 300 KB headers", []byte(`{"order_ref":"`+replayOrder+`","status":"processing"}`), 200, 202, 409)
	p.header = http.Header{"User-Agent": {strings.Repeat("u", 300<<10)}, "X-Forwarded-For": {strings.Repeat("1.1.1.1,", 40<<10)}}
	a := s.send(ctx, c, p)
	if a == nil {
		return
	}
	detail := s.send(ctx, c, probe{what: "its receipt", method: http.MethodGet, url: s.api("/inbound/receipts/" + a.header.Get("X-Receipt-Id")),
		key: s.keys[0], want: []int{200}})
	var r struct{ Headers map[string]string }
	if detail != nil && detail.decode(&r) == nil {
		for name, v := range r.Headers {
			if len(v) > 1<<10 {
				c.fail("the receipt keeps %d bytes of %s", len(v), name)
			}
		}
	}
}

// signatureMasked: a kept Standard Webhooks signature is masked.
func (s *suite) signatureMasked(ctx context.Context) {
	c := s.check("webhook-signature masked on receipts")
	ep := s.signed["erp_order_status"]
	if ep.Secret == nil {
		c.fail("no signed endpoint")
		return
	}
	body := []byte(`{"order_ref":"` + replayOrder + `","status":"processing"}`)
	h := http.Header{}
	signature.SignRequest(h, []string{*ep.Secret}, "msg_abuse_"+procs.RandomHex(6), time.Now(), body)
	h.Del(signature.Header) // the Standard Webhooks headers alone
	a := s.send(ctx, c, probe{what: "a Standard Webhooks post", method: http.MethodPost, url: ep.URL, header: h, body: body,
		want: []int{200, 202, 409}})
	if a == nil {
		return
	}
	detail := s.send(ctx, c, probe{what: "its receipt", method: http.MethodGet, url: s.api("/inbound/receipts/" + a.header.Get("X-Receipt-Id")),
		key: s.keys[0], want: []int{200}})
	var r struct{ Headers map[string]string }
	if detail != nil && detail.decode(&r) == nil && r.Headers[signature.HeaderWebhookSignature] != "v1,***" {
		c.fail("webhook-signature kept as %q", r.Headers[signature.HeaderWebhookSignature])
	}
}

// trackingURL: only an absolute http or https URL is a tracking address.
func (s *suite) trackingURL(ctx context.Context) {
	c := s.check("tracking_url: an http or https URL of at most 2,048 characters")
	for _, u := range []string{"javascript:alert(1)//", "data:text/html,<script>alert(1)</script>", "https://t.example/" + strings.Repeat("x", 2048)} {
		body, _ := json.Marshal(map[string]string{"order_ref": replayOrder, "status": "processing", "tracking_url": u})
		s.send(ctx, c, s.inbound("erp_order_status", fmt.Sprintf("tracking_url %.30q", u), body, 400))
	}
}

// databaseRefusing: a `commerce serve` whose database refuses it a
// connection (its role may hold two, and both are taken) answers 503 with
// Retry-After.
func (s *suite) databaseRefusing(ctx context.Context) {
	c := s.check("database refusing connections: 503 with Retry-After")
	admin, err := pgx.Connect(ctx, s.srv.dbURL)
	if err != nil {
		c.fail("database: %v", err)
		return
	}
	defer admin.Close(ctx)
	role := "abuse_limited_" + procs.RandomHex(4)
	if _, err := admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN CONNECTION LIMIT 2 IN ROLE postgres`); err != nil {
		c.fail("role: %v", err)
		return
	}
	defer func() { _, _ = admin.Exec(context.WithoutCancel(ctx), `DROP ROLE IF EXISTS `+role) }()
	u, _ := url.Parse(s.srv.dbURL)
	u.User = url.User(role)
	ports, err := freePorts(1)
	if err != nil {
		c.fail("ports: %v", err)
		return
	}
	base := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.CommandContext(ctx, s.srv.bin, "serve")
	logFile, _ := os.Create(filepath.Join(s.tmp, "serve-limited.log"))
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "DATABASE_URL="+u.String(), "COMMERCE_DB_MAX_CONNS=1", "COMMERCE_SECRET_KEY="+s.srv.key,
		"TEMPORAL_ADDRESS="+s.srv.state.TemporalAddress, "COMMERCE_LISTEN=127.0.0.1:"+strconv.Itoa(ports[0]),
		"COMMERCE_BASE_URL="+base, "COMMERCE_METRICS_LISTEN=", "COMMERCE_CONSOLE=false")
	if err := cmd.Start(); err != nil {
		c.fail("serve: %v", err)
		return
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	up := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			up = true
			break
		}
	}
	if !up {
		c.fail("the limited serve did not come up (see %s)", logFile.Name())
		return
	}
	// The role's second connection: serve's pool holds the first.
	held, err := pgx.Connect(ctx, u.String())
	if err != nil {
		c.fail("holding the role's second connection: %v", err)
		return
	}
	defer held.Close(ctx)
	for _, p := range []probe{
		{what: "a list", method: http.MethodGet, url: base + "/api/v1/products", key: s.keys[0]},
		{what: "an inbound post", method: http.MethodPost, url: base + "/api/in/in_" + strings.Repeat("a", 43), body: []byte(`{}`)},
	} {
		p.want = []int{503}
		p.then = func(a *answer) error {
			var e struct{ Error string }
			if a.header.Get("Retry-After") == "" || a.decode(&e) != nil || e.Error != "Service unavailable" {
				return fmt.Errorf("Retry-After %q, body %s", a.header.Get("Retry-After"), a.body)
			}
			return nil
		}
		s.send(ctx, c, p)
	}
}
