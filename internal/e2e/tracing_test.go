package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/tracing"
)

// One inbound post that emits a webhook is one trace: the HTTP request,
// the workflow's start and run, its activities, the SQL they run, the
// relay's start of the delivery's workflow and the delivery's request,
// whose traceparent the receiver gets. The receipt, the API and the log
// lines name the trace.
func TestOneTraceHoldsAPostItsWorkflowItsSQLAndTheWebhookItCauses(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tr, err := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	if err != nil {
		t.Fatal(err)
	}
	env := Start(t)
	logs, observed := observer.New(zap.InfoLevel)
	env.Log = zap.New(zapcore.NewTee(env.Log.Core(), logs))
	env.Trace(tr)
	f := newInboundOn(t, env)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	rc.subscribe(f, domain.EventOrderStatusChanged)
	f.Outbox()
	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)

	// The caller's own traceparent is linked, not followed: a public
	// endpoint's caller does not choose the trace.
	const callerTrace = "0af7651916cd43dd8448eb211c80319c"
	a := f.post(url, `{"order_ref": "SO-1", "status": "processing"}`, "traceparent", "00-"+callerTrace+"-b7ad6b7169203331-01")
	if a.status != 200 {
		t.Fatalf("post: %d %s", a.status, a.raw)
	}
	d := rc.next()
	parent := strings.Split(d.header.Get("traceparent"), "-")
	if len(parent) != 4 || len(parent[1]) != 32 {
		t.Fatalf("the delivery carries no traceparent: %q", d.header.Get("traceparent"))
	}
	traceID, deliverySpan := parent[1], parent[2]
	if traceID == callerTrace {
		t.Fatal("the post's trace is the one its caller named")
	}

	// The receipt records the trace, and the API shows it.
	if r := f.receipt(a.receipt); r.TraceID == nil || *r.TraceID != traceID {
		t.Fatalf("receipt trace id %v, the delivery's trace %s", r.TraceID, traceID)
	}
	var detail struct {
		TraceID *string `json:"trace_id"`
	}
	if code, raw := f.call("GET", "/api/v1/inbound/receipts/"+a.receipt, f.apiKey(), "", &detail); code != 200 || detail.TraceID == nil || *detail.TraceID != traceID {
		t.Fatalf("GET receipt: %d %s", code, raw)
	}

	// The spans of the trace, once the delivery's activity (which logs
	// the attempt after its request) has ended.
	var inTrace []sdktrace.ReadOnlySpan
	f.eventually("the delivery's activity span ended", func() bool {
		inTrace = inTrace[:0]
		ended := false
		for _, s := range spans.Ended() {
			if s.SpanContext().TraceID().String() != traceID {
				continue
			}
			inTrace = append(inTrace, s)
			ended = ended || s.Name() == "RunActivity:DeliverWebhook"
		}
		return ended
	})
	has := func(what string, ok func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
		t.Helper()
		for _, s := range inTrace {
			if ok(s) {
				return s
			}
		}
		names := []string{}
		for _, s := range inTrace {
			names = append(names, s.Name())
		}
		t.Fatalf("the trace has no %s; it has %v", what, names)
		return nil
	}
	named := func(name string) func(sdktrace.ReadOnlySpan) bool {
		return func(s sdktrace.ReadOnlySpan) bool { return s.Name() == name }
	}
	server := has("server span of the post", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindServer && s.Name() == "POST /api/in/{token}"
	})
	if server.Parent().IsValid() {
		t.Errorf("the post's span has a parent, %v: it is the trace's root", server.Parent())
	}
	if links := server.Links(); len(links) != 1 || links[0].SpanContext.TraceID().String() != callerTrace {
		t.Errorf("the post's span links %v, want the caller's trace", links)
	}
	// The post starts its workflow with its first answer's update.
	has("start of the inbound workflow", named("UpdateWithStartWorkflow:answer"))
	has("run of the inbound workflow", named("RunWorkflow:InboundAction"))
	has("inbound activity", func(s sdktrace.ReadOnlySpan) bool { return strings.HasPrefix(s.Name(), "RunActivity:") })
	sql := has("SQL statement", func(s sdktrace.ReadOnlySpan) bool { return strings.HasPrefix(s.Name(), "sql ") })
	for _, kv := range sql.Attributes() {
		if kv.Key == "db.query.text" && strings.Contains(kv.Value.AsString(), "SO-1") {
			t.Errorf("a statement's span records a value: %s", kv.Value.AsString())
		}
	}
	has("start of the delivery's workflow", named("StartWorkflow:WebhookDelivery"))
	has("delivery activity", named("RunActivity:DeliverWebhook"))
	has("delivery request", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindClient && s.SpanContext().SpanID().String() == deliverySpan
	})

	// Log lines name the trace: the request's, and the delivery attempt's.
	for _, msg := range []string{"request", "webhook attempt"} {
		found := false
		for _, e := range observed.FilterMessage(msg).All() {
			found = found || e.ContextMap()["trace_id"] == traceID
		}
		if !found {
			t.Errorf("no %q log line carries trace_id %s", msg, traceID)
		}
	}
}
