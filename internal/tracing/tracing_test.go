package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
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

// A span records no credential a request's path or a delivery's URL
// holds: a server span carries the route, never the path (an inbound
// token, an unused console sign-in link) or the query; a client span names
// the receiver by its origin, never its path or query string.
func TestSpansCarryRoutesAndOriginsNotPathsOrQueries(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tr, err := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI())
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/in/"):
			NameRoute(r.Context(), r.Method, "/api/in/{token}")
		case strings.HasPrefix(r.URL.Path, "/console/login/"):
			NameRoute(r.Context(), r.Method, "/console/login/{token}")
		}
	}))
	for _, target := range []string{"/api/in/in_SECRETinboundtoken", "/console/login/cs_SECRETsignin?next=SECRETquery",
		"/api/in/in_SECRETunmatched/more"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", target, nil))
	}
	if !slices.Equal(got, []string{"/api/in/in_SECRETinboundtoken", "/console/login/cs_SECRETsignin?next=SECRETquery",
		"/api/in/in_SECRETunmatched/more"}) {
		t.Fatalf("the handler was given %q", got)
	}

	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI())
	}))
	defer receiver.Close()
	res, err := tr.Client(receiver.Client()).Post(receiver.URL+"/hooks/SECRETpath?apikey=SECRETkey", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if got[len(got)-1] != "/hooks/SECRETpath?apikey=SECRETkey" {
		t.Fatalf("the receiver was sent %q", got[len(got)-1])
	}

	ended := spans.Ended()
	if len(ended) != 4 {
		t.Fatalf("%d spans", len(ended))
	}
	for _, s := range ended {
		for _, a := range s.Attributes() {
			if v := a.Value.String(); strings.Contains(v, "SECRET") {
				t.Errorf("span %q: %s = %q", s.Name(), a.Key, v)
			}
			if a.Key == "url.full" && a.Value.AsString() != receiver.URL {
				t.Errorf("client span: url.full %q, want the origin %q", a.Value.AsString(), receiver.URL)
			}
		}
		if strings.Contains(s.Name(), "SECRET") {
			t.Errorf("span named %q", s.Name())
		}
	}
	if ended[0].Name() != "POST /api/in/{token}" || ended[1].Name() != "POST /console/login/{token}" {
		t.Errorf("spans named %q, %q", ended[0].Name(), ended[1].Name())
	}
}

// What a span keeps of a request is bounded (Limits), however large the
// client makes its headers: 20 requests with a 900 KB User-Agent export
// kilobytes, where each span used to carry the whole header.
func TestSpanLimitsBoundWhatARequestsHeadersExport(t *testing.T) {
	var exported atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exported.Add(n)
	}))
	defer collector.Close()
	for _, k := range []string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "") // restored after the test
		_ = os.Unsetenv(k)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	tr, err := FromEnv(context.Background(), "commerce")
	if err != nil {
		t.Fatal(err)
	}
	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NameRoute(r.Context(), r.Method, "/api/v1/products")
		_, span := tr.Start(r.Context(), "work")
		for i := range 200 {
			span.SetAttributes(attribute.Int("n"+strconv.Itoa(i), i))
		}
		span.End()
	}))
	agent := strings.Repeat("A", 900<<10)
	for range 20 {
		req := httptest.NewRequest("GET", "/api/v1/products", nil)
		req.Header.Set("User-Agent", agent)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := exported.Load(); n == 0 || n > 256<<10 {
		t.Fatalf("20 requests with a 900 KB User-Agent exported %d bytes", n)
	}
	l := Limits()
	if l.AttributeValueLengthLimit != maxAttributeValue || l.AttributeCountLimit != maxAttributes {
		t.Fatalf("limits %+v", l)
	}
	t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "-1")
	t.Setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "10")
	if l := Limits(); l.AttributeValueLengthLimit != maxAttributeValue || l.AttributeCountLimit != 10 {
		t.Fatalf("the environment lifted or did not lower the limits: %+v", l)
	}
}
