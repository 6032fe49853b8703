package db

import (
	"fmt"
	"time"
)

// Limit is a GCRA rate limit: one call per Interval on average, with a
// whole Window's allowance available as a burst (Window/Interval calls).
type Limit struct {
	Interval time.Duration
	Window   time.Duration
}

// Burst is how many calls the limit lets through at once.
func (l Limit) Burst() int { return int(l.Window / l.Interval) }

// The limits of docs/design.md#rate-limits: 600 a minute per API key; 120 at once, refilling at
// two a second, per inbound endpoint.
var (
	APIKeyLimit   = Limit{Interval: 100 * time.Millisecond, Window: 60 * time.Second}
	EndpointLimit = Limit{Interval: 500 * time.Millisecond, Window: 60 * time.Second}
)

// gcraTake is a data-modifying CTE body that takes one call from the bucket
// of (org, subject), SQL expressions over the rows of from (a FROM clause
// body yielding at most one row). It returns the bucket's
// allowed flag and theoretical arrival time after the call. A denied call
// consumes nothing. Row locking on the conflict target serialises concurrent
// callers, across processes, on the same bucket.
func gcraTake(org, subject, from string, l Limit) string {
	interval := fmt.Sprintf("interval '%d microseconds'", l.Interval.Microseconds())
	window := fmt.Sprintf("interval '%d microseconds'", l.Window.Microseconds())
	next := "greatest(r.tat, now()) + " + interval
	fits := next + " <= now() + " + window
	return fmt.Sprintf(`
		INSERT INTO rate_limits AS r (org_id, subject_id, tat, allowed)
		SELECT %s, %s, now() + %s, true FROM %s
		ON CONFLICT (org_id, subject_id) DO UPDATE SET
			allowed = %s,
			tat = CASE WHEN %s THEN %s ELSE r.tat END
		RETURNING r.allowed, r.tat`, org, subject, interval, from, fits, fits, next)
}

// RateDecision is the outcome of taking one call from a bucket.
type RateDecision struct {
	Allowed bool
	// Remaining is how many more calls would be let through right now.
	Remaining int
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter is how long until the next call would be let through
	// (zero when this one was).
	RetryAfter time.Duration
}

func decide(l Limit, allowed bool, tat, now time.Time) RateDecision {
	ahead := max(tat.Sub(now), 0)
	d := RateDecision{
		Allowed:   allowed,
		Remaining: max(int((l.Window-ahead)/l.Interval), 0),
		Reset:     ahead,
	}
	if !allowed {
		d.RetryAfter = max(ahead+l.Interval-l.Window, 0)
	}
	return d
}
