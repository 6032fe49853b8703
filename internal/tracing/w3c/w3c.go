// Package w3c reads and carries a context's trace as W3C Trace Context,
// for what stores it (a receipt's trace id, an event's traceparent) and
// what starts work from it later. It depends on the OpenTelemetry API
// alone: with tracing off no context is traced, and each function answers
// nil or its input at the cost of one context lookup.
package w3c

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Propagator carries the context across processes: in Temporal headers,
// in the traceparent stored with an event, in a delivery's traceparent
// header.
var Propagator = propagation.TraceContext{}

// TraceID is the id of ctx's trace, nil when ctx is not traced.
func TraceID(ctx context.Context) *string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	id := sc.TraceID().String()
	return &id
}

// Parent is ctx's span as a traceparent, nil when ctx is not traced.
func Parent(ctx context.Context) *string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	p := c["traceparent"]
	return &p
}

// WithParent returns ctx carrying the remote span a traceparent names (one
// stored with an event), so that work started from it joins that trace;
// ctx as it is when parent is nil, empty or malformed.
func WithParent(ctx context.Context, parent *string) context.Context {
	if parent == nil || *parent == "" {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": *parent})
}
