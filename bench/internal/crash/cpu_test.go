package crash

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/harness"
)

// The split solves the two runs (n posts with n deliveries; one post with
// n+1 deliveries) for what one post and one delivery cost each process.
func TestTheSplitSolvesTwoRunsForAPostAndADelivery(t *testing.T) {
	const n = 300
	perPost := map[string]time.Duration{"api": 3 * time.Millisecond, "worker": 8 * time.Millisecond, "temporal": 20 * time.Millisecond}
	perDelivery := map[string]time.Duration{"api": time.Millisecond / 2, "worker": 7 * time.Millisecond, "temporal": 15 * time.Millisecond}
	var runs [2]CPU
	runs[0], runs[1] = CPU{}, CPU{}
	for kind := range perPost {
		runs[0][kind] = n*perPost[kind] + n*perDelivery[kind]
		runs[1][kind] = perPost[kind] + (n+1)*perDelivery[kind]
	}
	var out bytes.Buffer
	splitTable(&out, runs, n)
	for _, want := range []string{
		"api         |     3.00 |         0.50",
		"worker      |     8.00 |         7.00",
		"temporal    |    20.00 |        15.00",
		"all         |    31.00 |        22.50",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the split lacks %q:\n%s", want, out.String())
		}
	}
}

// The visibility counts are read from the server's Prometheus text, summed
// by operation over the other labels, and solved like the CPU: a post that
// writes one record (its close) and a delivery that writes two (its start
// and its close) come out as such.
func TestVisibilityCountsAreScrapedByOperationAndSplit(t *testing.T) {
	const n = 300
	page := func(started, closed float64) string {
		return "# TYPE visibility_persistence_requests counter\n" +
			`visibility_persistence_requests{operation="RecordWorkflowExecutionStarted",service_name="history",visibility_type="standard"} ` + strconv.FormatFloat(started/2, 'f', -1, 64) + "\n" +
			`visibility_persistence_requests{operation="RecordWorkflowExecutionStarted",service_name="history",visibility_type="secondary"} ` + strconv.FormatFloat(started/2, 'f', -1, 64) + "\n" +
			`visibility_persistence_requests{operation="RecordWorkflowExecutionClosed",service_name="history"} ` + strconv.FormatFloat(closed, 'f', -1, 64) + "\n" +
			`persistence_requests{operation="UpdateWorkflowExecution"} 99` + "\n"
	}
	var served string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, served) }))
	defer srv.Close()
	scrape := func(started, closed float64) map[string]float64 {
		served = page(started, closed)
		m, err := harness.ScrapeCounter(context.Background(), srv.URL, visibilityCounter)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := scrape(10, 20)
	if base["RecordWorkflowExecutionStarted"] != 10 || base["RecordWorkflowExecutionClosed"] != 20 || len(base) != 2 {
		t.Fatalf("scraped %v, want started 10 and closed 20 alone", base)
	}
	// Run one: n posts (a close each) with n deliveries (a start and a
	// close each); run two: one post and n+1 deliveries.
	runs := [2]map[string]float64{
		harness.CounterDiff(base, scrape(10+n, 20+2*n)),
		harness.CounterDiff(base, scrape(10+(n+1), 20+1+(n+1))),
	}
	var out bytes.Buffer
	splitCounts(&out, runs, n)
	for _, want := range []string{
		"RecordWorkflowExecutionClosed      |     1.00 |         1.00",
		"RecordWorkflowExecutionStarted     |     0.00 |         1.00",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the split lacks %q:\n%s", want, out.String())
		}
	}
	served = "nothing here\n"
	if m, err := harness.ScrapeCounter(context.Background(), srv.URL, visibilityCounter); !errors.Is(err, harness.ErrNoCounter) || len(m) != 0 {
		t.Errorf("a page without the counter: %v, %v; want harness.ErrNoCounter and nothing counted", m, err)
	}
}
