package db

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// An API key's bucket is shared by every API process, so that the limit
// holds across replicas. Taking one call from it per request would be a
// database write per request; instead a process takes a lease: several
// calls of the bucket at once, in one write, which it then spends in memory.
// What a lease holds is already taken from the bucket, so however many
// processes hold leases, no more calls are let through than the limit.
// What a process does not spend before the lease runs out it gives back,
// moving the bucket's theoretical arrival time back by as many calls (never
// below now: a bucket is never fuller than full).
//
// A lease is as large as leaseMax calls, or an eighth of what the bucket
// has left when that is fewer, and at least one call: a key far from its
// limit is served with a write per leaseMax calls, and one near it with a
// write per call, as before, so calls held by one process never leave
// another refusing many calls the bucket could still give.
const (
	leaseMax = 32
	// leaseTTL is how long a lease may be spent; what is left of it then
	// goes back to the bucket.
	leaseTTL = 5 * time.Second
	// leaseShare is the fraction of what the bucket has left one lease may
	// take: one eighth.
	leaseShare = 8
)

// leaseTakeSQL gives back $3 calls a lease did not spend and takes up to $4
// calls from the bucket of ($1, $2), under the row's lock; it returns how
// many calls were granted (0: refused), the bucket's theoretical arrival
// time after the take, and the database's clock.
var leaseTakeSQL = func(l Limit) string {
	interval := fmt.Sprintf("interval '%d microseconds'", l.Interval.Microseconds())
	window := fmt.Sprintf("interval '%d microseconds'", l.Window.Microseconds())
	base := "greatest(r.tat - $3::int * " + interval + ", now())"
	avail := fmt.Sprintf("floor(extract(epoch FROM now() + %s - %s) * 1000000 / %d)::int", window, base, l.Interval.Microseconds())
	grant := fmt.Sprintf("CASE WHEN %s < 1 THEN 0 ELSE least($4::int, greatest(1, %s / %d)) END", avail, avail, leaseShare)
	first := fmt.Sprintf("least($4::int, greatest(1, %d))", l.Burst()/leaseShare)
	return fmt.Sprintf(`
		INSERT INTO rate_limits AS r (org_id, subject_id, tat, allowed, granted)
		VALUES ($1, $2, now() + %s * %s, true, %s)
		ON CONFLICT (org_id, subject_id) DO UPDATE SET
			granted = %s,
			allowed = %s > 0,
			tat = %s + %s * %s
		RETURNING r.granted, r.tat, now()`,
		first, interval, first, grant, grant, base, grant, interval)
}(APIKeyLimit)

// leaseGiveBackSQL moves buckets back by the calls their leases did not
// spend: ($1[i], $2[i]) gets $3[i] calls back.
var leaseGiveBackSQL = fmt.Sprintf(`
	UPDATE rate_limits r SET tat = greatest(r.tat - g.n * interval '%d microseconds', now())
	FROM unnest($1::uuid[], $2::uuid[], $3::int[]) AS g(org_id, subject_id, n)
	WHERE r.org_id = g.org_id AND r.subject_id = g.subject_id`, APIKeyLimit.Interval.Microseconds())

type leaseKey struct{ org, subject uuid.UUID }

// lease is what one process holds of one key's bucket.
type lease struct {
	mu sync.Mutex
	// left is how many calls the lease still holds; they may be spent
	// until expires, and are given back after it.
	left    int
	expires time.Time
	// tat is the bucket's theoretical arrival time after the take, and skew
	// the database's clock less this process's at the take.
	tat  time.Time
	skew time.Duration
	// gone is set when the sweeper has dropped the lease from the map: a
	// caller that finds it so looks the key up again.
	gone bool
}

// leases are a process's leases of its keys' buckets.
type leases struct {
	d     *DB
	limit Limit
	size  int
	ttl   time.Duration
	// every is how often expired leases are given back: every ttl.
	every time.Duration

	mu      sync.Mutex
	m       map[leaseKey]*lease
	start   sync.Once
	stopped sync.Once
	stop    chan struct{}
	done    chan struct{}
}

