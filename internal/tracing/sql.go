package tracing

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// maxStatement is the longest statement text a span keeps. Statements
// carry their values as parameters, which spans never record.
const maxStatement = 2000

// sqlTracer makes a client span of each statement, batch and copy run
// within a traced context. A statement outside any trace (the worker's
// sweeps, which run every second) makes none: it would be a trace of one
// span, nobody's request.
type sqlTracer struct{ tracer trace.Tracer }

func (s sqlTracer) start(ctx context.Context, op, sql string, attrs ...attribute.KeyValue) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	if len(sql) > maxStatement {
		sql = sql[:maxStatement]
	}
	attrs = append(attrs, attribute.String("db.system.name", "postgresql"))
	if sql = strings.TrimSpace(sql); sql != "" {
		attrs = append(attrs, attribute.String("db.query.text", sql))
	}
	ctx, _ = s.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx
}

func end(ctx context.Context, err error, rows int64, counted bool) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if counted {
		span.SetAttributes(attribute.Int64("db.response.returned_rows", rows))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "statement failed")
	}
	span.End()
}

// operation names a statement's span after its first word (SELECT,
// INSERT, WITH ...), as the database semantic conventions do.
func operation(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.IndexAny(sql, " \t\n("); i > 0 {
		sql = sql[:i]
	}
	if sql == "" || len(sql) > 16 {
		return "sql"
	}
	return "sql " + strings.ToUpper(sql)
}

func (s sqlTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return s.start(ctx, operation(d.SQL), d.SQL)
}

func (s sqlTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	end(ctx, d.Err, d.CommandTag.RowsAffected(), d.Err == nil)
}

func (s sqlTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	n := 0
	if d.Batch != nil {
		n = d.Batch.Len()
	}
	return s.start(ctx, "sql batch", "", attribute.Int("db.operation.batch.size", n))
}

func (s sqlTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddEvent("statement", trace.WithAttributes(attribute.String("db.query.text", strings.TrimSpace(d.SQL))))
	}
}

func (s sqlTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	end(ctx, d.Err, 0, false)
}

func (s sqlTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	return s.start(ctx, "sql COPY", "COPY "+d.TableName.Sanitize())
}

func (s sqlTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromEndData) {
	end(ctx, d.Err, d.CommandTag.RowsAffected(), d.Err == nil)
}
