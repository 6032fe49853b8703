package db

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrPoolBusy is what a statement meets when every connection of its pool
// stayed in use for the pool's acquire wait (Options.AcquireWait). Like a
// server that refuses connections it is Unavailable: the request may
// succeed later. It matches context.DeadlineExceeded too.
var ErrPoolBusy = poolBusy{}

type poolBusy struct{}

func (poolBusy) Error() string { return "no database connection free within the pool's acquire wait" }

func (poolBusy) Is(target error) bool { return target == context.DeadlineExceeded }

// Options size a process's pools.
type Options struct {
	// MaxConns is the most connections the main pool opens
	// (DefaultMaxConns when 0). The rate-limit pool opens a quarter as
	// many, at least four, and only when a request uses it.
	MaxConns int32
	// AcquireWait bounds how long a statement waits for a free connection
	// before failing with ErrPoolBusy; 0 waits as long as its context
	// allows. The API sets it so that a full pool answers 503 at once
	// instead of holding requests; the worker waits.
	AcquireWait time.Duration
	// Tracer, when set, traces the statements of both pools (package
	// tracing); nil with tracing off.
	Tracer pgx.QueryTracer
}

// acquireWait is a pool's AcquireTracer that bounds the wait for a
// connection: TraceAcquireStart hands the pool a context that ends after
// the wait, and its end is reported as ErrPoolBusy.
type acquireWait struct{ wait time.Duration }

type acquireCancelKey struct{}

// errAcquireWait is the cause of the acquire context's end.
var errAcquireWait = errors.New("acquire wait over")

func (a acquireWait) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	wctx, cancel := context.WithTimeoutCause(ctx, a.wait, errAcquireWait)
	return acquireCtx{context.WithValue(wctx, acquireCancelKey{}, cancel)}
}

func (a acquireWait) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if cancel, ok := ctx.Value(acquireCancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

// TraceQueryStart and TraceQueryEnd make acquireWait a pgx.QueryTracer,
// which is where pgxpool looks for its AcquireTracer; they do nothing.
func (acquireWait) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (acquireWait) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// acquireCtx is the acquire context: once the wait is over its Err is
// ErrPoolBusy, which the pool returns as the statement's error. Whatever
// else ended it (the caller's cancel or deadline) keeps its own error.
type acquireCtx struct{ context.Context }

func (c acquireCtx) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == errAcquireWait {
		return ErrPoolBusy
	}
	return err
}
