package crash

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"

	"github.com/commerce-integration/commerce/internal/devtemporal"
)

// SoakOptions size a long run of the production shape under steady load
// (no faults): how long, how much load, how often each process is sampled,
// and where the samples, plots and heap profiles go.
type SoakOptions struct {
	Duration time.Duration
	// Out is the directory of the samples (CSV, JSON), the SVG plots and
	// the heap profiles; a new temporary directory when empty.
	Out string
	// Rate is inbound posts a second, Applied the share of them applied
	// (the others refused 409); Reads and Writes are REST calls a second.
	Rate, Applied, Reads, Writes float64
	// Every is the sampling interval.
	Every time.Duration
	// InFlight bounds the requests in flight: a tick that finds it full
	// sends nothing and counts the request as shed.
	InFlight int
	// Warmup is load before the first sample, not sampled: the Temporal
	// server starts its pollers and fills its caches in its first minute
	// under load, which a short run would otherwise judge as growth.
	Warmup time.Duration
	// SharedDB makes the run's databases on the server CRASH_DATABASE_URL
	// names (or the local one) instead of a private cluster (soakCluster).
	SharedDB bool
}

// DefaultSoak is the steady load of a long run: 10 posts a second (55%
// applied, as bench/devload), 4 reads and half a write a second, sampled
// every 10 s. The production shape on a 2-core machine takes about 16
// posts a second at most (with its deliveries); a long run judges whether
// the processes hold steady under load they keep up with, so it asks for
// about 60% of that, so that another program on the machine for a while
// does not leave a backlog that every later sample would judge.
func DefaultSoak() SoakOptions {
	return SoakOptions{Rate: 10, Applied: 0.55, Reads: 4, Writes: 0.5, Every: 10 * time.Second, InFlight: 64}
}

// SoakFlags registers the soak's flags.
func SoakFlags() *SoakOptions {
	s := DefaultSoak()
	flag.DurationVar(&s.Duration, "soak", 0, "prod shape: instead of the runs, a run of this length under steady load, each process sampled, judged for growth (docs/operations.md, Long runs)")
	flag.StringVar(&s.Out, "soak-out", "", "soak: directory of the samples, plots and heap profiles (a new temporary directory when empty)")
	flag.Float64Var(&s.Rate, "soak-rate", s.Rate, "soak: inbound posts a second")
	flag.Float64Var(&s.Applied, "soak-applied", s.Applied, "soak: share of the posts applied (the others are refused 409)")
	flag.Float64Var(&s.Reads, "soak-reads", s.Reads, "soak: REST reads a second")
	flag.Float64Var(&s.Writes, "soak-writes", s.Writes, "soak: REST writes (customers created) a second")
	flag.DurationVar(&s.Every, "soak-every", s.Every, "soak: sampling interval")
	flag.DurationVar(&s.Warmup, "soak-warmup", s.Warmup, "soak: load before the first sample, neither sampled nor judged")
	flag.BoolVar(&s.SharedDB, "soak-shared-db", false, "soak: make the databases on CRASH_DATABASE_URL's server (or the local one) instead of a private cluster with PostgreSQL's default settings")
	return &s
}

// SoakResult is a long run's samples and its verdict.
type SoakResult struct {
	Dir     string
	Samples []SoakSample
	// JudgedFrom is where the judged window starts.
	JudgedFrom time.Duration
	Judged     []Judgement
	Load       map[string]loadTotals
	Profiles   []string
}

// Failed reports that a series grew or a p99 drifted beyond its bound, or
// that there was nothing to judge.
func (r SoakResult) Failed() bool {
	if len(r.Judged) == 0 {
		return true
	}
	for _, j := range r.Judged {
		if j.Failed {
			return true
		}
	}
	return false
}

// soakProc is one sampled process: its name in the series, and where its
// metrics are.
type soakProc struct {
	name       string
	p          *proc
	metricsURL string // base URL of its metrics listener; empty when none
}

