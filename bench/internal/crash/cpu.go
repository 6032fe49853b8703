package crash

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commerce-integration/commerce/internal/devtemporal"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times on Linux.
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU (user and system) process pid has used, read from
// /proc; false when it cannot be read (gone, or not Linux).
func cpuTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// cpuBook adds up the CPU each kind of process used during the burst: the
// processes the run started (from the burst's start, or their own, to
// their kill or the burst's end), and Postgres's backends of the run's
// databases (sampled while they live).
type cpuBook struct {
	began time.Time
	mu    sync.Mutex
	used  map[string]time.Duration // by kind: api, worker, temporal
	procs map[*proc]time.Duration  // a started process's CPU at the burst's start
	pg    map[int]backendCPU       // a backend's CPU when first and last seen
}

// backendCPU is one Postgres backend: whose it is, and its CPU when first
// and last seen.
type backendCPU struct {
	kind        string
	first, last time.Duration
}

func newCPUBook() *cpuBook {
	return &cpuBook{began: time.Now(), used: map[string]time.Duration{}, procs: map[*proc]time.Duration{}, pg: map[int]backendCPU{}}
}

// idleCPU lets the run's processes sit with nothing to do for d, then
// measures what each kind uses a second over the next d: the background a
// burst pays for too, whatever its work (the workers' polls and sweeps,
// the Temporal server's queues and membership, their databases' share).
func (s *setup) idleCPU(ctx context.Context, d time.Duration) (CPU, error) {
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	if err := wait(d); err != nil {
		return nil, err
	}
	book := newCPUBook()
	s.mu.Lock()
	live := append(append(slices.Clone(s.apis), s.workers...), s.temporal.proc)
	s.mu.Unlock()
	for _, p := range live {
		book.begin(p)
	}
	u, _ := url.Parse(s.dbURL)
	name := strings.TrimPrefix(u.Path, "/")
	for end := time.Now().Add(d); time.Now().Before(end); {
		s.sampleBackends(ctx, book, name)
		if err := wait(100 * time.Millisecond); err != nil {
			return nil, err
		}
	}
	s.sampleBackends(ctx, book, name)
	for _, p := range live {
		book.end(p)
	}
	took := time.Since(book.began)
	used := book.close()
	for k, v := range used {
		used[k] = time.Duration(float64(v) / took.Seconds())
	}
	return used, nil
}

// begin notes p's CPU now: the burst starts, or p was started during it.
func (c *cpuBook) begin(p *proc) {
	if c == nil || p == nil {
		return
	}
	t, _ := cpuTime(p.pid())
	c.mu.Lock()
	c.procs[p] = t
	c.mu.Unlock()
}

// end adds what p used since begin, before it is killed or as the burst
// ends.
func (c *cpuBook) end(p *proc) {
	if c == nil || p == nil {
		return
	}
	t, ok := cpuTime(p.pid())
	c.mu.Lock()
	defer c.mu.Unlock()
	if from, began := c.procs[p]; began && ok {
		c.used[p.kind] += t - from
		delete(c.procs, p)
	}
}

// backend notes the CPU of a Postgres backend of kind (postgres/service or
// postgres/temporal) at one sample.
func (c *cpuBook) backend(pid int, kind string) {
	t, ok := cpuTime(pid)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen, known := c.pg[pid]
	if !known || seen.kind != kind {
		seen = backendCPU{kind: kind, first: t}
	}
	seen.last = t
	c.pg[pid] = seen
}

// CPU is what each kind of process used during a run's burst.
type CPU map[string]time.Duration

// close adds up the backends and returns the book.
func (c *cpuBook) close() CPU {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := CPU{}
	for k, v := range c.used {
		out[k] = v
	}
	for _, seen := range c.pg {
		out[seen.kind] += seen.last - seen.first
	}
	return out
}

// print writes one line per kind: CPU seconds, and milliseconds per post
// (each post's invoice is one delivery too) and per unit of work.
func (c CPU) print(w io.Writer, run, posts, deliveries int) {
	var total time.Duration
	for _, kind := range cpuKinds {
		total += c[kind]
	}
	for _, kind := range append(cpuKinds, "all") {
		v := c[kind]
		if kind == "all" {
			v = total
		}
		fmt.Fprintf(w, "%-4d | %-11s | %8.2f | %18.2f | %5.0f%%\n", run, kind, v.Seconds(),
			float64(v.Microseconds())/1000/float64(posts+deliveries), 100*v.Seconds()/max(total.Seconds(), 1e-9))
	}
}

