// Package metrics holds the process's own Prometheus series beyond the
// HTTP server's: the Temporal SDK's (workflow task schedule-to-start and
// the rest, through Temporal), inbound outcomes and webhook attempts as the
// worker records them, database pool use, and the backlogs read from the
// database when scraped. The alert rules of deploy/prometheus and the
// dashboard of deploy/grafana are written over them (docs/operations.md#alerts).
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/version"
)

// Registry holds the series of this package. A process serves it beside
// its own (Handler); it holds no Go runtime collectors, which those have.
var Registry = prometheus.NewRegistry()

var (
	inboundOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "commerce_inbound_outcomes_total",
		Help: "Outcomes recorded on inbound posts, by action and outcome (a parked post that applies later counts parked, then applied).",
	}, []string{"action", "outcome"})
	webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "commerce_webhook_attempts_total",
		Help: "Webhook delivery attempts by result (succeeded, failed: another attempt follows, exhausted) and by the state of the subscription after the attempt (healthy, failing).",
	}, []string{"result", "subscription_state"})
)

// buildInfo is 1, labelled with the release the process runs.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "commerce_build_info",
	Help: "Always 1, labelled with the release (version), the commit (revision, where the build recorded it) and the Go version of the process.",
}, []string{"version", "revision", "goversion"})

func init() {
	Registry.MustRegister(inboundOutcomes, webhookAttempts, buildInfo)
	v := version.Get()
	buildInfo.WithLabelValues(v.Version, v.Revision, v.GoVersion).Set(1)
	// Every series the rules read exists from the start, at 0: a rate over
	// a series that appears only with its first failure misses it.
	for _, a := range domain.Actions {
		for _, o := range domain.Outcomes {
			if o != domain.OutcomePending {
				inboundOutcomes.WithLabelValues(string(a), string(o))
			}
		}
	}
	for _, r := range []string{"succeeded", "failed", "exhausted"} {
		webhookAttempts.WithLabelValues(r, "healthy")
		webhookAttempts.WithLabelValues(r, "failing")
	}
}

// InboundOutcome counts an outcome recorded on an inbound post.
func InboundOutcome(action, outcome string) { inboundOutcomes.WithLabelValues(action, outcome).Inc() }

// WebhookAttempt counts a webhook attempt: its result (succeeded, failed or
// exhausted) and whether its subscription is failing after it.
func WebhookAttempt(result string, failing bool) {
	state := "healthy"
	if failing {
		state = "failing"
	}
	webhookAttempts.WithLabelValues(result, state).Inc()
}

// Handler serves Registry with the other gatherers given (the process's
// own registry, with the Go runtime's series).
func Handler(others ...prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(append(prometheus.Gatherers{Registry}, others...), promhttp.HandlerOpts{})
}

// register adds c to Registry once: a second process part (the API and the
// worker of `commerce dev`) registering the same series keeps the first.
func register(c prometheus.Collector) {
	var already prometheus.AlreadyRegisteredError
	if err := Registry.Register(c); err != nil && !errors.As(err, &already) {
		panic(err)
	}
}

// ---- database pools

var (
	poolAcquired = prometheus.NewDesc("commerce_db_pool_acquired_connections", "Connections of the pool in use.", []string{"pool"}, nil)
	poolMax      = prometheus.NewDesc("commerce_db_pool_max_connections", "The most connections the pool opens.", []string{"pool"}, nil)
	poolIdle     = prometheus.NewDesc("commerce_db_pool_idle_connections", "Connections of the pool open and idle.", []string{"pool"}, nil)
	poolWaits    = prometheus.NewDesc("commerce_db_pool_empty_acquires_total", "Acquires that waited because no connection was free.", []string{"pool"}, nil)
	poolWaited   = prometheus.NewDesc("commerce_db_pool_acquire_wait_seconds_total", "Time spent waiting for a free connection.", []string{"pool"}, nil)
)

type poolCollector struct {
	mu    sync.Mutex
	pools map[string]func() *pgxpool.Stat
}

var pools = &poolCollector{pools: map[string]func() *pgxpool.Stat{}}

func init() { Registry.MustRegister(pools) }

// Pool exports the use of a pgx pool under the label pool=name (api,
// worker): the alert on pool saturation reads it.
func Pool(name string, stat func() *pgxpool.Stat) {
	pools.mu.Lock()
	defer pools.mu.Unlock()
	pools.pools[name] = stat
}

func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolMax, poolIdle, poolWaits, poolWaited} {
		ch <- d
	}
}

func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, stat := range p.pools {
		s := stat()
		ch <- prometheus.MustNewConstMetric(poolAcquired, prometheus.GaugeValue, float64(s.AcquiredConns()), name)
		ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()), name)
		ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.IdleConns()), name)
		ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(s.EmptyAcquireCount()), name)
		ch <- prometheus.MustNewConstMetric(poolWaited, prometheus.CounterValue, s.EmptyAcquireWaitTime().Seconds(), name)
	}
}