// Soak starts the production shape as a run without faults does, puts a
// steady load on it for so.Duration, samples every process every so.Every,
// takes heap profiles of one API and one worker when the judged window
// starts and at the end, and judges the series (soak_judge.go).
func Soak(ctx context.Context, o Options, so SoakOptions) (SoakResult, error) {
	var res SoakResult
	if so.Every <= 0 || so.Duration < 3*so.Every || so.Rate <= 0 || so.Applied < 0 || so.Applied > 1 || so.InFlight < 1 {
		return res, errors.New("-soak must be at least three -soak-every, -soak-rate positive, -soak-applied between 0 and 1")
	}
	o.Shape, o.Runs, o.Posts, o.Deliveries, o.Faults = ShapeProd, 1, 1, 1, []Fault{}
	o.Clients = max(o.Clients, 1)
	if err := o.validate(); err != nil {
		return res, err
	}
	ports, err := devtemporal.FreePorts("127.0.0.1", 1)
	if err != nil {
		return res, err
	}
	promURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	o.Env = append(o.Env, "COMMERCE_PPROF=true")
	o.TemporalEnv = append(o.TemporalEnv, "PROMETHEUS_ENDPOINT=127.0.0.1:"+strconv.Itoa(ports[0]))
	if res.Dir = so.Out; res.Dir == "" {
		if res.Dir, err = os.MkdirTemp("", "soak-"); err != nil {
			return res, err
		}
	} else if err := os.MkdirAll(res.Dir, 0o750); err != nil {
		return res, err
	}
	out := func(format string, args ...any) { fmt.Fprintf(o.Out, format, args...) }
	out("soak: samples, plots and heap profiles in %s\n", res.Dir)

	buildDir, err := os.MkdirTemp("", "crash-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(buildDir)
	cf, err := readCompose(ctx)
	if err != nil {
		return res, err
	}
	bins, err := buildProd(ctx, buildDir, out)
	if err != nil {
		return res, err
	}
	if o.Bin != "" {
		bins.commerce = o.Bin
	}
	s := &setup{opts: o, bins: bins, compose: cf}
	if !so.SharedDB {
		var stop func()
		if s.server, stop, err = soakCluster(ctx, out); err != nil {
			return res, err
		}
		defer stop() // after s.close, which drops the run's databases in it
	}
	defer s.close()
	if err := s.start(ctx); err != nil {
		return res, err
	}
	procs, err := s.soakProcs(promURL)
	if err != nil {
		return res, err
	}
	ld, err := s.soakLoad(ctx, so)
	if err != nil {
		return res, err
	}
	res.JudgedFrom = judgedFrom(so.Duration)
	out("soak: %s of %.0f posts/s (%.0f%% applied), %.1f reads/s, %.1f writes/s over %d APIs and %d workers; a sample every %s; judged from %s\n",
		so.Duration, so.Rate, so.Applied*100, so.Reads, so.Writes, o.APIs, o.Workers, so.Every, res.JudgedFrom)

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ld.run(loadCtx) })
	if so.Warmup > 0 {
		out("soak: warming up for %s\n", so.Warmup)
		select {
		case <-ctx.Done():
			stopLoad()
			wg.Wait()
			return res, ctx.Err()
		case <-time.After(so.Warmup):
		}
	}
	sm := newSampler(s, procs, ld)
	start := time.Now()
	tick := time.NewTicker(so.Every)
	profiled := false
	api, worker := procs[0], procs[o.APIs]
	for n := 1; time.Duration(n)*so.Every <= so.Duration; n++ {
		select {
		case <-ctx.Done():
			tick.Stop()
			stopLoad()
			wg.Wait()
			return res, ctx.Err()
		case <-tick.C:
		}
		at := time.Duration(n) * so.Every
		smp := sm.sample(ctx, at)
		res.Samples = append(res.Samples, smp)
		out("  %s\n", smp.line(procs))
		if !profiled && at >= res.JudgedFrom {
			profiled = true
			res.Profiles = append(res.Profiles, takeHeaps(ctx, res.Dir, "start", out, api, worker)...)
		}
	}
	tick.Stop()
	res.Profiles = append(res.Profiles, takeHeaps(ctx, res.Dir, "end", out, api, worker)...)
	stopLoad()
	wg.Wait()
	out("soak: load stopped after %.0fs\n", time.Since(start).Seconds())
	res.Load = ld.totals()
	printLoad(o.Out, res.Load)

	res.Judged = judge(res.Samples, res.JudgedFrom)
	printJudgement(o.Out, res)
	if err := writeSamples(res.Dir, res.Samples); err != nil {
		return res, err
	}
	plots, err := writePlots(res.Dir, res.Samples, res.JudgedFrom)
	if err != nil {
		return res, err
	}
	out("\nplots: %v\n", plots)
	printProfileTops(ctx, o.Out, res.Dir, api, worker)
	return res, nil
}

