package console_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// signInPost posts a sign-in link with the given headers (name, value, ...)
// and answers its status and body.
func (b *browser) signInPost(token string, headers ...string) (int, string) {
	b.f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, console.LoginURL(b.f.srv.URL, token), nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(page)
}

// A sign-in posted by a page of another site (login CSRF: a page that
// signs its visitor into the attacker's session) is refused with a 403
// page, and the link stays unused: the same link then signs in from the
// console's own page.
func TestASignInFromAnotherSiteIsRefusedAndLeavesTheLinkUnused(t *testing.T) {
	f := newFixture(t)
	token, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range [][]string{
		{"Origin", "https://evil.example"},
		{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "null"},
		{"Origin", "http://commerce.test.evil.example"},
	} {
		status, page := f.browser().signInPost(token, h...)
		if status != http.StatusForbidden || !strings.Contains(page, "sent from another site") {
			t.Fatalf("sign-in with %q: %d %s", h, status, page)
		}
	}
	var used int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM console_links WHERE token_hash = $1 AND used_at IS NULL`,
		secrets.Hash(token)).Scan(&used); err != nil || used != 1 {
		t.Fatalf("a refused sign-in used the link: %d %v", used, err)
	}
	// The console's own page posts with its origin (the host it was sent
	// to, or COMMERCE_BASE_URL's) and same-origin.
	if status, _ := f.browser().signInPost(token, "Origin", f.srv.URL, "Sec-Fetch-Site", "same-origin"); status != http.StatusSeeOther {
		t.Fatalf("sign-in from the console's own page: %d", status)
	}
	// Chromium posts a no-referrer page's own form with Origin: null, and
	// says same-origin.
	own, _ := f.d.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	if status, _ := f.browser().signInPost(own, "Origin", "null", "Sec-Fetch-Site", "same-origin"); status != http.StatusSeeOther {
		t.Fatalf("sign-in from the console's own no-referrer page: %d", status)
	}
	other, _ := f.d.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	if status, _ := f.browser().signInPost(other, "Origin", "http://commerce.test"); status != http.StatusSeeOther {
		t.Fatalf("sign-in from the base URL's origin: %d", status)
	}
}

// A sign-in the database cannot answer (503) is logged by its route, never
// its path: the link in the path is unused, and still signs in once the
// database answers again.
func TestAConsoleFaultIsLoggedByItsRouteNotItsPath(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	small, err := db.ConnectWith(ctx, f.d.URL, db.Options{MaxConns: 1, AcquireWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	service := integrations.New(integrations.Deps{DB: small, BaseURL: "http://commerce.test"})
	s := api.New(api.Deps{DB: small, Service: service, Logger: log, Cursors: cursor.New(key), BaseURL: "http://commerce.test"})
	s.Mount(console.Prefix, console.New(console.Deps{DB: small, Service: service, Log: log, BaseURL: "http://commerce.test"}))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	f.srv = srv
	token, err := f.d.CreateConsoleLink(ctx, f.org.ID, "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	held, err := small.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := f.browser().signInPost(token); status != http.StatusServiceUnavailable {
		t.Fatalf("sign-in with the database busy: %d", status)
	}
	held.Release()
	var routes []string
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		if strings.Contains(line, token) {
			t.Errorf("a log line holds the sign-in token: %s", line)
		}
		if r, ok := e.ContextMap()["route"].(string); ok {
			routes = append(routes, e.Message+" "+r)
		}
	}
	if !strings.Contains(strings.Join(routes, "\n"), "console: database unavailable /console/login/{token}") {
		t.Errorf("the 503 is not logged by its route: %q", routes)
	}
	if status, _ := f.browser().signInPost(token); status != http.StatusSeeOther {
		t.Fatalf("the link after the 503: %d", status)
	}
}

func toString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(v)
}

// A form refused before it is read (no session) closes its connection at
// once, however much of a body of up to 256 KB is still to come.
func TestAFormRefusedUnreadClosesTheConnectionAtOnce(t *testing.T) {
	f := newFixture(t)
	u, _ := url.Parse(f.srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetDeadline(start.Add(5 * time.Second))
	if _, err := fmt.Fprintf(conn, "POST /console/logout HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"Content-Length: 100000\r\n\r\ncsrf="); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := r.ReadByte(); err == nil || time.Since(start) > time.Second || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%s, then %v after %s; want 401 and the connection closed at once", resp.Status, err, time.Since(start))
	}
}
