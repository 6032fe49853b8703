package cli_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
)

// serveMetrics serves ServeMetrics on a free port until the test ends and
// answers its base URL.
func serveMetrics(t *testing.T, profiles bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up 1\n") })
	go func() { done <- cli.ServeMetrics(ctx, l, metrics, profiles, zap.NewNop()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics listener: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The runtime profiles are served on the metrics listener only when asked
// for; off, the listener answers /metrics and nothing else.
func TestProfilesOnTheMetricsListenerOnlyWhenAsked(t *testing.T) {
	off := serveMetrics(t, false)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine"} {
		if status, _ := get(t, off+path); status != http.StatusNotFound {
			t.Errorf("profiles off: %s answered %d, want 404", path, status)
		}
	}
	if status, body := get(t, off+"/metrics"); status != 200 || body != "up 1\n" {
		t.Errorf("profiles off: /metrics %d %q", status, body)
	}
	on := serveMetrics(t, true)
	if status, body := get(t, on+"/debug/pprof/"); status != 200 || !strings.Contains(body, "heap") {
		t.Errorf("profiles on: /debug/pprof/ %d %.200s", status, body)
	}
	if status, body := get(t, on+"/debug/pprof/heap?debug=1"); status != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("profiles on: heap profile %d %.200s", status, body)
	}
	if status, _ := get(t, on+"/metrics"); status != 200 {
		t.Errorf("profiles on: /metrics %d", status)
	}
}

// The worker's listener (its probes and series) follows COMMERCE_PPROF too.
func TestWorkerProbesServeProfilesOnlyWhenAsked(t *testing.T) {
	var polling atomic.Bool
	for _, on := range []bool{false, true} {
		cfg := config.Config{Pprof: map[bool]string{false: "false", true: "true"}[on]}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: (&cli.Runtime{Cfg: cfg, Log: zap.NewNop()}).WorkerProbes(&polling)}
		go func() { _ = srv.Serve(l) }()
		status, _ := get(t, "http://"+l.Addr().String()+"/debug/pprof/heap?debug=1")
		_ = srv.Close()
		if want := map[bool]int{false: 404, true: 200}[on]; status != want {
			t.Errorf("COMMERCE_PPROF=%v: worker /debug/pprof/heap answered %d, want %d", on, status, want)
		}
	}
}

func TestProfilesSettingIsTrueOrFalse(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		if on, err := (config.Config{Pprof: v}).ProfilesOn(); err != nil || on != want {
			t.Errorf("COMMERCE_PPROF=%q: %v %v, want %v", v, on, err, want)
		}
	}
	if _, err := (config.Config{Pprof: "yes please"}).ProfilesOn(); err == nil || !strings.Contains(err.Error(), "COMMERCE_PPROF") {
		t.Errorf("COMMERCE_PPROF=yes please: %v", err)
	}
	if v := config.Load().Pprof; v != "false" && v != "" {
		t.Skipf("COMMERCE_PPROF is set in this environment (%q)", v)
	}
	if on, _ := config.Load().ProfilesOn(); on {
		t.Error("profiles are on by default")
	}
}

// Each process sets the runtime's soft memory limit unless GOMEMLIMIT does.
func TestLimitMemoryUnlessGOMEMLIMITSetsOne(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	if got := cli.LimitMemory(cli.DevMemoryLimit, zap.NewNop()); got != 768<<20 || debug.SetMemoryLimit(-1) != 768<<20 {
		t.Fatalf("memory limit %d, want %d", got, 768<<20)
	}
	debug.SetMemoryLimit(300 << 20) // as GOMEMLIMIT=300MiB would at start
	t.Setenv("GOMEMLIMIT", "300MiB")
	if got := cli.LimitMemory(cli.ServeMemoryLimit, zap.NewNop()); got != 300<<20 {
		t.Fatalf("with GOMEMLIMIT=300MiB the limit is %d, want %d", got, 300<<20)
	}
}