func newLeases(d *DB) *leases {
	return &leases{d: d, limit: APIKeyLimit, size: leaseMax, ttl: leaseTTL, every: leaseTTL,
		m: map[leaseKey]*lease{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// take spends one call of (org, subject)'s bucket: from the process's lease
// when it holds one, otherwise from a new lease taken in the database.
func (ls *leases) take(ctx context.Context, org, subject uuid.UUID) (RateDecision, error) {
	ls.start.Do(func() { go ls.sweep() })
	k := leaseKey{org, subject}
	for {
		ls.mu.Lock()
		l := ls.m[k]
		if l == nil {
			l = &lease{}
			ls.m[k] = l
		}
		ls.mu.Unlock()

		l.mu.Lock()
		if l.gone {
			l.mu.Unlock()
			continue
		}
		d, err := ls.spend(ctx, k, l)
		l.mu.Unlock()
		return d, err
	}
}

// spend takes one call from l, renewing it first when it is spent or has
// run out; l is locked.
func (ls *leases) spend(ctx context.Context, k leaseKey, l *lease) (RateDecision, error) {
	now := time.Now()
	if l.left > 0 && now.Before(l.expires) {
		l.left--
		return ls.decision(true, l, now), nil
	}
	var (
		granted int
		tat     time.Time
		dbNow   time.Time
	)
	back := l.left
	if err := ls.d.rate.QueryRow(ctx, leaseTakeSQL, k.org, k.subject, back, ls.size).Scan(&granted, &tat, &dbNow); err != nil {
		return RateDecision{}, err // l.left is still held, and given back later
	}
	now = time.Now()
	l.tat, l.skew = tat, dbNow.Sub(now)
	if granted == 0 {
		l.left, l.expires = 0, time.Time{}
		return ls.decision(false, l, now), nil
	}
	l.left, l.expires = granted-1, now.Add(ls.ttl)
	return ls.decision(true, l, now), nil
}

// decision is what the caller is told: the bucket as of now, with the calls
// the lease still holds counted as remaining.
func (ls *leases) decision(allowed bool, l *lease, now time.Time) RateDecision {
	d := decide(ls.limit, allowed, l.tat, now.Add(l.skew))
	held := time.Duration(l.left) * ls.limit.Interval
	d.Remaining = min(d.Remaining+l.left, ls.limit.Burst())
	d.Reset = max(d.Reset-held, 0)
	return d
}

// sweep gives back, every lease period, what expired leases did not spend,
// and drops them, so that the map holds only the keys in use.
func (ls *leases) sweep() {
	defer close(ls.done)
	t := time.NewTicker(ls.every)
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			ls.giveBack(true)
			return
		case <-t.C:
			ls.giveBack(false)
		}
	}
}

// giveBack drops expired leases (every lease when all is set) and gives
// back what they held, in one statement. A lease in use is left for the
// next sweep. Calls that cannot be given back (the database is down) are
// lost to the bucket until it refills: the limit errs towards refusing.
func (ls *leases) giveBack(all bool) {
	now := time.Now()
	var orgs, subjects []uuid.UUID
	var ns []int
	ls.mu.Lock()
	for k, l := range ls.m {
		if !l.mu.TryLock() {
			continue
		}
		if all || !now.Before(l.expires) {
			if l.left > 0 {
				orgs, subjects, ns = append(orgs, k.org), append(subjects, k.subject), append(ns, l.left)
			}
			l.left, l.gone = 0, true
			delete(ls.m, k)
		}
		l.mu.Unlock()
	}
	ls.mu.Unlock()
	if len(ns) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = ls.d.rate.Exec(ctx, leaseGiveBackSQL, orgs, subjects, ns)
}

// close gives back every lease and stops the sweeper, if it started; a
// take after it no longer starts one.
func (ls *leases) close() {
	ls.stopped.Do(func() {
		started := true
		ls.start.Do(func() { started = false })
		if started {
			close(ls.stop)
			<-ls.done
		}
	})
}
