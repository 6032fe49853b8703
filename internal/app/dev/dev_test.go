package dev

import (
	"bytes"
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
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/app/cli"
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
	deadline := time.Now().Add(4 * time.Minute)
	for {
		// Up once the demo posts are made and the addresses printed.
		if st, err := readState(dir); err == nil && st.BaseURL != prevBaseURL && strings.Contains(out.String(), "commerce dev is running.") {
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

// runCLI runs the commerce command tree in the current directory and
// environment, as a user would beside dev.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Execute(cli.NewRoot(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// receiptLine is a receipt as `commerce receipts list|replay --json` print it.
type receiptLine struct {
	ID       string         `json:"id"`
	Outcome  domain.Outcome `json:"outcome"`
	ReplayOf *string        `json:"replay_of"`
	Status   *int           `json:"status_code"`
}

func TestDevBringsUpEverythingAndReusesDataOnRestart(t *testing.T) {
	// No settings from the environment: the commands beside dev find its own.
	for _, name := range config.Names() {
		t.Setenv(name, "")
	}
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
	for _, k := range []string{"base_url", "api_key", "org_id", "temporal_address", "temporal_ui_url", "secret_key", "private_targets", "metrics_url"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("dev.json has no %q", k)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "dev.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("dev.json is not its owner's alone: %v %v", fi.Mode(), err)
	}
	// What the commands beside dev read is what dev runs with.
	if s, err := cli.ReadDevSettings(dir); err != nil || s.DatabaseURL != st.DatabaseURL || s.TemporalAddress != st.TemporalAddress ||
		s.TemporalNamespace != "default" || s.PrivateTargets != "loopback" || s.BaseURL != st.BaseURL {
		t.Errorf("dev settings %+v (%v) are not dev's %+v", s, err, st)
	}
	if key, err := os.ReadFile(filepath.Join(dir, "secret.key")); err != nil || st.SecretKey != strings.TrimSpace(string(key)) {
		t.Errorf("dev.json's secret key is not dev's: %v", err)
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
	failedPostReadsFailedInTheTemporalUI(t, st)
	ready, err := http.Get(st.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	ready.Body.Close()
	if ready.StatusCode != 200 {
		t.Fatalf("readyz answered %d", ready.StatusCode)
	}
	checkSeries(t, st.MetricsURL)

	// From the folder dev runs in, with no environment, the CLI finds dev's
	// database, Temporal, key and loopback allowance, and says so once.
	t.Chdir(base)
	const said = "using commerce dev settings from .commerce/dev.json\n"
	code, out, errOut := runCLI("endpoint", "list", "--org", st.OrgID, "--json")
	var endpoints []struct {
		ID     string        `json:"id"`
		Action domain.Action `json:"action"`
	}
	if code != 0 || errOut != said || json.Unmarshal([]byte(out), &endpoints) != nil {
		t.Fatalf("endpoint list beside dev: exit %d, %q %q", code, out, errOut)
	}
	endpointOf := map[domain.Action]string{}
	for _, e := range endpoints {
		endpointOf[e.Action] = e.ID
	}
	code, out, errOut = runCLI("webhook", "add", "--org", st.OrgID, "--url", "http://127.0.0.1:9000/hook", "--json")
	if code != 0 || errOut != said || !strings.Contains(out, "whsec_") {
		t.Fatalf("webhook add beside dev: exit %d, %q %q", code, out, errOut)
	}

	// The demo organisation shows a failed post (an invoice in another
	// currency than its order's, refused 422) and a parked one (the status of
	// an order not loaded yet), as `receipts list` finds them.
	receipts := func(action domain.Action, status string) []receiptLine {
		t.Helper()
		args := []string{"receipts", "list", "--endpoint", endpointOf[action], "--json"}
		if status != "" {
			args = append(args, "--status", status)
		}
		code, out, errOut := runCLI(args...)
		var list []receiptLine
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("receipts list %s: exit %d, %q %q", action, code, out, errOut)
		}
		return list
	}
	// A post answers within dev's wait; one left waiting finishes soon after.
	waitFor := func(action domain.Action, status string) receiptLine {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if list := receipts(action, status); len(list) > 0 {
				return list[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("the demo organisation has no %s %s receipt: %+v", status, action, receipts(action, ""))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	failed := waitFor(domain.ActionOrderInvoice, "failed")
	if failed.Status == nil || *failed.Status != 422 {
		t.Fatalf("the failed demo receipt: %+v", failed)
	}
	waitFor(domain.ActionERPOrderStatus, "parked")

	// A replay of it runs on dev's Temporal and worker.
	code, out, errOut = runCLI("receipts", "replay", failed.ID, "--json")
	var replay receiptLine
	if code != 0 || strings.Count(errOut, "using commerce dev settings") != 1 || json.Unmarshal([]byte(out), &replay) != nil ||
		replay.ReplayOf == nil || *replay.ReplayOf != failed.ID {
		t.Fatalf("receipts replay beside dev: exit %d, %q %q", code, out, errOut)
	}
	// Its workflow refuses the invoice again (within the answer wait, or just
	// after it).
	for deadline := time.Now().Add(2 * time.Minute); len(receipts(domain.ActionOrderInvoice, "failed")) < 2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replay %s did not fail as its original did: %+v", replay.ID, receipts(domain.ActionOrderInvoice, ""))
		}
	}
	invoiceReceipts, statusReceipts := len(receipts(domain.ActionOrderInvoice, "")), len(receipts(domain.ActionERPOrderStatus, ""))
	stop()

	// A second start finds the same organisation, key and data.
	st2, stop2 := startDev(t, dir, opts, st.BaseURL)
	defer stop2()
	if st2.APIKey != st.APIKey || st2.OrgID != st.OrgID || !maps.Equal(st2.InboundTokens, st.InboundTokens) {
		t.Fatalf("second start made a new organisation or key: %+v vs %+v", st2, st)
	}
	// ... and posts the demo receipts no second time.
	if n, m := len(receipts(domain.ActionOrderInvoice, "")), len(receipts(domain.ActionERPOrderStatus, "")); n != invoiceReceipts || m != statusReceipts {
		t.Fatalf("after a restart: %d order invoice and %d order status receipts, want %d and %d", n, m, invoiceReceipts, statusReceipts)
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

// seriesNamed finds the series names the alert rules and the dashboard
// read.
var seriesNamed = regexp.MustCompile(`\b(?:commerce|temporal)_[a-z0-9_]+`)

// checkSeries scrapes the live /metrics (the API's and the worker's series,
// one process in dev) after a post went through: every series the alert
// rules and the dashboard name is there, and promtool check metrics finds
// no problem with any of them.
func checkSeries(t *testing.T, metricsURL string) {
	t.Helper()
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics answered %d", resp.StatusCode)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exported[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	for _, file := range []string{"../../../deploy/prometheus/alerts.yml", "../../../deploy/grafana/commerce.json"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		names := seriesNamed.FindAllString(string(text), -1)
		if len(names) == 0 {
			t.Fatalf("%s names no series", file)
		}
		for _, name := range names {
			if !exported[name] {
				t.Errorf("%s reads %s, which /metrics does not export", file, name)
			}
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool checks the live /metrics: install it (Debian: apt-get install -y prometheus; .ci/run does): %v", err)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(body))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
