package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/devpg"
	"github.com/commerce-integration/commerce/internal/health"
)

// The database and network faults (production shape).
const (
	// FaultPostgres: the service's Postgres postmaster gets SIGKILL and is
	// started again (crash recovery) PostgresDown later, which with the
	// recovery brings it back within about 10 s. The service's
	// database then lives in a private cluster of the run's own
	// (internal/devpg), so that the machine's shared server is not touched;
	// Temporal's databases stay on the shared server.
	FaultPostgres Fault = "postgres"
	// FaultPostgresRestart: the same cluster shut down fast (pg_ctl stop
	// -m fast: sessions ended, a checkpoint) and started again.
	FaultPostgresRestart Fault = "postgres-restart"
	// FaultLatency: SlowFor of LatencyAdded on every round trip between
	// the service (API and worker processes) and Postgres, through a
	// toxiproxy proxy (its slow toxic's latency set, then set to 0).
	// Slower; nothing fails.
	FaultLatency Fault = "latency"
	// FaultPartitionDB: a silent partition between the service and
	// Postgres, for PartitionFor: connections stay open, nothing gets
	// through, nothing is answered or closed (a toxiproxy timeout toxic
	// with timeout 0, both ways).
	FaultPartitionDB Fault = "partition-db"
	// FaultPartitionTemporal: the same partition between the worker
	// processes and the Temporal server's frontend.
	FaultPartitionTemporal Fault = "partition-temporal"
)

// How long each of these faults lasts.
const (
	PostgresDown  = 2 * time.Second
	LatencyAdded  = 200 * time.Millisecond
	SlowFor       = 10 * time.Second
	PartitionFor  = 15 * time.Second
	FirstAfterMax = 5 * time.Second // the first completion after the return or heal
)

// netFault reports whether f is one of the database and network faults.
func netFault(f Fault) bool {
	switch f {
	case FaultPostgres, FaultPostgresRestart, FaultLatency, FaultPartitionDB, FaultPartitionTemporal:
		return true
	}
	return false
}

// dbAway reports whether the service loses Postgres during f.
func dbAway(f Fault) bool {
	return f == FaultPostgres || f == FaultPostgresRestart || f == FaultPartitionDB
}

// Outage is what a database or network fault checked while it lasted and
// after it.
type Outage struct {
	// Away is from the fault until Postgres was back or the partition or
	// latency healed.
	Away time.Duration
	// Requests are what the API answered while it lasted: a REST read and
	// an inbound post (post 0 again, with its Idempotency-Key).
	Requests []Probe
	// Readyz is each API replica's /readyz while it lasted; ReadyzNamesDB
	// that every verbose answer named Postgres down.
	Readyz        []int
	ReadyzNamesDB bool
	// First is from the return or heal until the next post applied or
	// delivery made; -1 when nothing was left to do.
	First time.Duration
}

// Probe is one request's answer while a fault lasted.
type Probe struct {
	What       string
	Status     int
	RetryAfter string
	// FirstPending says, for the repeat of post 0, that post 0 had no
	// answer yet when the repeat was sent (a fault before this one can
	// have held it up): its documented answer is then 409, retry later.
	FirstPending bool
}

// Problems lists what the outage's checks found wrong for fault f: with
// Postgres away, anything but 503 with Retry-After, or a replica ready;
// otherwise, a failed request (but for the 409 that post 0's repeat is
// owed while post 0 has no answer) or a replica not ready; in both, the first
// completion later than FirstAfterMax after the heal.
func (o *Outage) Problems(f Fault) []string {
	var p []string
	for _, r := range o.Requests {
		switch {
		case dbAway(f) && (r.Status != http.StatusServiceUnavailable || r.RetryAfter == ""):
			p = append(p, fmt.Sprintf("%s: %s answered %d (Retry-After %q), want 503 with Retry-After", f, r.What, r.Status, r.RetryAfter))
		case !dbAway(f) && r.FirstPending && r.Status == http.StatusConflict:
		case !dbAway(f) && (r.Status < 200 || r.Status > 299):
			p = append(p, fmt.Sprintf("%s: %s answered %d, want 2xx", f, r.What, r.Status))
		}
	}
	for _, st := range o.Readyz {
		if dbAway(f) == (st == http.StatusOK) {
			p = append(p, fmt.Sprintf("%s: /readyz answered %d", f, st))
		}
	}
	if dbAway(f) && !o.ReadyzNamesDB {
		p = append(p, fmt.Sprintf("%s: /readyz?verbose=1 did not name postgres down", f))
	}
	if o.First > FirstAfterMax {
		p = append(p, fmt.Sprintf("%s: the first completion came %.1fs after the heal, over %s", f, o.First.Seconds(), FirstAfterMax))
	}
	return p
}

// netSetup is a run's private Postgres cluster and toxiproxy, when its
// faults need them.
type netSetup struct {
	pg      *devpg.Cluster
	toxi    *toxi
	readKey string // an API key with customers:read, for the REST probe
}

func (s *setup) needs(fs ...Fault) bool {
	return slices.ContainsFunc(s.opts.Faults, func(f Fault) bool { return slices.Contains(fs, f) })
}

