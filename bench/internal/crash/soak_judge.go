package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/procs"
)

// Judgement is one series over the judged window.
type Judgement struct {
	Series     string
	Start, End float64 // the means of the window's first and last tenths
	Growth     float64 // (End-Start)/Start
	// Limit is the growth that fails, Floor the absolute change under
	// which no growth fails (3 open files becoming 4 is not a leak).
	Limit, Floor float64
	Failed       bool
}

// The bounds: a series fails when it grows more than 5% (a p99 more than
// 20%) and by more than its family's floor.
var soakBounds = map[string]struct{ limit, floor float64 }{
	famRSS:        {0.05, 8},  // MiB
	famGoroutines: {0.05, 10}, // goroutines (threads for a process without metrics)
	famFiles:      {0.05, 5},
	famConns:      {0.05, 2},
	famHeld:       {0.05, 2},
	famP99:        {0.20, 50}, // ms: a shared machine's scheduling alone moves a p99 by tens of ms
}

// judge compares, for every series but the p50s, the writes' p99 and the
// open connections of a process with pools (plotted, not judged: its
// held connections are), the
// mean of the first tenth of the judged window (at least two samples) with
// the mean of its last tenth: with a sample every 10 s, the first and last
// two minutes of a 20-minute window. Means of a few samples, not single
// points, so that one slow sample or one GC does not decide.
func judge(samples []SoakSample, from time.Duration) []Judgement {
	var w []SoakSample
	for _, s := range samples {
		if s.At >= from {
			w = append(w, s)
		}
	}
	if len(w) < 4 {
		return nil
	}
	edge := max(2, int(math.Ceil(float64(len(w))/10)))
	var out []Judgement
	for _, key := range seriesKeys(samples) {
		fam, what, _ := strings.Cut(key, "/")
		b, ok := soakBounds[fam]
		if !ok || (fam == famP99 && what == "write") {
			continue // the writes, one every few seconds, are too few for a p99: plotted only
		}
		if _, pooled := samples[0].Values[famHeld+"/"+what]; fam == famConns && pooled {
			continue // a pool's idle connections are not a leak: its held ones are judged
		}
		j := Judgement{Series: key, Start: meanOf(w[:edge], key), End: meanOf(w[len(w)-edge:], key), Limit: b.limit, Floor: b.floor}
		if math.IsNaN(j.Start) || math.IsNaN(j.End) {
			continue // not measured (no request of its kind in the window)
		}
		if j.Start > 0 {
			j.Growth = (j.End - j.Start) / j.Start
		} else if j.End > 0 {
			j.Growth = math.Inf(1)
		}
		j.Failed = j.Growth > j.Limit && j.End-j.Start > j.Floor
		out = append(out, j)
	}
	return out
}

