// Package mapping benchmarks what an endpoint's mapping (docs/mappings.md)
// adds to an inbound post: the same erp_order_status post, sent as the ERP
// sends it to an endpoint with the docs' ERP mapping, and sent already in
// the action's shape to an endpoint without one, interleaved in blocks so
// that the machine's noise falls on both alike. It measures the difference
// three ways:
//
//   - through the full API and the embedded Temporal server (the one
//     `commerce dev` runs), each post applied: every post moves an order of
//     its own from confirmed to in progress and sets its tracking URL;
//   - through the intake alone (integrations' Receive without Temporal:
//     the endpoint lookup, the mapping, the shape check and the stored
//     receipt), where the difference is not lost in Temporal's noise;
//   - the mapping's run alone, on the runner the intake uses.
//
// Then it runs the mapping back to back (10,000 times by default) and
// samples the process's resident memory and Go heap every 1,000 runs: the
// growth from the 2,000th run to the last says whether a run leaves
// anything behind.
//
//	go run ./bench/mapping [-posts 1000] [-intake-posts 2000] [-runs 10000]
//
// It uses BENCH_DATABASE_URL (default: database commerce_bench on the local
// server, created when missing) and drops its schema when done.
package mapping

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/procs"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/workflows"
)

const (
	schema = "bench_mapping"
	// perEndpoint posts go to one endpoint before the next is used, below
	// the burst of 120 so that no post meets the rate limit.
	perEndpoint = 100
	// block is how many posts one path makes before the other's turn.
	block = 10
	// warm is how many posts each path makes before the measured ones.
	warm = 20
	// paced is how many runs of the mapping alone are timed one at a time.
	paced = 1000
	// sampleEvery is how often the back-to-back runs sample memory.
	sampleEvery = 1000
	// growthFrom is the run the memory growth is counted from: the first
	// thousands warm the allocators and the engine's pool.
	growthFrom = 2000
)

// Options say how big a run is.
type Options struct {
	// Posts is the posts per path through the full API and Temporal (0
	// skips them).
	Posts int
	// IntakePosts is the posts per path through the intake alone.
	IntakePosts int
	// Runs is how many times the mapping runs back to back for the memory
	// series (at least growthFrom + sampleEvery).
	Runs int
	// Store is what the embedded Temporal server keeps its state in
	// (embedded.Stores).
	Store string
	// CPUProfile, when set, is where a CPU profile of the posts through
	// Temporal (both paths, interleaved) is written; IntakeCPUProfile
	// the same of the posts through the intake alone; AllocProfile the
	// process's allocations (go tool pprof -sample_index=alloc_space)
	// at the end.
	CPUProfile, IntakeCPUProfile, AllocProfile string
}

// Pair is the same post's latency with the mapping and without.
type Pair struct {
	MappedP50, MappedP90, PlainP50, PlainP90 time.Duration
	// ExtraLow and ExtraHigh bound the middle 95% of the difference of
	// the p50s over resamples of the posts (a bootstrap): how far the
	// machine's noise alone moves it.
	ExtraLow, ExtraHigh time.Duration
}

// Extra is what the mapping adds to the p50.
func (p Pair) Extra() time.Duration { return p.MappedP50 - p.PlainP50 }

// Sample is the process's memory after a number of runs.
type Sample struct {
	Runs int
	// RSS is VmRSS of /proc/self/status; HeapInuse the Go heap in use
	// after a collection.
	RSS, HeapInuse uint64
}

// Result is what a run measured.
type Result struct {
	Temporal, Intake Pair
	// RunP50 and RunP90 are the mapping's run alone (Runner.Run on the
	// post's input), one at a time with a pause between, as posts come.
	RunP50, RunP90 time.Duration
	// BackToBack is the p50 of the back-to-back runs; CPUPerRun the
	// process's CPU time per run over them (the run and the preparation
	// of the engine of the next); AllocsPerRun and BytesPerRun the Go
	// allocations per run.
	BackToBack                time.Duration
	CPUPerRun                 time.Duration
	AllocsPerRun, BytesPerRun float64
	Memory                    []Sample
	RSSGrowth, HeapGrowth     int64 // bytes, from run growthFrom to the last
	// RSSLow and RSSHigh are the least and most RSS sampled from run
	// growthFrom on: how much it wanders without growing.
	RSSLow, RSSHigh            uint64
	GrowthFrom, GrowthTo, Runs int
}

