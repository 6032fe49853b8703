package metrics

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/commerce-integration/commerce/internal/version"
)

// The SDK's timers become histograms in seconds and its counters _total
// series, labelled by the tags the rules use and no others; the service's
// counters exist at 0 before anything happened.
func TestTheSDKsSeriesAndTheServicesAreExported(t *testing.T) {
	h := Temporal().WithTags(map[string]string{"namespace": "default", "task_queue": "commerce"}).
		WithTags(map[string]string{"workflow_type": "InboundAction", "operation": "left-out"})
	h.Timer("temporal_workflow_task_schedule_to_start_latency").Record(1500 * time.Millisecond)
	h.Counter("temporal_workflow_completed").Inc(2)
	h.Gauge("temporal_num_pollers").Update(3)
	// The same name again: the same series, not a second registration.
	h.Counter("temporal_workflow_completed").Inc(1)

	rec := httptest.NewRecorder()
	Handler(prometheus.NewRegistry()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`temporal_workflow_task_schedule_to_start_latency_seconds_bucket{activity_type="",namespace="default",task_queue="commerce",workflow_type="InboundAction",le="2.5"} 1`,
		`temporal_workflow_task_schedule_to_start_latency_seconds_bucket{activity_type="",namespace="default",task_queue="commerce",workflow_type="InboundAction",le="1"} 0`,
		`temporal_workflow_completed_total{activity_type="",namespace="default",task_queue="commerce",workflow_type="InboundAction"} 3`,
		`temporal_num_pollers{activity_type="",namespace="default",task_queue="commerce",workflow_type="InboundAction"} 3`,
		`commerce_webhook_attempts_total{result="exhausted",subscription_state="failing"} 0`,
		`commerce_inbound_outcomes_total{action="order_invoice",outcome="failed"} 0`,
		`commerce_build_info{goversion="` + runtime.Version() + `",revision="",version="` + version.Version + `"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), "left-out") {
		t.Error("a tag that is not a label reached /metrics")
	}
}
