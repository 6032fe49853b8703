package logging

import (
	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
)

// temporalLogger lets the Temporal SDK log through zap.
type temporalLogger struct{ s *zap.SugaredLogger }

// Temporal returns a Temporal SDK logger writing to l.
func Temporal(l *zap.Logger) log.Logger {
	return temporalLogger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

func (t temporalLogger) Debug(msg string, kv ...any) { t.s.Debugw(msg, kv...) }
func (t temporalLogger) Info(msg string, kv ...any)  { t.s.Infow(msg, kv...) }
func (t temporalLogger) Warn(msg string, kv ...any)  { t.s.Warnw(msg, kv...) }
func (t temporalLogger) Error(msg string, kv ...any) { t.s.Errorw(msg, kv...) }

// With implements log.WithLogger.
func (t temporalLogger) With(kv ...any) log.Logger { return temporalLogger{s: t.s.With(kv...)} }
