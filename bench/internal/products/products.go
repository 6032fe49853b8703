// Package products benchmarks GET /api/v1/products?limit=100 on a catalogue
// of 1,000,000 products: the full API (routing, key authentication and rate
// limit, validation, cursor, JSON) next to a bare net/http + pgx handler
// running the same query, in the same run; and the latency of a page at 90%
// depth next to page 1.
//
//	go run ./bench/products [-products 1000000] [-duration 10s] [-clients 16] [-keep]
//
// It also samples the resident memory of the process (which holds the API,
// the bare handler and the clients) while the API is under load.
//
// It uses the database BENCH_DATABASE_URL (default: database commerce_bench
// on the local server, created when missing) and drops its schema when done
// unless -keep is given (a kept catalogue is reused by the next run).
package products

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/cursor"
)

// Options say how big a run is.
type Options struct {
	Products   int           // catalogue size
	Duration   time.Duration // how long each throughput run lasts
	Clients    int           // concurrent clients
	Keep       bool          // keep the catalogue for the next run
	CPUProfile string        // write a CPU profile of the first API throughput run here
	MemProfile string        // write an allocation profile after the API throughput runs here
}

// Result is what a run measured.
type Result struct {
	APIRPS, BareRPS float64
	// PeakRSS is the most resident memory the process held, in bytes,
	// sampled while the API was under load; PeakAnon is the most of it
	// that was anonymous (heap, stacks), the rest being pages of the
	// executable mapped in.
	PeakRSS, PeakAnon int64
	Failures          int64
}

const schema = "bench_products"

var cpuProfile string

// Run measures the API next to the bare handler.
func Run(ctx context.Context, o Options) (Result, error) {
	cpuProfile = o.CPUProfile
	return run(ctx, o.Products, o.Duration, o.Clients, o.Keep, o.MemProfile)
}

