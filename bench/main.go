// Command bench runs every performance harness at a size that finishes in a
// few minutes and prints one table: each hot path's figure next to its
// baseline measured in the same run, the target, and whether it is met.
//
//	go run ./bench [-temporal-store sqlite] [-profiles DIR]
//	go run ./bench -only mapping      # one harness alone, its rows printed
//
// Each harness runs in a process of its own (this program started again;
// the products harness as bench/products, built for the run, which does not
// link the embedded Temporal server), so that one's memory and goroutines
// do not weigh on the next; the rows
// are those of docs/benchmarks.md. It uses BENCH_DATABASE_URL (default:
// database commerce_bench on the local server, created when missing); the
// products catalogue is kept between runs (schema bench_products), the other
// schemas are dropped. With -profiles, each harness writes a CPU profile
// (and the products and mapping runs an allocation profile) into DIR, for
// `go tool pprof -top`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/bench/internal/bulk"
	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/inbound"
	"github.com/commerce-integration/commerce/bench/internal/mapping"
	"github.com/commerce-integration/commerce/bench/internal/procs"
	"github.com/commerce-integration/commerce/bench/internal/products"
	"github.com/commerce-integration/commerce/bench/internal/webhooks"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/tracing"
	"github.com/commerce-integration/commerce/internal/tracing/w3c"
)

type options struct {
	store    string
	profiles string
	only     string // the harness this process runs (set by the parent)
	result   string // where it writes its result as JSON

	products      int
	duration      time.Duration
	events        int
	posts         int
	clients       int
	rounds        int
	webhookRounds int

	mappingPosts, mappingIntakePosts, mappingRuns int
}

func main() {
	var o options
	embedded.StoreFlag(&o.store)
	flag.StringVar(&o.profiles, "profiles", "", "write CPU (and allocation) profiles of each harness into this directory")
	flag.IntVar(&o.products, "products", 200_000, "products catalogue size (kept between runs)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each products throughput run lasts")
	flag.IntVar(&o.events, "events", 1000, "webhook events per round and path")
	flag.IntVar(&o.webhookRounds, "webhook-rounds", 2, "webhook rounds per path")
	flag.IntVar(&o.posts, "posts", 500, "inbound posts per path, one client")
	flag.IntVar(&o.clients, "clients", 8, "inbound concurrent clients")
	flag.IntVar(&o.rounds, "rounds", 5, "bulk rounds per case")
	flag.IntVar(&o.mappingPosts, "mapping-posts", 300, "posts per path, with the ERP mapping and without, through Temporal")
	flag.IntVar(&o.mappingIntakePosts, "mapping-intake-posts", 1000, "posts per path, with the ERP mapping and without, through the intake alone")
	flag.IntVar(&o.mappingRuns, "mapping-runs", 10_000, "runs of the ERP mapping back to back, for the memory series")
	flag.StringVar(&o.only, "only", "", "run only this harness and write its result to -result (products, bulk, inbound, webhooks, traced, mapping)")
	flag.StringVar(&o.result, "result", "", "with -only: the file the result is written to, as JSON (without it, the rows of a harness whose rows need no other's, mapping, are printed)")
	harness.Main(func(ctx context.Context) error {
		if o.only != "" {
			return runOne(ctx, o)
		}
		return runAll(ctx, o)
	})
}

// results are the harnesses' results, as the child processes write them.
type results struct {
	Products products.Result
	Bulk     []bulk.Case
	Inbound  inbound.Result
	Webhooks webhooks.Result
	// Traced is the inbound harness again with tracing on.
	Traced  inbound.Result
	Mapping mapping.Result
}

func profile(o options, name string) string {
	if o.profiles == "" {
		return ""
	}
	return filepath.Join(o.profiles, name)
}

