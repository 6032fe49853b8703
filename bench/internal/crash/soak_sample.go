package crash

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The metric families a soak samples; a series is family/process.
const (
	famRSS        = "rss_mib"
	famGoroutines = "goroutines"
	famFiles      = "open_files"
	famConns      = "db_conns"
	famHeld       = "db_held"
	famP50        = "p50_ms"
	famP99        = "p99_ms"
)

// SoakSample is one sample: its time from the load's start, and each
// series' value (NaN when it could not be read).
type SoakSample struct {
	At     time.Duration
	Values map[string]float64
}

// line is the sample as one line of progress.
func (s SoakSample) line(procs []soakProc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%5.0fs", s.At.Seconds())
	for _, p := range procs {
		fmt.Fprintf(&b, " | %s %.0fMiB %.0fg %.0ffd %.0fdb", p.name, s.Values[famRSS+"/"+p.name], s.Values[famGoroutines+"/"+p.name],
			s.Values[famFiles+"/"+p.name], s.Values[famConns+"/"+p.name])
		if h, ok := s.Values[famHeld+"/"+p.name]; ok {
			fmt.Fprintf(&b, " (%.0f held)", h)
		}
	}
	fmt.Fprintf(&b, " | post p99 %.0fms, read p99 %.0fms", s.Values[famP99+"/post"], s.Values[famP99+"/read"])
	return b.String()
}

type sampler struct {
	s     *setup
	procs []soakProc
	load  *soakLoad
	hc    *http.Client
	db    string // the service's database
}

func newSampler(s *setup, procs []soakProc, load *soakLoad) *sampler {
	u, _ := url.Parse(s.dbURL)
	return &sampler{s: s, procs: procs, load: load, hc: &http.Client{Timeout: 5 * time.Second}, db: strings.TrimPrefix(u.Path, "/")}
}

// sample reads every process's resident size, goroutines, open files and
// database connections, and the latencies of the window since the last
// sample.
func (m *sampler) sample(ctx context.Context, at time.Duration) SoakSample {
	v := map[string]float64{}
	for _, p := range m.procs {
		pid := p.p.pid()
		status := procStatus(pid)
		v[famRSS+"/"+p.name] = status["VmRSS"] / 1024
		g := math.NaN()
		if p.metricsURL != "" {
			g, _ = m.scrape(ctx, p.metricsURL)
		}
		if math.IsNaN(g) && p.name == "temporal" {
			g = status["Threads"] // no metrics: its threads, named so in docs/operations.md
		}
		v[famGoroutines+"/"+p.name] = g
		fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		v[famFiles+"/"+p.name] = float64(len(fds))
		if err != nil {
			v[famFiles+"/"+p.name] = math.NaN()
		}
	}
	maps, _ := m.conns(ctx)
	for k, n := range maps {
		v[famConns+"/"+k] = float64(n)
	}
	for _, p := range m.procs {
		if _, ok := v[famConns+"/"+p.name]; !ok {
			v[famConns+"/"+p.name] = 0
		}
	}
	for k, h := range m.held(ctx) {
		v[famHeld+"/"+k] = h
	}
	for kind, w := range m.load.window() {
		v[famP50+"/"+kind], v[famP99+"/"+kind] = quantileMs(w, 0.5), quantileMs(w, 0.99)
	}
	return SoakSample{At: at, Values: v}
}

// heldReadings is how many times held reads the connections, heldEvery
// apart.
const (
	heldReadings = 5
	heldEvery    = 100 * time.Millisecond
)

// held reads, for each commerce process, its connections held: open and
// not idle in its pools (in use, or kept outside them), and for the
// service's database in all (service-db). A pool that grew in a burst
// keeps its new connections idle (pgxpool closes them after half an hour
// idle), which is not a leak; a leak holds them. It reads heldReadings
// times, heldEvery apart, and keeps the least of each: a statement in
// flight at one reading is not a connection held, and a leaked one is
// held at every reading. NaN where no reading could be made.
func (m *sampler) held(ctx context.Context) map[string]float64 {
	out := map[string]float64{"service-db": math.NaN()}
	for _, p := range m.procs {
		if p.name != "temporal" && p.metricsURL != "" {
			out[p.name] = math.NaN()
		}
	}
	least := func(k string, v float64) {
		if !math.IsNaN(v) && (math.IsNaN(out[k]) || v < out[k]) {
			out[k] = v
		}
	}
	for i := range heldReadings {
		if i > 0 {
			select {
			case <-ctx.Done():
				return out
			case <-time.After(heldEvery):
			}
		}
		idle := map[string]float64{}
		for _, p := range m.procs {
			if _, ok := out[p.name]; ok {
				_, idle[p.name] = m.scrape(ctx, p.metricsURL)
			}
		}
		conns, err := m.conns(ctx)
		if err != nil {
			continue
		}
		all := 0.0
		for name, in := range idle {
			least(name, float64(conns[name])-in)
			all += in // NaN when one process could not be read
		}
		least("service-db", float64(conns["service-db"])-all)
	}
	return out
}

