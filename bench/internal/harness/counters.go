package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ErrNoCounter is ScrapeCounter's error for a page without the counter:
// a server that has not yet made a request of the kind counted, or the
// wrong endpoint.
var ErrNoCounter = errors.New("no counter")

// ScrapeCounter reads the counter name (or name_total) from the Prometheus
// text at url, summed by its operation label over every other label (a
// Temporal server's persistence_requests, visibility_persistence_requests).
// A page without it gives an empty map and ErrNoCounter.
func ScrapeCounter(ctx context.Context, url, name string) (map[string]float64, error) {
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
		return out, fmt.Errorf("%s: %w %s", url, ErrNoCounter, name)
	}
	return out, nil
}

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

// CounterDiff is after less before, the operations that did not move
// left out.
func CounterDiff(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for op, v := range after {
		if d := v - before[op]; d > 0 {
			out[op] = d
		}
	}
	return out
}