func runOne(ctx context.Context, o options) error {
	if o.profiles != "" {
		// Run by hand, -only has no parent to make the directory.
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return err
		}
	}
	var r any
	var err error
	switch o.only {
	case "products":
		return runProducts(ctx, o)
	case "bulk":
		r, err = bulk.Run(ctx, bulk.Options{Rounds: o.rounds, ProfileCase: "none changed", ProfileFile: profile(o, "bulk.cpu.pprof")})
	case "inbound":
		r, err = inbound.Run(ctx, inbound.Options{Posts: o.posts, Clients: o.clients, Store: o.store, CPUProfile: profile(o, "inbound.cpu.pprof")})
	case "traced":
		r, err = inbound.Run(ctx, inbound.Options{Posts: o.posts, Clients: o.clients, Store: o.store, Traced: true,
			CPUProfile: profile(o, "traced.cpu.pprof")})
	case "webhooks":
		r, err = webhooks.Run(ctx, webhooks.Options{Events: o.events, Rounds: o.webhookRounds, Store: o.store,
			CPUProfile: profile(o, "webhooks.cpu.pprof")})
	case "mapping":
		r, err = mapping.Run(ctx, mapping.Options{Posts: o.mappingPosts, IntakePosts: o.mappingIntakePosts, Runs: o.mappingRuns,
			Store: o.store, CPUProfile: profile(o, "mapping.cpu.pprof"), IntakeCPUProfile: profile(o, "mapping-intake.cpu.pprof"),
			AllocProfile: profile(o, "mapping.allocs.pprof")})
	default:
		return fmt.Errorf("-only %q: no such harness", o.only)
	}
	if err != nil {
		return err
	}
	if o.result == "" {
		// Run by hand: the harness's rows, when they need no other's.
		if m, ok := r.(mapping.Result); ok {
			fmt.Printf("\n=== the mapping rows, measured in this run (Temporal on %s) ===\n\n", o.store)
			return writeRows(os.Stdout, mappingRows(m))
		}
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.result, b, 0o600)
}

func runAll(ctx context.Context, o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-results-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.profiles != "" {
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return err
		}
	}
	var all results
	targets := map[string]any{"products": &all.Products, "bulk": &all.Bulk, "inbound": &all.Inbound, "webhooks": &all.Webhooks,
		"traced": &all.Traced, "mapping": &all.Mapping}
	started := time.Now()
	for _, name := range []string{"products", "bulk", "inbound", "webhooks", "traced", "mapping"} {
		fmt.Printf("\n=== %s ===\n", name)
		file := filepath.Join(dir, name+".json")
		cmd := exec.CommandContext(ctx, self, "-only", name, "-result", file, "-temporal-store", o.store, "-profiles", o.profiles,
			"-products", fmt.Sprint(o.products), "-duration", o.duration.String(), "-events", fmt.Sprint(o.events),
			"-webhook-rounds", fmt.Sprint(o.webhookRounds), "-posts", fmt.Sprint(o.posts), "-clients", fmt.Sprint(o.clients),
			"-rounds", fmt.Sprint(o.rounds), "-mapping-posts", fmt.Sprint(o.mappingPosts),
			"-mapping-intake-posts", fmt.Sprint(o.mappingIntakePosts), "-mapping-runs", fmt.Sprint(o.mappingRuns))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, targets[name]); err != nil {
			return err
		}
	}
	fmt.Printf("\n=== every path against its baseline, measured in this run (%s, Temporal on %s) ===\n\n",
		time.Since(started).Round(time.Second), o.store)
	return printTable(os.Stdout, all, o)
}

