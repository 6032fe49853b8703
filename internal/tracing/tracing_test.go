package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/commerce-integration/commerce/internal/tracing/w3c"
)

func TestTracingIsOnOnlyWhenTheEnvironmentNamesAnOTLPEndpoint(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: on %v, want %v", c.env, got, c.want)
		}
	}
}

func TestFromEnvIsOffWithoutAnEndpointAndRefusesAnUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := FromEnv(context.Background(), "commerce")
	if err != nil || tr.On() {
		t.Fatalf("without an endpoint: %v, %v", tr, err)
	}
	// Off, everything is handed back as it was given.
	h := http.NotFoundHandler()
	c := &http.Client{}
	if tr.Client(c) != c || tr.SQL() != nil || tr.Temporal() != nil {
		t.Fatal("tracing off wrapped something")
	}
	if _, ok := tr.Handler(h).(http.HandlerFunc); !ok {
		t.Fatal("tracing off wrapped the handler")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")
	if _, err := FromEnv(context.Background(), "commerce"); err == nil {
		t.Fatal("an unknown protocol was accepted")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	tr, err = FromEnv(context.Background(), "commerce")
	if err != nil || !tr.On() {
		t.Fatalf("grpc: %v, %v", tr, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A request's span is named after its route, and a caller's traceparent
// is a link of it, not its parent.
func TestHandlerNamesTheRouteAndOnlyLinksTheCallersTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tr, err := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	if err != nil {
		t.Fatal(err)
	}
	var seen *string
	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = w3c.TraceID(r.Context())
		NameRoute(r.Context(), r.Method, "/api/v1/orders/{id}")
	}))
	req := httptest.NewRequest("GET", "/api/v1/orders/1", nil)
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	ended := spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans", len(ended))
	}
	s := ended[0]
	if s.Name() != "GET /api/v1/orders/{id}" || s.Parent().IsValid() || len(s.Links()) != 1 {
		t.Fatalf("span %q parent %v links %v", s.Name(), s.Parent(), s.Links())
	}
	if seen == nil || *seen != s.SpanContext().TraceID().String() || *seen == "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("the handler saw trace %v", seen)
	}
}

func TestParentRoundTripsThroughWithParent(t *testing.T) {
	if w3c.Parent(context.Background()) != nil || w3c.TraceID(context.Background()) != nil {
		t.Fatal("an untraced context has a trace")
	}
	const p = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := w3c.WithParent(context.Background(), new(p))
	if got := w3c.Parent(ctx); got == nil || *got != p {
		t.Fatalf("traceparent %v", got)
	}
	bad := "not-a-traceparent"
	if w3c.Parent(w3c.WithParent(context.Background(), &bad)) != nil {
		t.Fatal("a malformed traceparent made a trace")
	}
}