func run(ctx context.Context, n int, duration time.Duration, clients int, keep bool, memProfile string) (Result, error) {
	d, done, err := harness.ReusedDatabase(ctx, schema, keep)
	if err != nil {
		return Result{}, err
	}
	defer done()

	orgID, err := catalogue(ctx, d, n)
	if err != nil {
		return Result{}, err
	}
	keys, err := harness.APIKeys(ctx, d, orgID, 400, domain.ScopeProductsRead)
	if err != nil {
		return Result{}, err
	}

	serviceKey := make([]byte, 32)
	codec := cursor.New(serviceKey)
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.InfoLevel))
	apiURL, stopAPI, err := harness.Serve(api.New(api.Deps{DB: d, Logger: logger, Cursors: codec, BaseURL: "http://bench"}).Handler())
	if err != nil {
		return Result{}, err
	}
	defer stopAPI()
	bareURL, stopBare, err := harness.Serve(bareHandler(d, orgID))
	if err != nil {
		return Result{}, err
	}
	defer stopBare()

	fmt.Printf("catalogue: %d products; %d clients; %v per run; GOMAXPROCS=%s\n\n", n, clients, duration, os.Getenv("GOMAXPROCS"))

	// Warm both up, then measure each twice, interleaved, and keep the better
	// run of each: the machine is shared and noisy.
	warm := func(u string) { _, _ = load(u+"/api/v1/products?limit=100", keys, clients, time.Second) }
	warm(apiURL)
	warm(bareURL)
	// What loading the catalogue allocated is given back before the API's
	// memory is sampled.
	runtime.GC()
	debug.FreeOSMemory()
	if memProfile != "" { // the allocations of the runs are this one's difference from the next
		if err := writeHeapProfile(memProfile + ".base"); err != nil {
			return Result{}, err
		}
	}
	var apiBest, bareBest result
	var peakRSS, peakAnon int64
	for range 2 {
		stopProfile := startProfile()
		stopRSS := sampleRSS(&peakRSS, &peakAnon)
		a, err := load(apiURL+"/api/v1/products?limit=100", keys, clients, duration)
		stopRSS()
		stopProfile()
		if err != nil {
			return Result{}, err
		}
		b, err := load(bareURL+"/api/v1/products?limit=100", keys, clients, duration)
		if err != nil {
			return Result{}, err
		}
		apiBest, bareBest = better(apiBest, a), better(bareBest, b)
	}
	if memProfile != "" {
		if err := writeHeapProfile(memProfile); err != nil {
			return Result{}, err
		}
	}
	res := Result{APIRPS: apiBest.rps, BareRPS: bareBest.rps, PeakRSS: peakRSS, PeakAnon: peakAnon, Failures: apiBest.failures + bareBest.failures}
	fmt.Println("GET /api/v1/products?limit=100, throughput")
	fmt.Printf("  %-28s %9.0f req/s   p50 %6.2f ms   p99 %6.2f ms   non-200: %d\n", "API (full stack)", apiBest.rps, ms(apiBest.p50), ms(apiBest.p99), apiBest.failures)
	fmt.Printf("  %-28s %9.0f req/s   p50 %6.2f ms   p99 %6.2f ms   non-200: %d\n", "bare net/http + pgx", bareBest.rps, ms(bareBest.p50), ms(bareBest.p99), bareBest.failures)
	fmt.Printf("  ratio API/bare: %.2f\n", apiBest.rps/bareBest.rps)
	fmt.Printf("  process RSS under the API load, at most: %.0f MB (anonymous: %.0f MB)\n\n", float64(peakRSS)/(1<<20), float64(peakAnon)/(1<<20))

	// A page at 90% depth: the cursor of the product at position 0.9 n.
	var deepSKU string
	if err := d.Pool().QueryRow(ctx, `SELECT sku FROM products WHERE org_id = $1 ORDER BY sku OFFSET $2 LIMIT 1`, orgID, n*9/10).Scan(&deepSKU); err != nil {
		return res, err
	}
	deep := codec.Encode("products", orgID.String()+"|", deepSKU)
	first, err := latency(apiURL+"/api/v1/products?limit=100", keys, 500)
	if err != nil {
		return res, err
	}
	deepL, err := latency(apiURL+"/api/v1/products?limit=100&cursor="+url.QueryEscape(deep), keys, 500)
	if err != nil {
		return res, err
	}
	fmt.Println("GET /api/v1/products?limit=100, one client, 500 requests each")
	fmt.Printf("  %-28s p50 %6.2f ms   p99 %6.2f ms\n", "page 1", ms(first.p50), ms(first.p99))
	fmt.Printf("  %-28s p50 %6.2f ms   p99 %6.2f ms\n", fmt.Sprintf("page at 90%% depth (#%d)", n*9/10), ms(deepL.p50), ms(deepL.p99))
	fmt.Printf("  ratio deep/first (p50): %.2f\n", float64(deepL.p50)/float64(first.p50))
	return res, nil
}

