// Package db is the service's only home for SQL: the embedded migrations and
// every query, each scoped by organisation inside the statement itself.
//
// Each aggregate has one file holding its reads and its writes (orders.go,
// purchase_orders.go, stock.go, ...), including its part of the inbound
// actions that ApplyInbound in actions.go dispatches; match.go holds the
// three-way match, query.go the helpers every list and detail read shares,
// and seed*.go the seed loader. The webhooks' storage is split by
// responsibility: subscriptions.go (the records and their settings),
// webhook_relay.go (the outbox relay), admission.go (admitting deliveries to
// their subscriptions), webhook_attempts.go (attempts and their effect on a
// subscription's health) and webhook_deliveries.go (the deliveries as
// support reads them).
package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"

	"github.com/commerce-integration/commerce/domain"
)

// DB holds the connections to the service's database.
type DB struct {
	pool *pgxpool.Pool
	// rate runs the statements that only keep rate-limit bookkeeping (and a
	// key's last_used_at) with synchronous_commit off: losing the last
	// moment of that state in a database crash is harmless, and not waiting
	// for the WAL flush takes it off every request's latency. Business
	// writes never use it. Its statements look rows up by unique keys, so
	// their plans do not depend on the values: generic plans save planning
	// on every call.
	rate *pgxpool.Pool
	// leases are this process's leases of its API keys' rate-limit buckets
	// (keylease.go).
	leases *leases
	// keys keeps what authenticating a key read (keycache.go).
	keys *keyCache
}

// DefaultMaxConns is the size of a process's main pool when none is
// configured (COMMERCE_DB_MAX_CONNS).
const DefaultMaxConns = 20

// Connect opens the pools on url with a main pool of maxConns connections
// (DefaultMaxConns when 0) and no acquire wait; see ConnectWith.
func Connect(ctx context.Context, url string, maxConns int32) (*DB, error) {
	return ConnectWith(ctx, url, Options{MaxConns: maxConns})
}

// ConnectWith opens the pools on url and checks that the database answers.
// The main pool opens at most o.MaxConns connections: the worker keeps two
// of them for LISTEN, and the rest serve requests, activities and sweeps
// (pgx's own default, four on two cores, starved them). The rate-limit pool
// opens a quarter as many, at least four. Both open connections only as
// statements need them.
func ConnectWith(ctx context.Context, url string, o Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	cfg.MaxConns = o.MaxConns
	switch {
	case o.AcquireWait > 0 && o.Tracer != nil:
		// pgxpool takes its AcquireTracer from the connections' tracer.
		cfg.ConnConfig.Tracer = multitracer.New(acquireWait{wait: o.AcquireWait}, o.Tracer)
	case o.AcquireWait > 0:
		cfg.ConnConfig.Tracer = acquireWait{wait: o.AcquireWait}
	case o.Tracer != nil:
		cfg.ConnConfig.Tracer = o.Tracer
	}
	cfg.AfterConnect = encodeUUIDs
	rateCfg := cfg.Copy()
	rateCfg.MaxConns = RateMaxConns(o.MaxConns)
	rateCfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	rateCfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	rate, err := pgxpool.NewWithConfig(ctx, rateCfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	d := &DB{pool: pool, rate: rate}
	d.leases, d.keys = newLeases(d), newKeyCache(d)
	return d, nil
}

// encodeUUIDs makes a connection encode uuid.UUID parameters as the
// uuid codec's own values (pgx-google-uuid's encode wrapper). Without it
// pgx finds no plan for the type, takes it for a driver.Valuer, encodes
// its text form in the binary format, fails, formats an error naming the
// value (%#v) and parses the text back: an error built and thrown away
// for every uuid parameter of every statement.
func encodeUUIDs(_ context.Context, c *pgx.Conn) error {
	tm := c.TypeMap()
	tm.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{pgxuuid.TryWrapUUIDEncodePlan}, tm.TryWrapEncodePlanFuncs...)
	return nil
}

