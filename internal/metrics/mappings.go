package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	mappingRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "commerce_mapping_runs_total",
		Help: "Runs of mappings (inbound endpoints) and transformations (webhook subscriptions), by kind and result.",
	}, []string{"kind", "result"})
	mappingRunSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "commerce_mapping_run_seconds",
		Help:    "How long one run of a mapping or transformation took, by kind (a run is cut at 100 ms of CPU, 1 s of real time).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"kind"})
)

func init() {
	Registry.MustRegister(mappingRuns, mappingRunSeconds)
}

// MappingRun counts one run of a mapping or transformation: its kind (the
// owner's: endpoint or subscription), its result, and how long it took.
func MappingRun(kind, result string, d time.Duration) {
	mappingRuns.WithLabelValues(kind, result).Inc()
	mappingRunSeconds.WithLabelValues(kind).Observe(d.Seconds())
}