// soakCluster starts a private PostgreSQL cluster, initialised with the
// server's default settings, for a long run's databases (the service's and
// the Temporal server's two), and returns its URL and a function that stops
// it and removes it. A server shared with other programs may run without
// autovacuum (test servers often do): its tables then keep every
// dead row and are planned without statistics, which a run of 30 minutes
// would judge as the service's drift. Production servers vacuum and
// analyse; so does this cluster.
func soakCluster(ctx context.Context, out func(string, ...any)) (string, func(), error) {
	started := time.Now()
	pg, stop, err := privateCluster(ctx)
	if err != nil {
		return "", nil, err
	}
	var autovacuum string
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err == nil {
		err = conn.QueryRow(ctx, `SHOW autovacuum`).Scan(&autovacuum)
		conn.Close(ctx)
	}
	if err != nil {
		stop()
		return "", nil, err
	}
	out("soak: a private PostgreSQL cluster on port %d for the run's databases (autovacuum %s), in %.1fs\n",
		pg.Port(), autovacuum, time.Since(started).Seconds())
	return pg.URL("postgres"), stop, nil
}

// judgedFrom is where the judged window starts: the last 20 minutes of a
// run of 30 minutes or more, the last two thirds of a shorter one.
func judgedFrom(d time.Duration) time.Duration {
	if d >= 30*time.Minute {
		return d - 20*time.Minute
	}
	return d / 3
}

// soakProcs names the processes to sample and finds each one's metrics
// listener: the APIs' and the workers' listen on a port of their own
// choosing (COMMERCE_METRICS_LISTEN=127.0.0.1:0), found from their
// listening sockets; the Temporal server's on promURL.
func (s *setup) soakProcs(promURL string) ([]soakProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []soakProc
	for i, p := range s.apis {
		out = append(out, soakProc{name: "api-" + strconv.Itoa(i+1), p: p, metricsURL: metricsListener(p.pid(), s.apiPorts[i])})
	}
	for i, p := range s.workers {
		out = append(out, soakProc{name: "worker-" + strconv.Itoa(i+1), p: p, metricsURL: metricsListener(p.pid(), 0)})
	}
	out = append(out, soakProc{name: "temporal", p: s.temporal.proc, metricsURL: promURL})
	for _, sp := range out[:len(out)-1] {
		if sp.metricsURL == "" {
			return nil, fmt.Errorf("%s (pid %d): no metrics listener found among its sockets", sp.name, sp.p.pid())
		}
	}
	return out, nil
}

// withHostCache is c with the Temporal server's host-level workflow cache
// (history.hostLevelCacheMaxSize in its dynamic config) holding n
// workflows: a short soak sizes it to fill within its warm-up.
func (c compose) withHostCache(n int) compose {
	const name = "temporal-dynamicconfig"
	var dc map[string]any
	if err := yaml.Unmarshal([]byte(c.Configs[name].Content), &dc); err != nil || dc == nil {
		dc = map[string]any{}
	}
	dc["history.hostLevelCacheMaxSize"] = []map[string]any{{"value": n}}
	raw, err := yaml.Marshal(dc)
	if err != nil {
		return c
	}
	configs := maps.Clone(c.Configs)
	entry := configs[name]
	entry.Content = string(raw)
	configs[name] = entry
	c.Configs = configs
	return c
}