// Run measures it all.
func Run(ctx context.Context, o Options) (Result, error) {
	var res Result
	if o.Runs < growthFrom+sampleEvery {
		return res, fmt.Errorf("-runs %d: at least %d, to see the growth after run %d", o.Runs, growthFrom+sampleEvery, growthFrom)
	}
	example, err := erpExample(ctx)
	if err != nil {
		return res, err
	}
	d, done, err := harness.Database(ctx, schema)
	if err != nil {
		return res, err
	}
	defer done()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Bench Ltd", OwnerEmail: "o@bench.example"})
	if err != nil {
		return res, err
	}

	// The mapping alone first, while the process holds nothing else.
	if err := runAlone(ctx, example, o.Runs, &res); err != nil {
		return res, err
	}

	// The intake alone: a service without Temporal ends each post at its
	// start stage (recording that no workflow could be started).
	intake := integrations.New(integrations.Deps{DB: d, BaseURL: "http://bench"})
	defer intake.Scripts.Runner.Close()
	b := &bench{d: d, org: org.ID, service: intake, example: example}
	receive := func(l *lane) (time.Duration, error) { return b.receive(ctx, l) }
	if _, _, err := b.interleave(ctx, warm, receive); err != nil {
		return res, err
	}
	stop := harness.CPUProfile(o.IntakeCPUProfile)
	mapped, plain, err := b.interleave(ctx, o.IntakePosts, receive)
	stop()
	if err != nil {
		return res, err
	}
	res.Intake = pair(mapped, plain)
	fmt.Printf("\nthe intake alone (no Temporal), %d posts per path, interleaved in blocks of %d\n\n", o.IntakePosts, block)
	printPair(res.Intake)

	if o.Posts == 0 {
		return res, nil
	}
	// Through the full API and Temporal: each post moves an order of its
	// own, seeded confirmed.
	if err := seedOrders(ctx, d, org.ID, 2*(warm+o.Posts)); err != nil {
		return res, err
	}
	acts := &activities.Activities{DB: d, Log: zap.NewNop(), BaseURL: "http://bench"}
	tc, stopTemporal, err := embedded.Temporal(ctx, acts, o.Store)
	if err != nil {
		return res, err
	}
	defer stopTemporal()
	service := integrations.New(integrations.Deps{DB: d, Workflows: workflows.NewClient(tc, "default"), BaseURL: "http://bench",
		Namespace: "default"})
	defer service.Scripts.Runner.Close()
	full, err := harness.Listen(api.New(api.Deps{DB: d, Service: service, Temporal: tc, Logger: zap.NewNop(),
		Cursors: cursor.New(make([]byte, 32)), BaseURL: "http://bench"}).Handler())
	if err != nil {
		return res, err
	}
	b = &bench{d: d, org: org.ID, service: service, example: example, base: full}
	send := func(l *lane) (time.Duration, error) { return b.post(l) }
	if _, _, err := b.interleave(ctx, warm, send); err != nil {
		return res, err
	}
	stop = harness.CPUProfile(o.CPUProfile)
	mapped, plain, err = b.interleave(ctx, o.Posts, send)
	stop()
	if err != nil {
		return res, err
	}
	res.Temporal = pair(mapped, plain)
	fmt.Printf("\nthrough the API and Temporal, each post applied, %d posts per path, interleaved in blocks of %d\n\n", o.Posts, block)
	printPair(res.Temporal)
	if o.AllocProfile != "" {
		if err := writeAllocs(o.AllocProfile); err != nil {
			return res, err
		}
	}
	return res, nil
}

// example is the ERP example of docs/mappings.md.
type example struct {
	post    map[string]any // the ERP's document
	mapping string
}

// fence is a code block of docs/mappings.md that belongs to an example.
var fence = regexp.MustCompile("(?ms)^```[a-z]+ example=erp ([a-z]+)\n(.*?)^```")