// catalogue makes sure the benchmark organisation holds n products, loading
// them with COPY when it does not.
func catalogue(ctx context.Context, d *db.DB, n int) (uuid.UUID, error) {
	var orgID uuid.UUID
	err := d.Pool().QueryRow(ctx, `SELECT id FROM organisations WHERE name = 'Benchmark Ltd'`).Scan(&orgID)
	if err == nil {
		var have int
		if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM products WHERE org_id = $1`, orgID).Scan(&have); err != nil {
			return orgID, err
		}
		if have == n {
			fmt.Printf("reusing %d products\n", have)
			return orgID, nil
		}
		if _, err := d.Pool().Exec(ctx, `DELETE FROM products WHERE org_id = $1`, orgID); err != nil {
			return orgID, err
		}
	} else {
		capN := n * 2
		org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Benchmark Ltd", ProductCap: &capN})
		if err != nil {
			return orgID, err
		}
		orgID = org.ID
	}
	fmt.Printf("loading %d products ... ", n)
	start := time.Now()
	categories := []string{"Fasteners", "Abrasives", "Adhesives", "Hand tools", "Power tools", "Safety", "Fixings", "Storage"}
	rows := make([][]any, 0, n)
	for i := range n {
		rows = append(rows, []any{db.NewID(), orgID, fmt.Sprintf("SKU-%07d", (i*7919)%n), fmt.Sprintf("Product %d stainless hex bolt", i),
			categories[i%len(categories)], "each", int64(100 + i%5000), "GBP", map[string]any{"i": i}, "active"})
	}
	_, err = d.Pool().CopyFrom(ctx, pgx.Identifier{"products"},
		[]string{"id", "org_id", "sku", "title", "category", "uom", "price_minor", "currency", "attrs", "status"}, pgx.CopyFromRows(rows))
	if err != nil {
		return orgID, err
	}
	if _, err := d.Pool().Exec(ctx, "ANALYZE products"); err != nil {
		return orgID, err
	}
	fmt.Printf("%.1fs\n", time.Since(start).Seconds())
	return orgID, nil
}

// bareHandler answers the same query with nothing else: no authentication,
// no rate limit, no validation framework, no middleware.
func bareHandler(d *db.DB, orgID uuid.UUID) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
		if err != nil || limit < 1 || limit > 500 {
			limit = 100
		}
		rows, err := d.ListProducts(r.Context(), orgID, db.ProductFilter{}, r.URL.Query().Get("after"), limit)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var next *string
		if len(rows) > limit {
			rows = rows[:limit]
			s := rows[limit-1].SKU
			next = &s
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"products": rows, "next_cursor": next})
	})
}

// startProfile profiles the CPU until the returned function is called, when
// -cpuprofile is given (the first call only).
func startProfile() func() {
	if cpuProfile == "" {
		return func() {}
	}
	f, err := os.Create(cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: cpuprofile:", err)
		return func() {}
	}
	cpuProfile = ""
	_ = pprof.StartCPUProfile(f)
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// sampleRSS records in peak the most resident memory of the process, and
// in anon the most of it that was anonymous, every 50 ms until the returned
// function is called.
func sampleRSS(peak, anon *int64) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			total, a := rss()
			*peak, *anon = max(*peak, total), max(*anon, a)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// rss is the process's resident memory in bytes, and the anonymous part of
// it (VmRSS and RssAnon; 0 where /proc is not there).
func rss() (total, anon int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	kB := func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		return n << 10
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			total = kB(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kB(v)
		}
	}
	return total, anon
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

type result struct {
	rps      float64
	p50, p99 time.Duration
	failures int64
}

func better(a, b result) result {
	if b.rps > a.rps {
		return b
	}
	return a
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func newClient(clients int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxConnsPerHost: clients * 2}}
}

// load runs clients concurrent loops against u for d, spreading requests
// over keys, and reports throughput and latency percentiles.
func load(u string, keys []string, clients int, d time.Duration) (result, error) {
	client := newClient(clients)
	var count, failures atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			for i := c; time.Now().Before(deadline); i += clients {
				req, _ := http.NewRequest("GET", u, nil)
				req.Header.Set("Authorization", "Bearer "+keys[i%len(keys)])
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					failures.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				local = append(local, time.Since(t0))
				if resp.StatusCode != 200 {
					failures.Add(1)
				}
				count.Add(1)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	p50, p99 := percentiles(lat)
	return result{rps: float64(count.Load()) / elapsed.Seconds(), p50: p50, p99: p99, failures: failures.Load()}, nil
}

// latency times n sequential requests to u.
func latency(u string, keys []string, n int) (result, error) {
	client := newClient(1)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+keys[i%len(keys)])
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return result{}, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return result{}, fmt.Errorf("%s answered %d", u, resp.StatusCode)
		}
		lat = append(lat, time.Since(t0))
	}
	p50, p99 := percentiles(lat)
	return result{p50: p50, p99: p99}, nil
}

func percentiles(lat []time.Duration) (time.Duration, time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)*99/100]
}
