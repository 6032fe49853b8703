package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	mappingRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "commerce_mapping_runs_total",
		Help: "Runs of mappings (kind inbound) and transformations (kind outbound) by result: mapped, ignored, transformed, skipped, or failed (a throw or a limit).",
	}, []string{"kind", "result"})
	mappingRunSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "commerce_mapping_run_seconds",
		Help:    "How long one run of a mapping or transformation took, start to end, by kind.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"kind"})
)

// The results a mapping run is counted under.
var mappingResults = map[string][]string{
	"inbound":  {"mapped", "ignored", "failed"},
	"outbound": {"transformed", "skipped", "failed"},
}

func init() {
	Registry.MustRegister(mappingRuns, mappingRunSeconds)
	for kind, results := range mappingResults {
		mappingRunSeconds.WithLabelValues(kind)
		for _, r := range results {
			mappingRuns.WithLabelValues(kind, r)
		}
	}
}

// MappingRun counts one run of a mapping (kind inbound) or transformation
// (kind outbound) with its result, and how long it took.
func MappingRun(kind, result string, d time.Duration) {
	mappingRuns.WithLabelValues(kind, result).Inc()
	mappingRunSeconds.WithLabelValues(kind).Observe(d.Seconds())
}
