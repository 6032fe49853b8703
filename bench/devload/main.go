// Command devload puts a steady load on a running `commerce dev` and
// samples the process's memory: inbound posts at a fixed rate to the demo
// organisation's erp_order_status endpoint (its orders SO-2026-0201 to
// 0205 fulfilled: a post of "fulfilled" is applied, unchanged, and one of
// "processing" refused 409, at the -applied share), and REST reads
// (products, receipts) beside them. Every 10 seconds it writes a line of
// CSV: the seconds since the start, the process's resident size (from
// /proc, -pid), go_memstats_heap_inuse_bytes and go_goroutines from its
// /metrics, and the posts answered, applied and refused, the others, and
// the window's post p50 and p99. An endpoint takes two posts a second
// (db.EndpointLimit): at 18 a second, -endpoints names a dozen, made with
// `commerce endpoint create --action erp_order_status`. With -profiles, it saves two heap
// profiles from the metrics listener's /debug/pprof/heap (COMMERCE_PPROF
// on): at a third and at the end of the run.
//
//	go run ./bench/devload -dir .commerce -pid PID -endpoints FILE [-rate 18] [-applied 0.55] [-duration 10m] [-profiles DIR]
//
// docs/operations.md (Memory) gives the figures it measured.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type devState struct {
	BaseURL     string            `json:"base_url"`
	APIKey      string            `json:"api_key"`
	MetricsURL  string            `json:"metrics_url"`
	InboundURLs map[string]string `json:"inbound_urls"`
}

type counts struct {
	mu                             sync.Mutex
	posts, applied, refused, other int
	reads, readErrors              int
	window                         []time.Duration
}