// privateDatabase starts, for a run that kills or restarts Postgres, a
// private cluster and makes the service's database in it; otherwise it
// returns dbURL.
func (s *setup) privateDatabase(ctx context.Context, dbURL string) (string, error) {
	s.net = &netSetup{}
	if !s.needs(FaultPostgres, FaultPostgresRestart) {
		return dbURL, nil
	}
	started := time.Now()
	pg, stop, err := privateCluster(ctx)
	if err != nil {
		return "", err
	}
	s.net.pg = pg
	s.stops = append(s.stops, stop)
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE crash`); err != nil {
		return "", err
	}
	fmt.Fprintf(s.opts.Out, "  private Postgres cluster on port %d for the service's database, in %.1fs\n", pg.Port(), time.Since(started).Seconds())
	return pg.URL("crash"), nil
}

// privateCluster initialises a PostgreSQL cluster of the run's own, with
// the server's default settings, in a new temporary directory, and starts
// it; stop stops it and removes the directory.
func privateCluster(ctx context.Context) (pg *devpg.Cluster, stop func(), err error) {
	base, err := os.MkdirTemp("", "crash-pg-")
	if err != nil {
		return nil, nil, err
	}
	// The cluster runs as another user when the harness is root: let it in.
	if err := os.Chmod(base, 0o755); err != nil { // #nosec G302 -- a directory the cluster's user must reach
		_ = os.RemoveAll(base)
		return nil, nil, err
	}
	if pg, err = devpg.Start(ctx, filepath.Join(base, "pg")); err != nil {
		_ = os.RemoveAll(base)
		return nil, nil, err
	}
	return pg, func() {
		_ = pg.Stop()
		_ = os.RemoveAll(base)
	}, nil
}

// routeThroughProxies starts toxiproxy when the run's faults need it and
// points the processes at its proxies: the service's DATABASE_URL (API and
// workers), the workers' TEMPORAL_ADDRESS.
func (s *setup) routeThroughProxies(ctx context.Context, temporalAddress string) error {
	if !s.needs(FaultLatency, FaultPartitionDB, FaultPartitionTemporal) {
		return nil
	}
	started := time.Now()
	t, err := startToxiproxy(ctx, s.dir, s.logPath("toxiproxy"))
	if err != nil {
		return err
	}
	s.net.toxi = t
	s.stops = append(s.stops, t.proc.stop)
	if s.needs(FaultLatency, FaultPartitionDB) {
		u, err := hostPort(s.dbURL)
		if err != nil {
			return err
		}
		if t.db, err = t.proxy("postgres", u); err != nil {
			return err
		}
		via, err := throughProxy(s.dbURL, t.db)
		if err != nil {
			return err
		}
		s.workerEnv = append(s.workerEnv, "DATABASE_URL="+via)
		s.apiEnv = append(s.apiEnv, "DATABASE_URL="+via)
	}
	if s.needs(FaultPartitionTemporal) {
		if t.temporal, err = t.proxy("temporal", temporalAddress); err != nil {
			return err
		}
		s.workerEnv = append(s.workerEnv, "TEMPORAL_ADDRESS="+t.temporal.Listen)
	}
	fmt.Fprintf(s.opts.Out, "  toxiproxy built and up in %.1fs\n", time.Since(started).Seconds())
	return nil
}

func hostPort(dbURL string) (string, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), nil
}

// strikeNet strikes a database or network fault, checks the API while it
// lasts, ends it, and measures the first completion after.
func (s *setup) strikeNet(ctx context.Context, f *FaultResult, start time.Time) error {
	out := func(format string, args ...any) {
		fmt.Fprintf(s.opts.Out, "  %5.1fs  "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	o := &Outage{First: -1}
	f.Outage = o
	struck := time.Now()
	hold := PartitionFor
	progress := fmt.Sprintf("%d/%d posts applied, %d answered, %d/%d delivered", f.Applied, s.opts.Posts, f.Answered, f.Delivered, s.opts.Deliveries)
	switch f.Fault {
	case FaultPostgres:
		pid, err := s.net.pg.PID()
		if err != nil {
			return err
		}
		if err := s.net.pg.Kill(); err != nil {
			return err
		}
		hold = PostgresDown
		out("SIGKILL the service's Postgres postmaster pid %d: %s; down for %s", pid, progress, hold)
	case FaultPostgresRestart:
		if err := s.net.pg.Stop(); err != nil {
			return err
		}
		hold = 0 // started again once the API has been asked
		out("pg_ctl stop -m fast of the service's Postgres in %.1fs: %s", time.Since(struck).Seconds(), progress)
	case FaultLatency:
		if err := s.net.toxi.slow(s.net.toxi.db, LatencyAdded); err != nil {
			return err
		}
		hold = SlowFor
		out("%s added between the service and Postgres for %s: %s", LatencyAdded, hold, progress)
	case FaultPartitionDB:
		if err := s.net.toxi.partition(s.net.toxi.db); err != nil {
			return err
		}
		out("silent partition between the service and Postgres for %s: %s", hold, progress)
	case FaultPartitionTemporal:
		if err := s.net.toxi.partition(s.net.toxi.temporal); err != nil {
			return err
		}
		out("silent partition between the workers and the Temporal server for %s: %s", hold, progress)
	}
	time.Sleep(time.Second)
	s.probe(ctx, o)
	for _, r := range o.Requests {
		out("  %s while it lasts: %d, Retry-After %q", r.What, r.Status, r.RetryAfter)
	}
	out("  /readyz of each API replica: %v; verbose names postgres down: %v", o.Readyz, o.ReadyzNamesDB)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(struck.Add(hold))):
	}

	switch f.Fault {
	case FaultPostgres, FaultPostgresRestart:
		if err := s.net.pg.Restart(ctx); err != nil {
			return err
		}
		out("the service's Postgres back on port %d, %.1fs after the fault", s.net.pg.Port(), time.Since(struck).Seconds())
	case FaultLatency:
		if err := s.net.toxi.slow(s.net.toxi.db, 0); err != nil {
			return err
		}
		out("latency removed")
	case FaultPartitionDB:
		if err := s.net.toxi.heal(s.net.toxi.db); err != nil {
			return err
		}
		out("partition healed")
	case FaultPartitionTemporal:
		if err := s.net.toxi.heal(s.net.toxi.temporal); err != nil {
			return err
		}
		out("partition healed")
	}
	healed := time.Now()
	o.Away = healed.Sub(struck)
	f.Back = o.Away
	// The harness's own connections to a Postgres that was killed or
	// stopped are gone: new ones.
	s.d.Pool().Reset()
	var base int
	for {
		applied, delivered, err := s.progress(ctx)
		if err == nil {
			base = applied + delivered
			if applied >= s.opts.Posts && delivered >= s.opts.Deliveries {
				out("nothing left to do after the heal")
				return nil
			}
			break
		}
		if time.Since(healed) > time.Minute {
			return fmt.Errorf("the harness could not read the database a minute after the %s fault ended: %w", f.Fault, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		applied, delivered, err := s.progress(ctx)
		if err == nil && applied+delivered > base {
			o.First = time.Since(healed)
			out("the first completion %.2fs after the heal (at most %s)", o.First.Seconds(), FirstAfterMax)
			return nil
		}
		if time.Since(healed) > s.opts.Settle {
			return fmt.Errorf("nothing completed within %s of the end of the %s fault", s.opts.Settle, f.Fault)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// probe asks the API, while a fault lasts, for a REST read and an inbound
// post (post 0 again, with its Idempotency-Key: answered as before, or not
// at all), and every replica's /readyz.
func (s *setup) probe(ctx context.Context, o *Outage) {
	s.mu.Lock()
	urls := slices.Clone(s.apiURLs)
	s.mu.Unlock()
	c := &http.Client{Timeout: 10 * time.Second}
	ask := func(what, method, u, key string, body string, firstPending bool) {
		req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
		if err != nil {
			return
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(api.IdempotencyKeyHeader, "crash-post-0")
		}
		p := Probe{What: what, FirstPending: firstPending}
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			p.Status, p.RetryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		}
		o.Requests = append(o.Requests, p)
	}
	ask("GET /api/v1/customers", http.MethodGet, urls[0]+"/api/v1/customers?limit=1", s.net.readKey, "", false)
	ask("POST /api/in/{token}", http.MethodPost, urls[len(urls)-1]+"/api/in/"+s.tokens[0],
		"", fmt.Sprintf(`{"order_ref": "SO-CRASH", "invoice_ref": %q, "amount_minor": 100, "currency": "GBP"}`, invoiceRef(0)),
		s.post0Pending(ctx))
	o.ReadyzNamesDB = true
	for _, base := range urls {
		st := 0
		if resp, err := c.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			st = resp.StatusCode
		}
		o.Readyz = append(o.Readyz, st)
		var a health.Answer
		resp, err := c.Get(base + "/readyz?verbose=1")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
		}
		if err != nil || a.Checks["postgres"].Status != "down" {
			o.ReadyzNamesDB = false
		}
	}
}

// post0Pending says whether post 0 is stored without an answer yet, read
// from the database directly (not through the fault); false when it cannot
// be read (Postgres away), where the probe's answer is 503 regardless.
func (s *setup) post0Pending(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var pending bool
	err := s.d.Pool().QueryRow(ctx, `
		SELECT r.status_code IS NULL
		FROM inbound_post_keys k JOIN inbound_receipts r ON r.org_id = k.org_id AND r.id = k.receipt_id
		WHERE k.org_id = $1 AND k.kind = 'idempotency_key' AND k.key = 'crash-post-0'`, s.org).Scan(&pending)
	return err == nil && pending
}

// readKey makes the API key of the REST probe.
func (s *setup) makeReadKey(ctx context.Context) error {
	if !slices.ContainsFunc(s.opts.Faults, netFault) {
		return nil
	}
	var err error
	_, s.net.readKey, err = s.d.CreateAPIKey(ctx, s.org, "crash-read", []domain.Scope{domain.ScopeCustomersRead})
	return err
}
