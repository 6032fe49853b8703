// Command products benchmarks GET /api/v1/products?limit=100 on a catalogue
// of 1,000,000 products: the full API (routing, key authentication and rate
// limit, validation, cursor, JSON) next to a bare net/http + pgx handler
// running the same query, in the same run; and the latency of a page at 90%
// depth next to page 1.
//
//	go run ./bench/products [-products 1000000] [-duration 10s] [-clients 16] [-keep]
//
// It uses the database BENCH_DATABASE_URL (default: database commerce_bench
// on the local server, created when missing) and drops its schema when done
// unless -keep is given (a kept catalogue is reused by the next run).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
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

func main() {
	n := flag.Int("products", 1_000_000, "catalogue size")
	duration := flag.Duration("duration", 10*time.Second, "how long each throughput run lasts")
	clients := flag.Int("clients", 16, "concurrent clients")
	keep := flag.Bool("keep", false, "keep the catalogue for the next run")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the API throughput runs to this file")
	harness.Main(func(ctx context.Context) error { return run(ctx, *n, *duration, *clients, *keep) })
}

const schema = "bench_products"

var cpuProfile string

func run(ctx context.Context, n int, duration time.Duration, clients int, keep bool) error {
	d, done, err := harness.ReusedDatabase(ctx, schema, keep)
	if err != nil {
		return err
	}
	defer done()

	orgID, err := catalogue(ctx, d, n)
	if err != nil {
		return err
	}
	// Enough keys that the load never meets a key's rate limit (600 a minute
	// each): the limit is per integration, the load here is many of them.
	keys := make([]string, 0, 400)
	for range cap(keys) {
		_, k, err := d.CreateAPIKey(ctx, orgID, "bench", []domain.Scope{domain.ScopeProductsRead})
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}

	serviceKey := make([]byte, 32)
	codec := cursor.New(serviceKey)
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.InfoLevel))
	apiURL, stopAPI, err := listen(api.New(api.Deps{DB: d, Logger: logger, Cursors: codec, BaseURL: "http://bench"}).Handler())
	if err != nil {
		return err
	}
	defer stopAPI()
	bareURL, stopBare, err := listen(bareHandler(d, orgID))
	if err != nil {
		return err
	}
	defer stopBare()

	fmt.Printf("catalogue: %d products; %d clients; %v per run; GOMAXPROCS=%s\n\n", n, clients, duration, os.Getenv("GOMAXPROCS"))

	// Warm both up, then measure each twice, interleaved, and keep the better
	// run of each: the machine is shared and noisy.
	warm := func(u string) { _, _ = load(u+"/api/v1/products?limit=100", keys, clients, time.Second) }
	warm(apiURL)
	warm(bareURL)
	var apiBest, bareBest result
	for range 2 {
		stopProfile := startProfile()
		a, err := load(apiURL+"/api/v1/products?limit=100", keys, clients, duration)
		stopProfile()
		if err != nil {
			return err
		}
		b, err := load(bareURL+"/api/v1/products?limit=100", keys, clients, duration)
		if err != nil {
			return err
		}
		apiBest, bareBest = better(apiBest, a), better(bareBest, b)
	}
	fmt.Println("GET /api/v1/products?limit=100, throughput")
	fmt.Printf("  %-28s %9.0f req/s   p50 %6.2f ms   p99 %6.2f ms   non-200: %d\n", "API (full stack)", apiBest.rps, ms(apiBest.p50), ms(apiBest.p99), apiBest.failures)
	fmt.Printf("  %-28s %9.0f req/s   p50 %6.2f ms   p99 %6.2f ms   non-200: %d\n", "bare net/http + pgx", bareBest.rps, ms(bareBest.p50), ms(bareBest.p99), bareBest.failures)
	fmt.Printf("  ratio API/bare: %.2f\n\n", apiBest.rps/bareBest.rps)

	// A page at 90% depth: the cursor of the product at position 0.9 n.
	var deepSKU string
	if err := d.Pool().QueryRow(ctx, `SELECT sku FROM products WHERE org_id = $1 ORDER BY sku OFFSET $2 LIMIT 1`, orgID, n*9/10).Scan(&deepSKU); err != nil {
		return err
	}
	deep := codec.Encode("products", orgID.String()+"|", deepSKU)
	first, err := latency(apiURL+"/api/v1/products?limit=100", keys, 500)
	if err != nil {
		return err
	}
	deepL, err := latency(apiURL+"/api/v1/products?limit=100&cursor="+url.QueryEscape(deep), keys, 500)
	if err != nil {
		return err
	}
	fmt.Println("GET /api/v1/products?limit=100, one client, 500 requests each")
	fmt.Printf("  %-28s p50 %6.2f ms   p99 %6.2f ms\n", "page 1", ms(first.p50), ms(first.p99))
	fmt.Printf("  %-28s p50 %6.2f ms   p99 %6.2f ms\n", fmt.Sprintf("page at 90%% depth (#%d)", n*9/10), ms(deepL.p50), ms(deepL.p99))
	fmt.Printf("  ratio deep/first (p50): %.2f\n", float64(deepL.p50)/float64(first.p50))
	return nil
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

func listen(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
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