// runProducts runs the products harness as bench/products, built for the
// run, writing its result to -result: that binary does not link the
// embedded Temporal server, so the resident memory it reports is an API
// process's as `commerce` built with the tag nodev holds it.
func runProducts(ctx context.Context, o options) error {
	fmt.Print("building bench/products ... ")
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-products-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := procs.BuildPackage(ctx, root, dir, "./bench/products")
	if err != nil {
		return err
	}
	fmt.Println("done")
	args := []string{"-products", fmt.Sprint(o.products), "-duration", o.duration.String(), "-clients", "16", "-keep", "-result", o.result}
	if o.profiles != "" {
		args = append(args, "-cpuprofile", profile(o, "products.cpu.pprof"), "-memprofile", profile(o, "products.allocs.pprof"))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

type row struct {
	path, figure, baseline, value, target string
	pass                                  bool
}

func printTable(w io.Writer, r results, o options) error {
	var none bulk.Case
	for _, c := range r.Bulk {
		if c.Name == "none changed" {
			none = c
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	p := r.Products
	in := r.Inbound
	tr := r.Traced
	wh := r.Webhooks
	extra := in.TemporalP50 - in.DirectP50
	rows := []row{
		{"GET /api/v1/products?limit=100, throughput", fmt.Sprintf("%.0f req/s", p.APIRPS), fmt.Sprintf("bare net/http+pgx %.0f req/s", p.BareRPS),
			fmt.Sprintf("%.2f", p.APIRPS/p.BareRPS), ">= 0.85", p.APIRPS/p.BareRPS >= 0.85},
		{"webhook events delivered per second, through Temporal (every workflow closed)", fmt.Sprintf("%.0f/s", wh.Temporal), fmt.Sprintf("direct %.0f/s", wh.Direct),
			fmt.Sprintf("%.0f/s (%.2f of direct)", wh.Temporal, wh.Temporal/wh.Direct), ">= 300/s", wh.Temporal >= 300},
		{"inbound post p50, through Temporal minus direct", ms(in.TemporalP50), "direct " + ms(in.DirectP50),
			ms(extra), "<= 8 ms", extra <= 8*time.Millisecond},
		{fmt.Sprintf("inbound posts per second, %d clients, Temporal / direct", o.clients), fmt.Sprintf("%.0f/s", in.TemporalRate),
			fmt.Sprintf("direct %.0f/s", in.DirectRate), fmt.Sprintf("%.2f", in.TemporalRate/in.DirectRate), ">= 0.4", in.TemporalRate/in.DirectRate >= 0.4},
		{"bulk 10,000 products, none changed, API / raw COPY", ms(none.API), "raw COPY " + ms(none.Raw),
			fmt.Sprintf("%.2f", float64(none.API)/float64(none.Raw)), "<= 1.3", none.Raw > 0 && float64(none.API)/float64(none.Raw) <= 1.3},
		tracingOffRow(in),
		// Two processes a few minutes apart: the untraced direct path of
		// each says how far the machine drifted between them.
		{"inbound post p50 through Temporal, tracing on / off", ms(tr.TemporalP50),
			fmt.Sprintf("off %s (direct path: on-run %s, off-run %s)", ms(in.TemporalP50), ms(tr.DirectP50), ms(in.DirectP50)),
			fmt.Sprintf("%.2f", float64(tr.TemporalP50)/float64(in.TemporalP50)), "reported", true},
		{fmt.Sprintf("inbound posts per second, %d clients, tracing on / off", o.clients),
			fmt.Sprintf("%.0f/s", tr.TemporalRate), fmt.Sprintf("off %.0f/s (direct path: on-run %.0f/s, off-run %.0f/s)", in.TemporalRate, tr.DirectRate, in.DirectRate),
			fmt.Sprintf("%.2f (%.1f KB of OTLP a post)", tr.TemporalRate/in.TemporalRate, tr.ExportedPerPost/1024), "reported", true},
		{"process RSS under the products load (API, bare handler, clients; no embedded server)", fmt.Sprintf("%.0f MB", float64(p.PeakRSS)/(1<<20)), "-",
			fmt.Sprintf("%.0f MB (anonymous %.0f MB)", float64(p.PeakRSS)/(1<<20), float64(p.PeakAnon)/(1<<20)), "<= 150 MB", p.PeakRSS > 0 && p.PeakRSS <= 150<<20},
	}
	return writeRows(w, append(rows, mappingRows(r.Mapping)...))
}

// writeRows prints rows as a table, and how many targets were not met.
func writeRows(w io.Writer, rows []row) error {
	fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---|---|\n", "path", "measured", "baseline", "ratio / figure", "target", "")
	failed := 0
	for _, x := range rows {
		verdict := "pass"
		if !x.pass {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(w, "| %s | %s | %s | **%s** | %s | %s |\n", x.path, x.figure, x.baseline, x.value, x.target, verdict)
	}
	if failed > 0 {
		fmt.Fprintf(w, "\n%d of %d targets not met\n", failed, len(rows))
	}
	return nil
}

// thousands writes n with its thousands apart: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// mappingRows are the rows of the mapping harness: what the docs' ERP
// mapping adds to the same post's p50, through Temporal and through the
// intake alone, its run alone, and the process's memory over many runs.
func mappingRows(m mapping.Result) []row {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	pair := func(path string, p mapping.Pair) row {
		return row{path, fmt.Sprintf("%s (p90 %s)", ms(p.MappedP50), ms(p.MappedP90)),
			fmt.Sprintf("no mapping %s (p90 %s)", ms(p.PlainP50), ms(p.PlainP90)),
			fmt.Sprintf("%+.2f ms (resampled, 95%%: %+.2f to %+.2f)", float64(p.Extra())/1e6, float64(p.ExtraLow)/1e6, float64(p.ExtraHigh)/1e6),
			"<= 1 ms", p.Extra() <= time.Millisecond}
	}
	mb := func(b int64) string { return fmt.Sprintf("%+.1f MB", float64(b)/(1<<20)) }
	var from, to mapping.Sample
	for _, s := range m.Memory {
		if s.Runs == m.GrowthFrom {
			from = s
		}
		if s.Runs == m.GrowthTo {
			to = s
		}
	}
	return []row{
		pair("inbound post p50 with the docs' ERP mapping minus without, through Temporal", m.Temporal),
		pair("inbound post p50 with the docs' ERP mapping minus without, the intake alone (no Temporal)", m.Intake),
		{"the ERP mapping's run alone (on an engine reused from run to run), p50", fmt.Sprintf("%s (p90 %s)", ms(m.RunP50), ms(m.RunP90)),
			fmt.Sprintf("CPU %s a run, engines made and closed included", ms(m.CPUPerRun)), ms(m.RunP50), "<= 1 ms", m.RunP50 <= time.Millisecond},
		{fmt.Sprintf("process RSS over %s runs of the mapping, growth from run %s", thousands(m.Runs), thousands(m.GrowthFrom)),
			fmt.Sprintf("%.1f MB", float64(to.RSS)/(1<<20)), fmt.Sprintf("%.1f MB at run %s (%.1f to %.1f MB from there on)", float64(from.RSS)/(1<<20),
				thousands(m.GrowthFrom), float64(m.RSSLow)/(1<<20), float64(m.RSSHigh)/(1<<20)),
			mb(m.RSSGrowth), "< 5 MB", m.Runs > 0 && m.RSSGrowth < 5<<20},
		{fmt.Sprintf("Go heap in use after GC over the same runs, growth (%.0f Go allocations, %.1f KB, a run)", m.AllocsPerRun, m.BytesPerRun/1024),
			fmt.Sprintf("%.1f MB", float64(to.HeapInuse)/(1<<20)), fmt.Sprintf("%.1f MB at run %s", float64(from.HeapInuse)/(1<<20), thousands(m.GrowthFrom)),
			mb(m.HeapGrowth), "< 5 MB", m.Runs > 0 && m.HeapGrowth < 5<<20},
	}
}

// tracingOffRow measures what tracing off adds to an inbound post: off, a
// process installs no middleware, tracer or interceptor, and what runs is
// the hooks that find no span in the context (package tracing). They run
// here as often as one post that emits an event and delivers it runs them,
// and their time is set against the post's p50.
func tracingOffRow(in inbound.Result) row {
	ctx := context.Background()
	log := zap.NewNop()
	r := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// The request: its log line and its route name.
			_ = logging.Traced(ctx, log)
			tracing.NameRoute(ctx, "POST", "/api/in/{token}")
			// The receipt's trace id, the event's traceparent, the
			// delivery's start and its attempt's log line.
			_ = w3c.TraceID(ctx)
			_ = w3c.Parent(ctx)
			_ = w3c.WithParent(ctx, nil)
			_ = logging.Traced(ctx, log)
		}
	})
	perPost := time.Duration(r.NsPerOp())
	share := float64(perPost) / float64(in.TemporalP50)
	return row{"tracing off: what it adds to an inbound post (the hooks that find no span)",
		fmt.Sprintf("%d ns, %d allocs", r.NsPerOp(), r.AllocsPerOp()), "post p50 " + fmt.Sprintf("%.1f ms", float64(in.TemporalP50)/1e6),
		fmt.Sprintf("%.4f%%", share*100), "< 0.1% and no allocation", share < 0.001 && r.AllocsPerOp() == 0}
}