// erpExample reads the ERP example's post and mapping from docs/mappings.md,
// as written there (a test runs them as written).
func erpExample(ctx context.Context) (example, error) {
	var ex example
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return ex, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "mappings.md"))
	if err != nil {
		return ex, err
	}
	blocks := map[string]string{}
	for _, m := range fence.FindAllStringSubmatch(string(raw), -1) {
		blocks[m[1]] = m[2]
	}
	if blocks["post"] == "" || blocks["mapping"] == "" {
		return ex, fmt.Errorf("docs/mappings.md: no ERP example (post and mapping)")
	}
	if err := json.Unmarshal([]byte(blocks["post"]), &ex.post); err != nil {
		return ex, fmt.Errorf("docs/mappings.md: the ERP post: %w", err)
	}
	ex.mapping = blocks["mapping"]
	return ex, nil
}

// bodies are the post of order n as the ERP sends it (the docs' post, its
// DocNum and tracking URL those of the order) and as the mapping makes it.
func (ex example) bodies(n int) (sent, shaped []byte) {
	number, tracking := orderNumber(n), fmt.Sprintf("https://track.example/1Z%07d", n)
	so := ex.post["SalesOrder"].(map[string]any)
	so["DocNum"] = number
	so["DocStatus"] = "SHP"
	so["Shipping"].(map[string]any)["TrackingURL"] = tracking
	sent, _ = json.Marshal(ex.post)
	shaped, _ = json.Marshal(map[string]any{"order_ref": number, "status": "shipped", "tracking_url": tracking})
	return sent, shaped
}

func orderNumber(n int) string { return fmt.Sprintf("SO-2026-%05d", n) }

// seedOrders seeds orders 1 to n, confirmed.
func seedOrders(ctx context.Context, d *db.DB, org uuid.UUID, n int) error {
	const chunk = 500
	for first := 1; first <= n; first += chunk {
		var f domain.SeedFile
		for i := first; i < first+chunk && i <= n; i++ {
			f.Orders = append(f.Orders, domain.SeedOrder{Number: orderNumber(i), Status: domain.OrderConfirmed, Currency: "GBP",
				Lines: []domain.SeedOrderLine{{Position: 1, LineType: domain.LineProduct, Description: "Bolts", Qty: 100, UOM: "each", UnitPriceMinor: 1000}}})
		}
		if _, err := d.Seed(ctx, org, &f); err != nil {
			return fmt.Errorf("seeding orders: %w", err)
		}
	}
	return nil
}

type bench struct {
	d       *db.DB
	org     uuid.UUID
	service *integrations.Service
	example example
	base    string // the full API's base URL ("" for the intake alone)
	seq     int    // the last order posted
}

// lane is one path's current endpoint.
type lane struct {
	mapped bool
	token  string
	used   int
}

// interleave makes n posts on each path, in blocks of block, the path that
// goes first alternating, and returns their latencies.
func (b *bench) interleave(ctx context.Context, n int, send func(*lane) (time.Duration, error)) (mapped, plain []time.Duration, err error) {
	lanes := []*lane{{mapped: true}, {mapped: false}}
	for round := 0; len(mapped) < n; round++ {
		k := min(block, n-len(mapped))
		for i := range 2 {
			l := lanes[(round+i)%2]
			for range k {
				if l.token == "" || l.used == perEndpoint {
					if err := b.endpoint(ctx, l); err != nil {
						return nil, nil, err
					}
				}
				t, err := send(l)
				if err != nil {
					return nil, nil, err
				}
				l.used++
				if l.mapped {
					mapped = append(mapped, t)
				} else {
					plain = append(plain, t)
				}
			}
		}
	}
	return mapped, plain, nil
}

// endpoint gives the lane a fresh erp_order_status endpoint, with the
// docs' ERP mapping on the mapped lane's (outside the timing).
func (b *bench) endpoint(ctx context.Context, l *lane) error {
	e, err := b.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: b.org, AsEmail: "o@bench.example", Name: "bench",
		Action: domain.ActionERPOrderStatus})
	if err != nil {
		return err
	}
	if l.mapped {
		if _, err := b.service.SetEndpointMapping(ctx, integrations.OperatorActor("bench"), b.org, e.ID, b.example.mapping); err != nil {
			return err
		}
	}
	l.token, l.used = e.Token, 0
	return nil
}

