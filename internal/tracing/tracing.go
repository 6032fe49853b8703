// Package tracing follows one inbound post, or one API request, through
// the service with OpenTelemetry: its HTTP request, the Temporal workflow
// it starts and that workflow's activities, the SQL they run, and the
// webhooks its events cause, which carry a W3C traceparent to the receiver
// (docs/operations.md#tracing).
//
// Tracing is off unless the standard OTLP environment names an endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Off,
// a process installs nothing: no HTTP middleware, no SQL tracer, no
// Temporal interceptor; a nil *Tracing is off, and its methods hand back
// what they were given.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"

	"github.com/commerce-integration/commerce/internal/tracing/w3c"
)

// Tracing is a process's tracer provider and what is built on it. The nil
// *Tracing is tracing off.
type Tracing struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	temporal []interceptor.ClientInterceptor
	shutdown func(context.Context) error
}

// instrumentation names the service's own spans (SQL, the relay's starts).
const instrumentation = "github.com/commerce-integration/commerce"

// propagator carries the context across processes (package w3c).
var propagator = w3c.Propagator

// Enabled reports whether the environment turns tracing on: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER
// turns it off.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the process's tracing as the standard OpenTelemetry
// environment configures it, or nil (off) when Enabled says it is off.
// Spans are exported in batches over OTLP: http/protobuf, as the
// specification's default, or gRPC when OTEL_EXPORTER_OTLP_PROTOCOL (or
// its _TRACES_ form) says grpc. service is the service.name unless
// OTEL_SERVICE_NAME names another; OTEL_RESOURCE_ATTRIBUTES and
// OTEL_TRACES_SAMPLER are honoured.
func FromEnv(ctx context.Context, service string) (*Tracing, error) {
	if !Enabled(os.Getenv) {
		return nil, nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not one of http/protobuf, grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(Limits()))
	t, err := New(tp)
	if err != nil {
		return nil, errors.Join(err, tp.Shutdown(ctx))
	}
	t.shutdown = tp.Shutdown
	return t, nil
}

// The most a span may hold. A request's headers are the client's to make
// long (a User-Agent of 900 KB), and every span of a request is held until
// it is exported, so what a span keeps of them is bounded: an attribute's
// value to maxAttributeValue bytes (a SQL statement's text fits), and a
// span to maxAttributes attributes, maxEvents events and maxLinks links.
const (
	maxAttributeValue = 4096
	maxAttributes     = 64
	maxEvents         = 128
	maxLinks          = 16
)

// Limits are the span limits of the process's tracer provider: the
// standard OTEL_SPAN_*_LIMIT and OTEL_ATTRIBUTE_*_LIMIT environment may
// lower them, never raise them or lift them.
func Limits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	l.AttributeValueLengthLimit = atMost(l.AttributeValueLengthLimit, maxAttributeValue)
	l.AttributeCountLimit = atMost(l.AttributeCountLimit, maxAttributes)
	l.EventCountLimit = atMost(l.EventCountLimit, maxEvents)
	l.LinkCountLimit = atMost(l.LinkCountLimit, maxLinks)
	l.AttributePerEventCountLimit = atMost(l.AttributePerEventCountLimit, maxAttributes)
	l.AttributePerLinkCountLimit = atMost(l.AttributePerLinkCountLimit, maxAttributes)
	return l
}

// atMost is v, or limit when v is unlimited (negative) or over it.
func atMost(v, limit int) int {
	if v < 0 || v > limit {
		return limit
	}
	return v
}

// New is tracing on with the given provider (tests and benchmarks give one
// that records in memory).
func New(tp trace.TracerProvider) (*Tracing, error) {
	tr, err := temporalotel.NewTracer(temporalotel.TracerOptions{
		Tracer: tp.Tracer("go.temporal.io/sdk"), TextMapPropagator: propagator})
	if err != nil {
		return nil, err
	}
	return &Tracing{provider: tp, tracer: tp.Tracer(instrumentation),
		temporal: []interceptor.ClientInterceptor{interceptor.NewTracingInterceptor(loggingTracer{tr})}}, nil
}

