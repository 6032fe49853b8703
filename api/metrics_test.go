package api_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// Metric labels come from closed sets: made-up methods are OTHER and paths
// that match no route are "unmatched", so such requests add no series.
func TestMetricsKeepAFixedSetOfSeries(t *testing.T) {
	f := newFixture(t)
	series := func() int {
		b := f.scrape()
		n := 0
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "commerce_http_") {
				n++
			}
		}
		return n
	}
	madeUp := func(i int) string { return fmt.Sprintf("X%d%s", i, strings.Repeat("M", 2048)) }
	random := func() string { return fmt.Sprintf("/%x/%x", rand.Uint64(), rand.Uint64()) }
	send := func(i int) {
		f.do(madeUp(i), "/healthz", "", nil)
		f.do(madeUp(i), random(), "", nil)
		f.do(http.MethodGet, random(), "", nil)
		f.do(http.MethodGet, "/api/v1/"+random(), f.key, nil)
	}
	send(0) // the first of each kind makes its series, as does a scrape
	series()
	first := series()
	for i := 1; i <= 50; i++ {
		send(i)
	}
	if n := series(); n != first {
		t.Fatalf("%d series after 200 more requests, %d before", n, first)
	}
	b := f.scrape()
	for _, want := range []string{`method="OTHER",route="unmatched"`, `method="GET",route="unmatched"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no series with %s", want)
		}
	}
	if strings.Contains(string(b), "MMMM") {
		t.Error("a made-up method is a label value")
	}
}

// The runtime profiles are never served by the public handler: only the
// metrics listener serves them, when COMMERCE_PPROF is true.
func TestPublicListenerServesNoProfiles(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline", "/api/v1/debug/pprof/heap"} {
		if status, _, _ := f.do("GET", path, f.key, nil); status != 404 {
			t.Errorf("GET %s on the public handler: %d, want 404", path, status)
		}
	}
}
