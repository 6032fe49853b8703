package crash

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// visibilityCounter is the Temporal server's count of requests to its
// visibility store (the records List calls and the Web UI search), by
// operation: RecordWorkflowExecutionStarted, UpsertWorkflowExecution,
// RecordWorkflowExecutionClosed and the reads.
const visibilityCounter = "visibility_persistence_requests"

// visibilitySettle is how long after a burst the visibility counters are
// read: the server's visibility queue reads at most twice a second
// (docker-compose.yml's dynamic config), so the last runs' records are
// written within half a second of their close.
const visibilitySettle = 2 * time.Second

// scrapeCounter reads the counter name from a Prometheus endpoint, summed
// by its operation label over every other label.
func scrapeCounter(ctx context.Context, url, name string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		metric, _, _ := strings.Cut(line, "{")
		if metric != name && metric != name+"_total" {
			continue
		}
		op := promLabel(line, "operation")
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil || op == "" {
			continue
		}
		out[op] += v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, fmt.Errorf("%s: %w %s", url, errNoCounter, name)
	}
	return out, nil
}

// errNoCounter is scrapeCounter's error for a page without the counter: a
// server that has not yet made a request of the kind counted, or the
// wrong endpoint.
var errNoCounter = errors.New("no counter")

// promLabel is the value of label name in a Prometheus text line.
func promLabel(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// counterDiff is after less before, the operations that did not move left
// out.
func counterDiff(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for op, v := range after {
		if d := v - before[op]; d > 0 {
			out[op] = d
		}
	}
	return out
}

// splitCounts solves two runs' counts (posts with a delivery each, n of
// them; then one post and n+1 deliveries) for each operation's count per
// post and per delivery, as splitTable does for CPU, and prints them.
func splitCounts(w io.Writer, counts [2]map[string]float64, n int) {
	ops := map[string]bool{}
	for _, c := range counts {
		for op := range c {
			ops[op] = true
		}
	}
	fmt.Fprintf(w, "\n%-34s | %8s | %12s\n", "operation", "per post", "per delivery")
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		m, d1 := counts[0][op], counts[1][op]
		perDelivery := (d1 - m/float64(n)) / float64(n)
		perPost := m/float64(n) - perDelivery
		fmt.Fprintf(w, "%-34s | %8.2f | %12.2f\n", op, perPost, perDelivery)
	}
}