func meanOf(w []SoakSample, key string) float64 {
	sum, n := 0.0, 0
	for _, s := range w {
		if v, ok := s.Values[key]; ok && !math.IsNaN(v) {
			sum, n = sum+v, n+1
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// seriesKeys are every series of the samples, sorted.
func seriesKeys(samples []SoakSample) []string {
	seen := map[string]bool{}
	for _, s := range samples {
		for k := range s.Values {
			seen[k] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// printJudgement prints the verdict as a markdown table, ready to paste.
func printJudgement(w io.Writer, r SoakResult) {
	last := time.Duration(0)
	if len(r.Samples) > 0 {
		last = r.Samples[len(r.Samples)-1].At
	}
	n := 0
	for _, s := range r.Samples {
		if s.At >= r.JudgedFrom {
			n++
		}
	}
	fmt.Fprintf(w, "\nJudged window %s to %s (%d samples); start and end are the means of its first and last tenths (at least two samples each).\n\n",
		r.JudgedFrom, last, n)
	fmt.Fprintf(w, "| series | start | end | growth | fails above | verdict |\n|---|---:|---:|---:|---:|---|\n")
	for _, j := range r.Judged {
		verdict := "steady"
		if j.Failed {
			verdict = "**GREW**"
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %+.1f%% | %.0f%% and +%g | %s |\n", j.Series, j.Start, j.End, j.Growth*100, j.Limit*100, j.Floor, verdict)
	}
	if r.Failed() {
		fmt.Fprintf(w, "\nverdict: FAIL (a series grew or a p99 drifted beyond its bound, or too few samples to judge)\n")
	} else {
		fmt.Fprintf(w, "\nverdict: PASS (every series steady over the judged window)\n")
	}
}

// writeSamples writes the samples as samples.csv (a column a series) and
// samples.json.
func writeSamples(dir string, samples []SoakSample) error {
	keys := seriesKeys(samples)
	var b strings.Builder
	b.WriteString("seconds," + strings.Join(keys, ",") + "\n")
	type row struct {
		Seconds float64            `json:"seconds"`
		Values  map[string]float64 `json:"values"`
	}
	rows := make([]row, 0, len(samples))
	for _, s := range samples {
		b.WriteString(strconv.FormatFloat(s.At.Seconds(), 'f', 0, 64))
		vals := map[string]float64{}
		for _, k := range keys {
			v, ok := s.Values[k]
			b.WriteString(",")
			if ok && !math.IsNaN(v) {
				b.WriteString(strconv.FormatFloat(v, 'f', 2, 64))
				vals[k] = v
			}
		}
		b.WriteString("\n")
		rows = append(rows, row{Seconds: s.At.Seconds(), Values: vals})
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.csv"), []byte(b.String()), 0o600); err != nil {
		return err
	}
	j, err := json.MarshalIndent(rows, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "samples.json"), j, 0o600)
}

// takeHeaps saves the heap profiles of ps (an API and a worker), named
// heap-<process>-<when>.pb.gz.
func takeHeaps(ctx context.Context, dir, when string, out func(string, ...any), ps ...soakProc) []string {
	var saved []string
	c := &http.Client{Timeout: 30 * time.Second}
	for _, p := range ps {
		path := filepath.Join(dir, "heap-"+p.name+"-"+when+".pb.gz")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metricsURL+"/debug/pprof/heap", nil)
		if err != nil {
			continue
		}
		resp, err := c.Do(req)
		if err != nil {
			out("  ! heap profile of %s: %v\n", p.name, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK && os.WriteFile(path, b, 0o600) == nil {
			saved = append(saved, path)
		} else {
			out("  ! heap profile of %s: %d %v\n", p.name, resp.StatusCode, err)
		}
	}
	out("  heap profiles (%s): %s\n", when, strings.Join(saved, ", "))
	return saved
}

// printProfileTops prints, for the API and the worker profiled, the top
// of the in-use space at the end, and what grew between the judged
// window's start and the end (go tool pprof -top -diff_base).
func printProfileTops(ctx context.Context, w io.Writer, dir string, ps ...soakProc) {
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return
	}
	for _, p := range ps {
		start := filepath.Join(dir, "heap-"+p.name+"-start.pb.gz")
		end := filepath.Join(dir, "heap-"+p.name+"-end.pb.gz")
		for _, run := range []struct {
			title string
			args  []string
		}{
			{"in-use space at the end", []string{end}},
			{"in-use space grown from the judged window's start to the end", []string{"-diff_base", start, end}},
		} {
			args := append([]string{"tool", "pprof", "-sample_index=inuse_space", "-top", "-nodecount=12"}, run.args...)
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = root
			b, err := cmd.CombinedOutput()
			fmt.Fprintf(w, "\n%s, %s:\n", p.name, run.title)
			if err != nil {
				fmt.Fprintf(w, "  go tool pprof: %v\n%s", err, b)
				continue
			}
			_ = os.WriteFile(filepath.Join(dir, "top-"+p.name+"-"+map[bool]string{true: "end", false: "growth"}[len(run.args) == 1]+".txt"), b, 0o600)
			w.Write(b)
		}
	}
}