var cpuKinds = []string{"api", "worker", "temporal", "pg/service", "pg/temporal"}

// SplitCPU runs the production shape twice without faults: posts with one
// delivery each (posts = deliveries = n), then deliveries alone (one post,
// n more deliveries from customers created through the REST API, ten a
// call), and solves the two for each process's CPU per post and per
// delivery. A delivery's share counts the REST call that made its event; a
// post's counts the relaying of its event.
//
// Each run first measures its processes idle (SplitIdle), and the second
// table takes that background, times the burst's length, off each run's
// CPU: a burst that lasts longer because a subscription's rate paces it
// then costs no more per delivery than a quick one.
func SplitCPU(ctx context.Context, o Options, n int) error {
	o.Runs, o.Faults, o.Idle = 1, []Fault{}, SplitIdle
	ports, err := devtemporal.FreePorts("127.0.0.1", 1)
	if err != nil {
		return err
	}
	o.TemporalMetrics = "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"
	o.TemporalEnv = append(slices.Clone(o.TemporalEnv), "PROMETHEUS_ENDPOINT=127.0.0.1:"+strconv.Itoa(ports[0]))
	mixed, only := o, o
	mixed.Posts, mixed.Deliveries = n, n
	only.Posts, only.Deliveries = 1, n+1
	var cpu, work [2]CPU
	var vis [2]map[string]float64
	for i, opts := range []Options{mixed, only} {
		res, err := Run(ctx, opts)
		if err != nil {
			return err
		}
		if len(res) != 1 || res[0].Failed() || res[0].CPU == nil {
			return fmt.Errorf("the run of %d posts and %d deliveries did not complete cleanly", opts.Posts, opts.Deliveries)
		}
		r := res[0]
		cpu[i], work[i], vis[i] = r.CPU, CPU{}, r.Visibility
		fmt.Fprintf(o.Out, "\nrun %d, idle before its burst (CPU ms a second): ", i+1)
		for _, kind := range cpuKinds {
			work[i][kind] = max(0, r.CPU[kind]-time.Duration(float64(r.IdleCPU[kind])*r.CPUFor.Seconds()))
			fmt.Fprintf(o.Out, "%s %.1f  ", kind, r.IdleCPU[kind].Seconds()*1000)
		}
		fmt.Fprintf(o.Out, "(burst measured over %.1fs)\n", r.CPUFor.Seconds())
	}
	fmt.Fprintf(o.Out, "\nCPU per post and per delivery, by process (ms; from the two runs above)\n")
	splitTable(o.Out, cpu, n)
	fmt.Fprintf(o.Out, "\nThe same, less each process's idle CPU over its burst\n")
	splitTable(o.Out, work, n)
	fmt.Fprintf(o.Out, "\nThe Temporal server's visibility-store requests per post and per delivery, by operation (%s)\n", visibilityCounter)
	splitCounts(o.Out, vis, n)
	return nil
}

// SplitIdle is how long SplitCPU's runs let their processes settle, and
// then measure them, idle before each burst.
const SplitIdle = 5 * time.Second

// splitTable solves the two runs' CPU for each process's per post and per
// delivery, and prints them.
func splitTable(w io.Writer, cpu [2]CPU, n int) {
	fmt.Fprintf(w, "\n%-11s | %8s | %12s\n", "process", "per post", "per delivery")
	var post, delivery float64
	for _, kind := range cpuKinds {
		// mixed = n*post + n*delivery; only = post + (n+1)*delivery.
		m, d1 := cpu[0][kind].Seconds()*1000, cpu[1][kind].Seconds()*1000
		perDelivery := (d1 - m/float64(n)) / float64(n)
		perPost := m/float64(n) - perDelivery
		post, delivery = post+perPost, delivery+perDelivery
		fmt.Fprintf(w, "%-11s | %8.2f | %12.2f\n", kind, perPost, perDelivery)
	}
	fmt.Fprintf(w, "%-11s | %8.2f | %12.2f\n", "all", post, delivery)
}
