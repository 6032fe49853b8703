// Package logging builds the service's zap logger and carries a
// request-scoped logger (with the request id) through contexts.
package logging

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger at level ("debug", "info", "warn", "error") writing
// JSON lines, or human-readable lines when format is "console".
func New(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("COMMERCE_LOG_LEVEL: %w", err)
	}
	var cfg zap.Config
	switch format {
	case "", "json":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "time"
		cfg.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	default:
		return nil, fmt.Errorf("COMMERCE_LOG_FORMAT %q is not json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	return cfg.Build()
}

type ctxKey struct{}

// With returns ctx carrying l.
func With(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// From returns the logger ctx carries, or fallback when it carries none.
func From(ctx context.Context, fallback *zap.Logger) *zap.Logger {
	if l, ok := ctx.Value(ctxKey{}).(*zap.Logger); ok {
		return l
	}
	return fallback
}

// Traced returns l with the trace_id and span_id of ctx's span, or l
// itself when ctx is not traced (tracing off: one context lookup).
func Traced(ctx context.Context, l *zap.Logger) *zap.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return l
	}
	return l.With(zap.Stringer("trace_id", sc.TraceID()), zap.Stringer("span_id", sc.SpanID()))
}

// NewFile returns a logger writing JSON lines at level and above to path
// (created or appended to), for chatty components kept off the console.
func NewFile(path string, level zapcore.Level) (*zap.Logger, error) {
	cfg := zap.NewProductionConfig()
	cfg.EncoderConfig.TimeKey = "time"
	cfg.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.Sampling = nil
	cfg.OutputPaths = []string{path}
	cfg.ErrorOutputPaths = []string{path}
	return cfg.Build()
}
