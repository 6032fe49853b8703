package dev

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func freePort(t *testing.T) int {
	t.Helper()
	// Below the kernel's ephemeral range (32768 and up): a port from there,
	// closed again, can be taken before dev binds it by any outgoing
	// connection or :0 listener of the tests running beside this one.
	for range 100 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port between 20000 and 32000")
	return 0
}

// syncBuffer collects output written from another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev runs `commerce dev` in-process and waits until dev.json names a
// base URL other than prevBaseURL (each run listens on a new port) and the
// API answers there. The returned stop cancels it and waits.
func startDev(t *testing.T, dir string, opts devOptions, prevBaseURL string) (devState, func()) {
	t.Helper()
	cfg := config.Load()
	cfg.Listen = "127.0.0.1:0"
	cfg.LogLevel = "warn"
	cfg.SecretKey = ""
	cfg.BaseURL = ""
	opts.dir = dir
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &syncBuffer{}
	go func() { done <- runDev(ctx, cfg, opts, out) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if st, err := readState(dir); err == nil && st.BaseURL != prevBaseURL {
			if resp, err := http.Get(st.BaseURL + "/healthz"); err == nil {
				resp.Body.Close()
				return st, func() {
					cancel()
					select {
					case err := <-done:
						if err != nil {
							t.Errorf("dev stopped with %v\n%s", err, out.String())
						}
					case <-time.After(time.Minute):
						t.Errorf("dev did not stop within a minute")
					}
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("dev exited early: %v\n%s", err, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("dev did not come up:\n%s", out.String())
		}
	}
}

func TestDevBringsUpEverythingAndReusesDataOnRestart(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("COMMERCE_SECRET_KEY", "")
	base := t.TempDir()
	// The private cluster runs as an unprivileged user when tests run as
	// root: it must be able to reach the state directory.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, ".commerce")
	opts := devOptions{temporalPort: freePort(t), uiPort: freePort(t)}

	st, stop := startDev(t, dir, opts, "")
	for _, v := range []string{st.BaseURL, st.APIKey, st.OrgID, st.TemporalAddress, st.TemporalUIURL} {
		if v == "" {
			t.Fatalf("dev.json misses a value: %+v", st)
		}
	}
	var raw map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"base_url", "api_key", "org_id", "temporal_address", "temporal_ui_url"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("dev.json has no %q", k)
		}
	}

	// One inbound URL per action, carried out by the embedded Temporal.
	if len(st.InboundURLs) != len(domain.Actions) {
		t.Fatalf("dev.json has %d inbound URLs, want one per action: %v", len(st.InboundURLs), st.InboundURLs)
	}
	post, err := http.Post(st.InboundURLs[domain.ActionERPOrderStatus], "application/json",
		strings.NewReader(`{"order_ref": "SO-2026-0204", "status": "processing"}`))
	if err != nil {
		t.Fatal(err)
	}
	posted, _ := io.ReadAll(post.Body)
	post.Body.Close()
	if post.StatusCode != 200 || !strings.Contains(string(posted), `"outcome":"applied"`) {
		t.Fatalf("inbound post: %d %s", post.StatusCode, posted)
	}

	req, _ := http.NewRequest("GET", st.BaseURL+"/api/v1/products", nil)
	req.Header.Set("Authorization", "Bearer "+st.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var page struct {
		Products []struct {
			SKU string `json:"sku"`
		} `json:"products"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &page) != nil || len(page.Products) == 0 {
		t.Fatalf("products: %d %s", resp.StatusCode, body)
	}

	ui, err := http.Get(st.TemporalUIURL)
	if err != nil {
		t.Fatal(err)
	}
	ui.Body.Close()
	if ui.StatusCode != 200 {
		t.Fatalf("Temporal UI answered %d", ui.StatusCode)
	}
	ready, err := http.Get(st.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	ready.Body.Close()
	if ready.StatusCode != 200 {
		t.Fatalf("readyz answered %d", ready.StatusCode)
	}
	stop()

	// A second start finds the same organisation, key and data.
	st2, stop2 := startDev(t, dir, opts, st.BaseURL)
	defer stop2()
	if st2.APIKey != st.APIKey || st2.OrgID != st.OrgID || !maps.Equal(st2.InboundTokens, st.InboundTokens) {
		t.Fatalf("second start made a new organisation or key: %+v vs %+v", st2, st)
	}
	req, _ = http.NewRequest("GET", st2.BaseURL+"/api/v1/products?limit=500", nil)
	req.Header.Set("Authorization", "Bearer "+st2.APIKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var again struct {
		Products []any `json:"products"`
	}
	_ = json.Unmarshal(body, &again)
	if resp.StatusCode != 200 || len(again.Products) == 0 {
		t.Fatalf("products after restart: %d %s", resp.StatusCode, body)
	}
}

// With --temporal-store postgres the embedded Temporal server keeps its state
// in two databases beside the service's: they are made on first start, the
// service's workflows run on them, and a second start carries on with them.
func TestDevRunsTemporalOnPostgresBesideTheServiceDatabase(t *testing.T) {
	b := make([]byte, 6)
	_, _ = crand.Read(b)
	name := fmt.Sprintf("devtest_%d_%s", time.Now().Unix(), hex.EncodeToString(b))
	u, err := url.Parse(testdb.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	t.Setenv("DATABASE_URL", u.String())
	t.Setenv("COMMERCE_SECRET_KEY", "")
	u.Path = "/postgres"
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{name, name + "_temporal", name + "_temporal_visibility"} {
			if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)"); err != nil {
				t.Errorf("drop %s: %v", n, err)
			}
		}
		admin.Close(ctx)
	})
	dir := filepath.Join(t.TempDir(), ".commerce")
	opts := devOptions{temporalPort: freePort(t), uiPort: freePort(t), temporalStore: "postgres"}

	// Each post changes the order, through a workflow of the embedded server.
	post := func(st devState, status string) {
		t.Helper()
		resp, err := http.Post(st.InboundURLs[domain.ActionERPOrderStatus], "application/json",
			strings.NewReader(`{"order_ref": "SO-2026-0204", "status": "`+status+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"outcome":"applied"`) {
			t.Fatalf("inbound post: %d %s", resp.StatusCode, body)
		}
	}
	st, stop := startDev(t, dir, opts, "")
	var have []string
	rows, err := admin.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY datname", name+"%")
	if err == nil {
		have, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{name, name + "_temporal", name + "_temporal_visibility"}; !slices.Equal(have, want) {
		t.Fatalf("databases %v, want %v", have, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "temporal.db")); err == nil {
		t.Fatal("the postgres store made a SQLite file")
	}
	post(st, "processing")
	stop()

	st2, stop2 := startDev(t, dir, opts, st.BaseURL)
	defer stop2()
	if st2.APIKey != st.APIKey {
		t.Fatal("second start made a new key")
	}
	post(st2, "fulfilled")
}
