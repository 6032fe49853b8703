package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// SubscriptionDetail is a subscription as its page shows it: the
// subscription with its backlog, when its failing receiver is probed next,
// and where its secret rotation stands (never a secret).
type SubscriptionDetail struct {
	Subscription
	// ProbeAt is when a failing subscription's next probe is due (nil:
	// none is due), and ProbeInterval the wait after it.
	ProbeAt       *domain.Timestamp
	ProbeInterval time.Duration
	// SecretSince is when the current secret was made: the last rotation,
	// or the subscription's creation when it was never rotated.
	SecretSince domain.Timestamp
	// PreviousExpiresAt is, after a rotation, until when the secret it
	// replaced keeps signing beside the current one.
	PreviousExpiresAt *domain.Timestamp
	// ExhaustedLastDay counts its deliveries created in the last 24 hours
	// that ran out of attempts.
	ExhaustedLastDay int
	// Held are its oldest held deliveries (at most HeldShown).
	Held []WebhookDelivery
}

// PreviousAccepted says whether the secret a rotation replaced still signs
// beside the current one at now.
func (s SubscriptionDetail) PreviousAccepted(now time.Time) bool {
	return s.PreviousExpiresAt != nil && s.PreviousExpiresAt.After(now)
}

// HeldShown is how many held deliveries a subscription's page lists.
const HeldShown = 10

// GetSubscriptionDetail returns one of the organisation's subscriptions as
// its page shows it.
func (d *DB) GetSubscriptionDetail(ctx context.Context, orgID, id uuid.UUID, now time.Time) (SubscriptionDetail, error) {
	var x SubscriptionDetail
	var interval *int
	s, err := scanSubscriptionWith(d.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+`, probe_at, probe_interval_seconds, previous_secret_expires_at
		FROM webhook_subscriptions WHERE org_id = $1 AND id = $2`, orgID, id), &x.ProbeAt, &interval, &x.PreviousExpiresAt)
	if x.Subscription, err = d.oneWithBacklog(ctx, s, notFound(err, "subscription")); err != nil {
		return x, err
	}
	if interval != nil {
		x.ProbeInterval = time.Duration(*interval) * time.Second
	}
	x.SecretSince = x.CreatedAt
	if x.PreviousExpiresAt != nil {
		// A rotation keeps the secret it replaces for the overlap.
		x.SecretSince = domain.NewTimestamp(x.PreviousExpiresAt.Add(-domain.SecretRotationOverlap))
	}
	// By the index of the subscription's deliveries by creation time.
	if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries
		WHERE org_id = $1 AND subscription_id = $2 AND created_at >= $3 AND status = 'exhausted'`,
		orgID, id, now.Add(-24*time.Hour)).Scan(&x.ExhaustedLastDay); err != nil {
		return x, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+`
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.status = 'held' ORDER BY w.created_at, w.id LIMIT $3`, orgID, id, HeldShown)
	if err != nil {
		return x, err
	}
	x.Held, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) { return scanWebhookDelivery(r) })
	return x, err
}

// HourFigures are a subscription's attempts that started in one hour.
type HourFigures struct {
	// Hour is the hour's start.
	Hour      time.Time
	Attempts  int
	Succeeded int
	// MedianMS is the attempts' median duration (nil: no attempt).
	MedianMS *float64
}

// SuccessRate is the share of the hour's attempts that succeeded, 0 to 1
// (nil: no attempt).
func (h HourFigures) SuccessRate() *float64 {
	if h.Attempts == 0 {
		return nil
	}
	r := float64(h.Succeeded) / float64(h.Attempts)
	return &r
}

// hourFiguresReach is how long before the last 24 hours a delivery may
// have been created for its attempts to count in them: a failed delivery's
// retry comes at the next nightly run.
const hourFiguresReach = 48 * time.Hour

// SubscriptionHours returns the figures of the 24 hours up to now, oldest
// first, one per hour (the last one the hour under way): the attempts of
// the subscription's deliveries created up to 48 hours before them that started
// in each hour, how many succeeded (a 2xx answer) and their median
// duration. Bounded by the subscription alone: it reads the subscription's
// deliveries of those 72 hours by the index of its deliveries by creation
// time, and each one's attempts by the index of attempts by delivery (the
// lateral subquery is kept apart, OFFSET 0, so that the planner does not
// read every organisation's attempts of the day by their age instead).
func (d *DB) SubscriptionHours(ctx context.Context, orgID, id uuid.UUID, now time.Time) ([]HourFigures, error) {
	now = now.UTC()
	first := now.Truncate(time.Hour).Add(-23 * time.Hour)
	hours := make([]HourFigures, 24)
	for i := range hours {
		hours[i].Hour = first.Add(time.Duration(i) * time.Hour)
	}
	rows, err := d.pool.Query(ctx, `
		SELECT date_trunc('hour', x.started_at AT TIME ZONE 'UTC'), count(*),
		       count(*) FILTER (WHERE x.status_code BETWEEN 200 AND 299),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY x.duration_ms)
		FROM webhook_deliveries w
		CROSS JOIN LATERAL (SELECT a.started_at, a.status_code, a.duration_ms FROM webhook_attempts a
		                    WHERE a.org_id = w.org_id AND a.delivery_id = w.id AND a.started_at >= $4 OFFSET 0) x
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.created_at >= $3
		GROUP BY 1`, orgID, id, first.Add(-hourFiguresReach), first)
	if err != nil {
		return nil, err
	}
	var hour time.Time
	var n, ok int
	var median float64
	_, err = pgx.ForEachRow(rows, []any{&hour, &n, &ok, &median}, func() error {
		i := int(hour.Sub(first) / time.Hour)
		if i < 0 || i >= len(hours) {
			return nil
		}
		m := median
		hours[i].Attempts, hours[i].Succeeded, hours[i].MedianMS = n, ok, &m
		return nil
	})
	return hours, err
}