func main() {
	dir := flag.String("dir", ".commerce", "commerce dev's directory (its dev.json)")
	pid := flag.Int("pid", 0, "the commerce dev process, for its resident size")
	rate := flag.Float64("rate", 18, "inbound posts a second")
	applied := flag.Float64("applied", 0.55, "share of posts that are applied (the others are refused 409)")
	reads := flag.Float64("reads", 4, "REST reads a second")
	duration := flag.Duration("duration", 10*time.Minute, "length of the run")
	every := flag.Duration("every", 10*time.Second, "sampling interval")
	endpoints := flag.String("endpoints", "", "file of erp_order_status endpoint URLs, one a line, the posts spread over them (an endpoint takes two posts a second)")
	profiles := flag.String("profiles", "", "directory for two heap profiles, a third of the way and at the end (needs COMMERCE_PPROF=true)")
	flag.Parse()

	raw, err := os.ReadFile(filepath.Join(*dir, "dev.json"))
	if err != nil {
		log.Fatal(err)
	}
	var st devState
	if err := json.Unmarshal(raw, &st); err != nil {
		log.Fatal(err)
	}
	urls := []string{st.InboundURLs["erp_order_status"]}
	if *endpoints != "" {
		b, err := os.ReadFile(*endpoints)
		if err != nil {
			log.Fatal(err)
		}
		urls = strings.Fields(string(b))
	}
	if len(urls) == 0 || urls[0] == "" || st.MetricsURL == "" {
		log.Fatal("no erp_order_status endpoint URL, or no metrics_url in dev.json")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var c counts
	var wg sync.WaitGroup

	// Posts, open loop: one every 1/rate seconds, each on its own.
	wg.Go(func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			status := "processing"
			if rand.Float64() < *applied {
				status = "fulfilled"
			}
			body := fmt.Sprintf(`{"order_ref":"SO-2026-020%d","status":%q}`, 1+n%5, status)
			url := urls[n%len(urls)]
			wg.Go(func() { c.post(ctx, client, url, body) })
		}
	})
	// Reads: the products and the receipts, as an operator's screens would.
	wg.Go(func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / *reads))
		defer tick.Stop()
		paths := []string{"/api/v1/products?limit=20", "/api/v1/inbound/receipts?limit=20", "/api/v1/orders?limit=20"}
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			c.read(ctx, client, st.BaseURL+paths[n%len(paths)], st.APIKey)
		}
	})

	out := csvOut()
	fmt.Fprintln(out, "seconds,rss_mb,heap_inuse_mb,goroutines,posts,applied,refused,other,reads,read_errors,post_p50_ms,post_p99_ms")
	start := time.Now()
	profileAt := start.Add(*duration / 3)
	type point struct{ at, rss, heap float64 }
	var points []point
	sample := func() {
		rss := rssMB(*pid)
		m := scrape(client, st.MetricsURL)
		points = append(points, point{time.Since(start).Seconds(), rss, m["go_memstats_heap_inuse_bytes"] / (1 << 20)})
		c.mu.Lock()
		p50, p99 := quantile(c.window, 0.5), quantile(c.window, 0.99)
		c.window = c.window[:0]
		fmt.Fprintf(out, "%.0f,%.1f,%.1f,%.0f,%d,%d,%d,%d,%d,%d,%.1f,%.1f\n", time.Since(start).Seconds(), rss,
			m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_goroutines"], c.posts, c.applied, c.refused, c.other,
			c.reads, c.readErrors, ms(p50), ms(p99))
		c.mu.Unlock()
	}
	sample()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	profiled := false
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
		}
		sample()
		if *profiles != "" && !profiled && time.Now().After(profileAt) {
			profiled = true
			heapProfile(client, st.MetricsURL, filepath.Join(*profiles, "heap-1.pb.gz"))
		}
	}
	if *profiles != "" {
		heapProfile(client, st.MetricsURL, filepath.Join(*profiles, "heap-2.pb.gz"))
	}
	wg.Wait()
	// The summary: start, middle and end, and the growth over the second
	// half of the run.
	first, last := points[0], points[len(points)-1]
	mid := points[0]
	for _, p := range points {
		if p.at <= last.at/2 {
			mid = p
		}
	}
	growth := func(a, b float64) float64 { return 100 * (b/a - 1) }
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(os.Stderr, "%.0f s, %d posts (%d applied, %d refused, %d other), %d reads (%d failed)\n"+
		"RSS %.0f -> %.0f -> %.0f MB (second half %+.1f%%); heap in use %.0f -> %.0f -> %.0f MB (second half %+.1f%%)\n",
		last.at, c.posts, c.applied, c.refused, c.other, c.reads, c.readErrors,
		first.rss, mid.rss, last.rss, growth(mid.rss, last.rss), first.heap, mid.heap, last.heap, growth(mid.heap, last.heap))
}

func (c *counts) post(ctx context.Context, client *http.Client, url, body string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	took := time.Since(start)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctx.Err() != nil {
		return // cut by the end of the run
	}
	c.posts++
	c.window = append(c.window, took)
	switch {
	case err != nil:
		c.other++
	case resp.StatusCode == http.StatusOK:
		c.applied++
	case resp.StatusCode == http.StatusConflict:
		c.refused++
	default:
		c.other++
	}
}

func (c *counts) read(ctx context.Context, client *http.Client, url, key string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	ok := err == nil && resp.StatusCode == http.StatusOK
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	c.reads++
	if !ok {
		c.readErrors++
	}
}

// csvOut is standard output, line-buffered enough for a tail -f.
func csvOut() io.Writer { return os.Stdout }

// rssMB reads the process's resident size from /proc (0 without -pid).
func rssMB(pid int) float64 {
	if pid == 0 {
		return 0
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// scrape reads the unlabelled series of a Prometheus text answer.
func scrape(client *http.Client, url string) map[string]float64 {
	out := map[string]float64{}
	resp, err := client.Get(url)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

func heapProfile(client *http.Client, metricsURL, path string) {
	url := strings.TrimSuffix(metricsURL, "/metrics") + "/debug/pprof/heap"
	resp, err := client.Get(url)
	if err != nil {
		log.Printf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.Printf("heap profile: %s answered %d (is COMMERCE_PPROF=true?)", url, resp.StatusCode)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		log.Printf("heap profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		log.Printf("heap profile: %v", err)
	}
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