// ---- backlogs read from the database

// Backlog is what the database holds that an operator watches grow.
type Backlog struct {
	// Parked are the inbound posts parked, waiting for their record.
	Parked int
	// FailingSubscriptions and FailingEndpoints are those failing now
	// (docs/webhooks.md#operational-events).
	FailingSubscriptions int
	FailingEndpoints     int
}

var (
	parkedDesc    = prometheus.NewDesc("commerce_inbound_parked", "Inbound posts parked, waiting for the record they name (every organisation).", nil, nil)
	failingSubs   = prometheus.NewDesc("commerce_webhook_subscriptions_failing", "Webhook subscriptions failing now (5 or more failed attempts in a row).", nil, nil)
	failingEps    = prometheus.NewDesc("commerce_inbound_endpoints_failing", "Inbound endpoints failing now (more than half of 10 or more posts in 15 minutes failed).", nil, nil)
	backlogErrors = prometheus.NewDesc("commerce_backlog_read_errors_total", "Scrapes whose backlog the database did not answer in time.", nil, nil)
)

type backlogCollector struct {
	read   func(context.Context) (Backlog, error)
	mu     sync.Mutex
	errors int
}

// ReadBacklog exports the backlogs read reads at each scrape, within a
// second: a worker registers it (the API's scrapes cost the database
// nothing).
func ReadBacklog(read func(context.Context) (Backlog, error)) {
	register(&backlogCollector{read: read})
}

func (b *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{parkedDesc, failingSubs, failingEps, backlogErrors} {
		ch <- d
	}
}

func (b *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := b.read(ctx)
	b.mu.Lock()
	if err != nil {
		b.errors++
	}
	n := b.errors
	b.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(backlogErrors, prometheus.CounterValue, float64(n))
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(v.Parked))
	ch <- prometheus.MustNewConstMetric(failingSubs, prometheus.GaugeValue, float64(v.FailingSubscriptions))
	ch <- prometheus.MustNewConstMetric(failingEps, prometheus.GaugeValue, float64(v.FailingEndpoints))
}

// ---- the Temporal SDK's series

// temporalLabels are the tags of the SDK's series that become labels; the
// others are left out, so that every series of a name has the same labels.
var temporalLabels = []string{"namespace", "task_queue", "workflow_type", "activity_type"}

// Temporal is the SDK's metrics handler over Registry: its counters as
// <name>_total, its timers as histograms <name>_seconds, its gauges as they
// are (temporal_workflow_task_schedule_to_start_latency_seconds among them).
func Temporal() client.MetricsHandler { return temporalHandler{} }

type temporalHandler struct{ tags map[string]string }

func (h temporalHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return temporalHandler{tags: merged}
}

func (h temporalHandler) values() []string {
	out := make([]string, len(temporalLabels))
	for i, l := range temporalLabels {
		out[i] = h.tags[l]
	}
	return out
}

var sdkSeries = struct {
	sync.Mutex
	counters   map[string]*prometheus.CounterVec
	gauges     map[string]*prometheus.GaugeVec
	histograms map[string]*prometheus.HistogramVec
}{counters: map[string]*prometheus.CounterVec{}, gauges: map[string]*prometheus.GaugeVec{}, histograms: map[string]*prometheus.HistogramVec{}}

func metricName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// series returns the vector of name in m, made and registered by newVec the
// first time the name is asked for.
func series[V prometheus.Collector](m map[string]V, name string, newVec func() V) V {
	sdkSeries.Lock()
	defer sdkSeries.Unlock()
	v, ok := m[name]
	if !ok {
		v = newVec()
		register(v)
		m[name] = v
	}
	return v
}

func (h temporalHandler) Counter(name string) client.MetricsCounter {
	name = metricName(name) + "_total"
	v := series(sdkSeries.counters, name, func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "Temporal SDK counter."}, temporalLabels)
	})
	c := v.WithLabelValues(h.values()...)
	return counterFunc(func(d int64) {
		if d > 0 {
			c.Add(float64(d))
		}
	})
}

func (h temporalHandler) Gauge(name string) client.MetricsGauge {
	name = metricName(name)
	v := series(sdkSeries.gauges, name, func() *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Temporal SDK gauge."}, temporalLabels)
	})
	return gaugeFunc(v.WithLabelValues(h.values()...).Set)
}

// timerBuckets span a few milliseconds to a minute.
var timerBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func (h temporalHandler) Timer(name string) client.MetricsTimer {
	name = metricName(name) + "_seconds"
	v := series(sdkSeries.histograms, name, func() *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: "Temporal SDK timer.", Buckets: timerBuckets}, temporalLabels)
	})
	o := v.WithLabelValues(h.values()...)
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

type (
	counterFunc func(int64)
	gaugeFunc   func(float64)
	timerFunc   func(time.Duration)
)

func (f counterFunc) Inc(d int64)          { f(d) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }
