package db

import (
	"context"
	"time"
)

// Retention says how long the sweeps keep what: events (with their
// deliveries), and receipts and delivery attempts.
type Retention struct {
	Events   time.Duration
	Receipts time.Duration
	Attempts time.Duration
	// Batch bounds each delete statement.
	Batch int
}

// Pruned counts what a sweep deleted.
type Pruned struct {
	Events   int64 `json:"events"`
	Receipts int64 `json:"receipts"`
	Attempts int64 `json:"attempts"`
}

// Prune deletes, across organisations and in bounded batches, what is past
// its retention at now: events the relay has handled whose deliveries are
// all over (their deliveries go with them), receipts that are not pending
// or parked (a replay goes with its original, or on its own when it is old
// enough itself), and delivery attempts.
func (d *DB) Prune(ctx context.Context, r Retention, now time.Time) (Pruned, error) {
	var p Pruned
	if r.Batch <= 0 {
		r.Batch = 1000
	}
	steps := []struct {
		n   *int64
		age time.Duration
		sql string
	}{
		{&p.Attempts, r.Attempts, `DELETE FROM webhook_attempts WHERE id IN (
			SELECT id FROM webhook_attempts WHERE started_at < $1 LIMIT $2)`},
		{&p.Events, r.Events, `DELETE FROM events WHERE id IN (
			SELECT e.id FROM events e WHERE e.created_at < $1 AND e.relayed_at IS NOT NULL
			  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries w WHERE w.org_id = e.org_id AND w.event_id = e.id
			                  AND w.status IN ('pending', 'failed'))
			LIMIT $2)`},
		{&p.Receipts, r.Receipts, `WITH old AS (
			SELECT r.org_id, r.id FROM inbound_receipts r
			WHERE r.received_at < $1 AND r.outcome NOT IN ('pending', 'parked')
			  AND NOT EXISTS (SELECT 1 FROM inbound_receipts x WHERE x.org_id = r.org_id AND x.replay_of = r.id
			                  AND (x.received_at >= $1 OR x.outcome IN ('pending', 'parked')))
			LIMIT $2)
			DELETE FROM inbound_receipts r USING old
			WHERE (r.org_id = old.org_id AND r.id = old.id) OR (r.org_id = old.org_id AND r.replay_of = old.id)`},
	}
	for _, s := range steps {
		if s.age <= 0 {
			continue
		}
		for {
			tag, err := d.pool.Exec(ctx, s.sql, now.Add(-s.age), r.Batch)
			if err != nil {
				return p, err
			}
			*s.n += tag.RowsAffected()
			if tag.RowsAffected() < int64(r.Batch) || ctx.Err() != nil {
				break
			}
		}
	}
	return p, ctx.Err()
}