// procStatus is /proc/<pid>/status's numeric fields (kB for sizes).
func procStatus(pid int) map[string]float64 {
	out := map[string]float64{"VmRSS": math.NaN(), "Threads": math.NaN()}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if n, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// scrape reads, from a process's /metrics, its goroutines (go_goroutines
// of a commerce process; the Temporal server's num_goroutines, one per
// service in the process: the largest) and the connections idle in its
// database pools (commerce_db_pool_idle_connections, every pool's).
func (m *sampler) scrape(ctx context.Context, base string) (goroutines, idle float64) {
	goroutines, idle = math.NaN(), math.NaN()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return goroutines, idle
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return goroutines, idle
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		if name != "go_goroutines" && name != "num_goroutines" && name != "commerce_db_pool_idle_connections" {
			continue
		}
		f := strings.Fields(line)
		n, err := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case err != nil:
		case name == "commerce_db_pool_idle_connections" && math.IsNaN(idle):
			idle = n
		case name == "commerce_db_pool_idle_connections":
			idle += n
		case math.IsNaN(goroutines) || n > goroutines:
			goroutines = n
		}
	}
	if sc.Err() != nil {
		return math.NaN(), math.NaN()
	}
	return goroutines, idle
}

// conns counts the Postgres connections to the run's databases by the
// process that holds them, matching pg_stat_activity's client_port to the
// processes' sockets (the service sets no application_name), and in all
// per side: service-db (the service's database) and temporal-dbs
// (Temporal's two); the harness's own are left out.
func (m *sampler) conns(ctx context.Context) (map[string]int, error) {
	owner := map[int]string{} // local port -> process
	ports := localPorts()
	for _, p := range m.procs {
		for _, inode := range socketInodes(p.p.pid()) {
			if port, ok := ports[inode]; ok {
				owner[port] = p.name
			}
		}
	}
	rows, err := m.s.d.Pool().Query(ctx, `SELECT datname = $1, coalesce(client_port, -1) FROM pg_stat_activity
		WHERE (datname = $1 OR datname LIKE $2) AND application_name <> $3`, m.db, m.db+`\_temporal%`, harnessApp)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var service bool
		var port int32
		if err := rows.Scan(&service, &port); err != nil {
			return nil, err
		}
		if service {
			out["service-db"]++
		} else {
			out["temporal-dbs"]++
		}
		if name, ok := owner[int(port)]; ok {
			out[name]++
		}
	}
	return out, rows.Err()
}

// socketInodes are the inodes of pid's open sockets.
func socketInodes(pid int) []string {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, _ := os.ReadDir(dir)
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/" + fd.Name())
		if err == nil && strings.HasPrefix(target, "socket:[") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"))
		}
	}
	return out
}

// tcpSocket is a line of /proc/net/tcp.
type tcpSocket struct {
	port   int
	listen bool
}

// tcpSockets are the TCP sockets of the network namespace by inode.
func tcpSockets() map[string]tcpSocket {
	out := map[string]tcpSocket{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[0] == "sl" {
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if !ok || err != nil {
				continue
			}
			out[fs[9]] = tcpSocket{port: int(port), listen: fs[3] == "0A"}
		}
	}
	return out
}

// localPorts maps the namespace's connected TCP sockets' inodes to their
// local ports.
func localPorts() map[string]int {
	out := map[string]int{}
	for inode, s := range tcpSockets() {
		if !s.listen {
			out[inode] = s.port
		}
	}
	return out
}

// metricsListener finds pid's metrics listener among its listening
// sockets, but the port skip (the API's): the one that answers /metrics.
func metricsListener(pid, skip int) string {
	all := tcpSockets()
	var ports []int
	for _, inode := range socketInodes(pid) {
		if s, ok := all[inode]; ok && s.listen && s.port != skip {
			ports = append(ports, s.port)
		}
	}
	slices.Sort(ports)
	c := &http.Client{Timeout: 5 * time.Second}
	for _, port := range ports {
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		resp, err := c.Get(base + "/metrics")
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return base
		}
	}
	return ""
}

// quantileMs is the q quantile of d in milliseconds; NaN when d is empty.
func quantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)
	return float64(s[max(i, 0)].Microseconds()) / 1000
}