// RateMaxConns is the size of the rate-limit pool beside a main pool of
// maxConns: a quarter as many, at least four.
func RateMaxConns(maxConns int32) int32 { return max(4, maxConns/4) }

// Unavailable reports whether err is the database refusing or failing to
// give a connection: the server is full (too many clients), starting or
// shutting down, or cannot be reached, or the connection was lost under a
// statement (the server killed, the network between them cut). A request
// that meets it may succeed later, so it is answered 503 with Retry-After,
// not 500. A statement the caller's own context ended is not unavailable.
func Unavailable(err error) bool {
	if errors.Is(err, ErrPoolBusy) {
		return true
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "53300", // too_many_connections
			"57P03", // cannot_connect_now
			"57P01", // admin_shutdown
			"57P02": // crash_shutdown
			return true
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// Lost: found closed when the statement came to use it (pgconn: safe
	// to retry), or cut under it, mid-message or reset by the network. A
	// timeout is not a server gone (a request's own read deadline is one).
	var netErr net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &netErr) && !netErr.Timeout())
}

// Close closes the pools.
func (d *DB) Close() {
	d.keys.close()
	d.leases.close()
	d.pool.Close()
	d.rate.Close()
}

// Pool exposes the pool for the few callers (tests, benchmarks) that need it.
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// RateStat is the rate-limit pool's statistics, for its metrics.
func (d *DB) RateStat() *pgxpool.Stat { return d.rate.Stat() }

// PoolSizes are the most connections the main and the rate-limit pool open.
func (d *DB) PoolSizes() (main, rate int32) {
	return d.pool.Config().MaxConns, d.rate.Config().MaxConns
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.pool.Ping(ctx) }

// querier is what both a pool and a transaction offer; helpers that may run
// inside or outside a transaction take one.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// inTx runs fn in a transaction, committing when it returns nil. A value
// the storage refuses for good is the caller's error (see refused).
func (d *DB) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return refused(pgx.BeginFunc(ctx, d.pool, fn))
}

// notFound maps pgx.ErrNoRows to a domain not-found error naming what.
func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Errorf(domain.ENOTFOUND, "%s not found", what)
	}
	return err
}

// pgError returns the Postgres error inside err, if any.
func pgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// Postgres error codes the service reacts to.
const (
	codeUniqueViolation = "23505"
	codeCheckViolation  = "23514"
	codeForeignKey      = "23503"
	codeInvalidText     = "22P02"
)

// refusedValues are the Postgres errors that say a value can never be
// stored, however often it is tried: retrying cannot help, and the fault is
// in the value sent.
var refusedValues = map[string]string{
	"22001":            "a value is too long to be stored",                // string_data_right_truncation
	"22021":            "a value holds bytes that are not valid UTF-8",    // character_not_in_repertoire
	"22P05":            "a value holds a character that cannot be stored", // untranslatable_character
	codeCheckViolation: "a value breaks a rule of the storage",            // check_violation
	"54000":            "a value is too long to be stored",                // program_limit_exceeded (an index row too large)
}

// refused turns a Postgres error that refuses a value for good into an
// EINVALID error with a generic message; the database's own text, which
// may name tables and constraints, stays in the cause for the log. Other
// errors (and errors that already have a domain kind) are returned as they
// are.
func refused(err error) error {
	var de *domain.Error
	if err == nil || errors.As(err, &de) {
		return err
	}
	pe := pgError(err)
	if pe == nil {
		return err
	}
	msg, ok := refusedValues[pe.Code]
	if !ok {
		return err
	}
	return &domain.Error{Code: domain.EINVALID, Message: msg, Cause: err}
}

// isUniqueViolation reports whether err is a unique violation on constraint
// (any constraint when constraint is "").
func isUniqueViolation(err error, constraint string) bool {
	pe := pgError(err)
	return pe != nil && pe.Code == codeUniqueViolation && (constraint == "" || pe.ConstraintName == constraint)
}