// On reports whether tracing is on.
func (t *Tracing) On() bool { return t != nil }

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Handler wraps h so that every request is a server span. The service's
// API is public, so a caller's traceparent becomes a link of the request's
// span, not its parent: a caller cannot choose the trace the service's
// work is recorded in, nor whether it is sampled. The span is named after
// the method until the router names its route (NameRoute), and never
// records the request's path or query: a path can be a credential (an
// inbound token, /api/in/in_...; an unused console sign-in link,
// /console/login/cs_...), so the span carries the route (http.route) only.
func (t *Tracing) Handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	traced := otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// r is otelhttp's copy of the request it was shown: the handler
		// gets the path and query back.
		if u, ok := r.Context().Value(requestURL{}).(*url.URL); ok {
			r.URL = u
		}
		h.ServeHTTP(w, r)
	}), "http.server",
		otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(propagator),
		otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// otelhttp records the path it is shown (url.path) unless it is
		// empty: it is shown none.
		shown := r.WithContext(context.WithValue(r.Context(), requestURL{}, r.URL))
		shown.URL = &url.URL{Scheme: r.URL.Scheme, Host: r.URL.Host}
		traced.ServeHTTP(w, shown)
	})
}

// requestURL carries a request's URL past the span's start (Handler) and a
// delivery's past the client span's (Client).
type requestURL struct{}

// NameRoute names the request's span after its route ("POST
// /api/in/{token}"), once the router has matched one. It costs nothing
// when the request is not traced.
func NameRoute(ctx context.Context, method, route string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetName(method + " " + route)
	span.SetAttributes(attribute.String("http.route", route))
}

// Client returns c, its requests made client spans that send the span's
// traceparent (deliveries carry it to their receivers). A span names the
// receiver by its origin (url.full is scheme://host[:port]): a receiver's
// path and query can hold its credentials (?apikey=...), as the attempt
// log's origin-only error texts say (outbound.Origin).
func (t *Tracing) Client(c *http.Client) *http.Client {
	if t == nil {
		return c
	}
	traced := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	spans := otelhttp.NewTransport(restoreURL{base}, otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(propagator))
	traced.Transport = originOnly{spans}
	return &traced
}

// originOnly shows the client span's transport a request whose URL is the
// receiver's origin; restoreURL, under it, sends the request as it was.
type (
	originOnly struct{ next http.RoundTripper }
	restoreURL struct{ next http.RoundTripper }
)

func (o originOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	shown := r.WithContext(context.WithValue(r.Context(), requestURL{}, r.URL))
	shown.URL = &url.URL{Scheme: r.URL.Scheme, Host: r.URL.Host}
	return o.next.RoundTrip(shown)
}

func (u restoreURL) RoundTrip(r *http.Request) (*http.Response, error) {
	if full, ok := r.Context().Value(requestURL{}).(*url.URL); ok {
		sent := r.WithContext(r.Context())
		sent.URL = full
		return u.next.RoundTrip(sent)
	}
	return u.next.RoundTrip(r)
}

// Temporal returns the client interceptors that carry the context in
// workflow headers, from a workflow's start into its run and activities
// (and, on a worker, make their spans); none when off.
func (t *Tracing) Temporal() []interceptor.ClientInterceptor {
	if t == nil {
		return nil
	}
	return t.temporal
}

// loggingTracer is the SDK's OpenTelemetry tracer with the service's log
// keys: workflow and activity log lines carry trace_id and span_id, as the
// HTTP server's do.
type loggingTracer struct{ interceptor.Tracer }

func (l loggingTracer) GetLogger(logger log.Logger, ref interceptor.TracerSpanRef) log.Logger {
	s, ok := ref.(interface{ SpanContext() trace.SpanContext })
	if !ok || !s.SpanContext().IsValid() {
		return logger
	}
	return log.With(logger, "trace_id", s.SpanContext().TraceID().String(), "span_id", s.SpanContext().SpanID().String())
}

// SQL returns the tracer that makes a span of every statement; nil when
// off.
func (t *Tracing) SQL() pgx.QueryTracer {
	if t == nil {
		return nil
	}
	return sqlTracer{t.tracer}
}

// Start starts a span of the service's own (nothing when ctx is not
// traced and tracing is off).
func (t *Tracing) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}