// body is the next post of the lane: the ERP's document to the mapped
// lane, the action's body to the other.
func (b *bench) body(l *lane) []byte {
	b.seq++
	sent, shaped := b.example.bodies(b.seq)
	if l.mapped {
		return sent
	}
	return shaped
}

// post sends the lane's next post through the full API and checks that
// its order moved.
func (b *bench) post(l *lane) (time.Duration, error) {
	body := b.body(l)
	start := time.Now()
	resp, err := http.Post(b.base+"/api/in/"+l.token, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"outcome":"applied"`)) ||
		!bytes.Contains(raw, []byte(`"in_progress"`)) {
		return 0, fmt.Errorf("post (mapped %v): %d %s", l.mapped, resp.StatusCode, raw)
	}
	return elapsed, nil
}

// receive carries the lane's next post through the intake alone: it is
// stored as a receipt and, no workflow service being configured, ends at
// the start stage.
func (b *bench) receive(ctx context.Context, l *lane) (time.Duration, error) {
	body := b.body(l)
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"Go-http-client/1.1"}}
	start := time.Now()
	ans, err := b.service.Receive(ctx, integrations.Request{Token: l.token, Received: start, Header: h, Body: bytes.NewReader(body)})
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if ans.Stage != domain.StageStart || ans.ReceiptID == uuid.Nil {
		return 0, fmt.Errorf("intake (mapped %v): stopped at %s: %d %s %s", l.mapped, ans.Stage, ans.Status, ans.Error, ans.Body)
	}
	return elapsed, nil
}

// runAlone times the mapping's run alone, then runs it back to back and
// samples the process's memory.
func runAlone(ctx context.Context, ex example, runs int, res *Result) error {
	s := integrations.New(integrations.Deps{}).Scripts
	defer s.Runner.Close()
	prog, err := s.Compile(ex.mapping)
	if err != nil {
		return err
	}
	received := time.Now()
	sent, _ := ex.bodies(1)
	// The argument the intake gives map: {body, headers, received_at}.
	in, _ := json.Marshal(map[string]any{"body": json.RawMessage(sent),
		"headers":     map[string]string{"Content-Type": "application/json", "User-Agent": "Go-http-client/1.1"},
		"received_at": received.UTC().Format("2006-01-02T15:04:05.000Z07:00")})
	one := func() (time.Duration, error) {
		start := time.Now()
		out, err := s.Runner.Run(ctx, prog, "map", in, received)
		elapsed := time.Since(start)
		if err != nil {
			return 0, err
		}
		if !bytes.HasPrefix(out.Output, []byte(`{"order_ref":`)) {
			return 0, fmt.Errorf("the mapping made %s", out.Output)
		}
		return elapsed, nil
	}

	// One at a time, as posts come, with a pause between them.
	var alone []time.Duration
	for range paced {
		t, err := one()
		if err != nil {
			return err
		}
		alone = append(alone, t)
		time.Sleep(2 * time.Millisecond)
	}
	res.RunP50, res.RunP90 = pct(alone, 50), pct(alone, 90)

	// Back to back, sampling memory every sampleEvery runs.
	fmt.Printf("\nthe mapping run back to back, %d runs: memory after each %d\n\n", runs, sampleEvery)
	fmt.Printf("%8s %10s %12s\n", "runs", "RSS", "Go heap")
	sample := func(n int) error {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		rss, err := vmRSS()
		if err != nil {
			return err
		}
		res.Memory = append(res.Memory, Sample{Runs: n, RSS: rss, HeapInuse: m.HeapInuse})
		fmt.Printf("%8d %8.1fMB %10.1fMB\n", n, mb(rss), mb(m.HeapInuse))
		return nil
	}
	if err := sample(0); err != nil {
		return err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	var back []time.Duration
	for n := 1; n <= runs; n++ {
		t, err := one()
		if err != nil {
			return err
		}
		back = append(back, t)
		if n%sampleEvery == 0 {
			if n == sampleEvery {
				// The Go allocations of the first thousand runs, read
				// before any sample's collection is counted.
				runtime.ReadMemStats(&after)
				res.AllocsPerRun = float64(after.Mallocs-before.Mallocs) / sampleEvery
				res.BytesPerRun = float64(after.TotalAlloc-before.TotalAlloc) / sampleEvery
			}
			if err := sample(n); err != nil {
				return err
			}
		}
	}
	res.CPUPerRun = (cpuTime() - cpu0) / time.Duration(runs)
	res.BackToBack = pct(back, 50)
	res.Runs = runs
	first := slices.IndexFunc(res.Memory, func(s Sample) bool { return s.Runs == growthFrom })
	last := res.Memory[len(res.Memory)-1]
	res.GrowthFrom, res.GrowthTo = growthFrom, last.Runs
	res.RSSGrowth = int64(last.RSS) - int64(res.Memory[first].RSS)
	res.HeapGrowth = int64(last.HeapInuse) - int64(res.Memory[first].HeapInuse)
	res.RSSLow, res.RSSHigh = last.RSS, last.RSS
	for _, s := range res.Memory[first:] {
		res.RSSLow, res.RSSHigh = min(res.RSSLow, s.RSS), max(res.RSSHigh, s.RSS)
	}
	fmt.Printf("\ngrowth from run %d to run %d: RSS %+.1f MB (between %.1f and %.1f MB), Go heap %+.2f MB\n", growthFrom, last.Runs,
		float64(res.RSSGrowth)/(1<<20), mb(res.RSSLow), mb(res.RSSHigh), float64(res.HeapGrowth)/(1<<20))
	fmt.Printf("\n%-44s %9s %9s\n", "the mapping's run alone (Runner.Run)", "p50", "p90")
	fmt.Printf("%-44s %7.3fms %7.3fms\n", fmt.Sprintf("one at a time, %d runs", paced), ms(res.RunP50), ms(res.RunP90))
	fmt.Printf("%-44s %7.3fms %7.3fms\n", fmt.Sprintf("back to back, %d runs", runs), ms(res.BackToBack), ms(pct(back, 90)))
	fmt.Printf("process CPU per run back to back (engines made and closed included): %.3f ms; Go allocations per run: %.0f (%.1f KB)\n",
		ms(res.CPUPerRun), res.AllocsPerRun, res.BytesPerRun/1024)
	return nil
}

// vmRSS is the process's resident memory, from /proc/self/status.
func vmRSS() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/self/status: no VmRSS")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeAllocs writes the process's allocation profile to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

func pair(mapped, plain []time.Duration) Pair {
	p := Pair{MappedP50: pct(mapped, 50), MappedP90: pct(mapped, 90), PlainP50: pct(plain, 50), PlainP90: pct(plain, 90)}
	p.ExtraLow, p.ExtraHigh = bootstrap(mapped, plain)
	return p
}

// bootstrap resamples both paths' posts (with replacement, 1,000 times)
// and returns the 2.5th and 97.5th percentiles of p50(mapped) - p50(plain).
func bootstrap(mapped, plain []time.Duration) (low, high time.Duration) {
	rng := rand.New(rand.NewPCG(1, 2))
	resample := func(d []time.Duration, into []time.Duration) time.Duration {
		for i := range into {
			into[i] = d[rng.IntN(len(d))]
		}
		slices.Sort(into)
		return into[len(into)/2]
	}
	a, b := make([]time.Duration, len(mapped)), make([]time.Duration, len(plain))
	diffs := make([]time.Duration, 1000)
	for i := range diffs {
		diffs[i] = resample(mapped, a) - resample(plain, b)
	}
	slices.Sort(diffs)
	return diffs[len(diffs)*25/1000], diffs[len(diffs)*975/1000]
}

func printPair(p Pair) {
	fmt.Printf("%-44s %9s %9s\n", "path", "p50", "p90")
	fmt.Printf("%-44s %7.2fms %7.2fms\n", "the ERP's document, through the ERP mapping", ms(p.MappedP50), ms(p.MappedP90))
	fmt.Printf("%-44s %7.2fms %7.2fms\n", "the same post in the action's shape, no mapping", ms(p.PlainP50), ms(p.PlainP90))
	fmt.Printf("%-44s %+7.2fms %+7.2fms\n", "mapped - plain", ms(p.MappedP50-p.PlainP50), ms(p.MappedP90-p.PlainP90))
	fmt.Printf("the difference of the p50s, 95%% of 1,000 resamples of the posts: %+.2f to %+.2f ms\n", ms(p.ExtraLow), ms(p.ExtraHigh))
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
