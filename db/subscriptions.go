package db

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Subscription is a webhook subscription (never with its secret).
type Subscription struct {
	ID         uuid.UUID
	OrgID      uuid.UUID
	URL        string
	EventTypes []string
	Active     bool
	CreatedAt  domain.Timestamp
	SubscriptionSettings
	// State is healthy, or failing (FailingSince says since when).
	State string
	// Backlog counts its deliveries not delivered yet.
	Backlog DeliveryBacklog
	SubscriptionHealth
}

// SubscriptionSettings say how a subscription's deliveries go to its
// receiver (docs/webhooks.md#delivery-controls): at most RateLimitPerSecond
// starts a second (nil: no limit), MaxInFlight attempts at once, and the
// Ordering of one entity's deliveries.
type SubscriptionSettings struct {
	RateLimitPerSecond *int
	MaxInFlight        int
	Ordering           string
}

// The subscription states and orderings.
const (
	SubscriptionHealthy = "healthy"
	SubscriptionFailing = "failing"
	OrderingNone        = domain.OrderingNone
	OrderingPerEntity   = domain.OrderingPerEntity
)

// DeliveryBacklog is a subscription's deliveries not delivered yet, by
// status.
type DeliveryBacklog struct {
	Pending int
	Failed  int
	Held    int
}

// SubscriptionHealth is how a subscription's receiver is doing
// (docs/webhooks.md#operational-events): its failed attempts in a row,
// since when it is failing (nil when it is not), and its last failure.
type SubscriptionHealth struct {
	ConsecutiveFailures int
	FailingSince        *domain.Timestamp
	LastFailureStatus   *int
	LastFailureError    *string
}

const subscriptionColumns = `id, org_id, url, event_types, active, created_at,
	consecutive_failures, failing_since, last_failure_status, last_failure_error,
	rate_limit_per_second, max_in_flight, ordering`

func scanSubscription(row pgx.Row) (Subscription, error) { return scanSubscriptionWith(row) }

// scanSubscriptionWith scans subscriptionColumns and then extra.
func scanSubscriptionWith(row pgx.Row, extra ...any) (Subscription, error) {
	var s Subscription
	err := row.Scan(append([]any{&s.ID, &s.OrgID, &s.URL, &s.EventTypes, &s.Active, &s.CreatedAt,
		&s.ConsecutiveFailures, &s.FailingSince, &s.LastFailureStatus, &s.LastFailureError,
		&s.RateLimitPerSecond, &s.MaxInFlight, &s.Ordering}, extra...)...)
	s.State = SubscriptionHealthy
	if s.FailingSince != nil {
		s.State = SubscriptionFailing
	}
	return s, err
}

// withBacklog fills in the backlog of the organisation's subscriptions
// list, in one statement (an index holds the deliveries not delivered).
func (d *DB) withBacklog(ctx context.Context, orgID uuid.UUID, list []Subscription, err error) ([]Subscription, error) {
	if err != nil || len(list) == 0 {
		return list, err
	}
	ids := make([]uuid.UUID, len(list))
	at := make(map[uuid.UUID]*DeliveryBacklog, len(list))
	for i := range list {
		ids[i] = list[i].ID
		at[list[i].ID] = &list[i].Backlog
	}
	rows, err := d.pool.Query(ctx, `
		SELECT subscription_id, status, count(*) FROM webhook_deliveries
		WHERE org_id = $1 AND subscription_id = ANY ($2) AND status IN ('pending', 'failed', 'held')
		GROUP BY subscription_id, status`, orgID, ids)
	if err != nil {
		return list, err
	}
	var sub uuid.UUID
	var status string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&sub, &status, &n}, func() error {
		b := at[sub]
		switch domain.WebhookStatus(status) {
		case domain.WebhookPending:
			b.Pending = n
		case domain.WebhookFailed:
			b.Failed = n
		case domain.WebhookHeld:
			b.Held = n
		}
		return nil
	})
	return list, err
}

// oneWithBacklog is withBacklog of one subscription.
func (d *DB) oneWithBacklog(ctx context.Context, s Subscription, err error) (Subscription, error) {
	if err != nil {
		return s, err
	}
	list, err := d.withBacklog(ctx, s.OrgID, []Subscription{s}, nil)
	return list[0], err
}

// NewSubscription is what adding a subscription takes. An empty EventTypes
// means every event type.
type NewSubscription struct {
	OrgID      uuid.UUID
	URL        string
	EventTypes []string
	// The settings; nil leaves each at its default (no rate limit, 10 in
	// flight, no ordering).
	RateLimit   *int
	MaxInFlight *int
	Ordering    *string
}

// CreatedSubscription is a new subscription with its secret, which is never
// readable again.
type CreatedSubscription struct {
	Subscription
	Secret string
}

// CreateSubscription adds a webhook subscription with a new secret, sealed
// with sealer. The URL is checked by the caller (outbound.CheckURL).
func (d *DB) CreateSubscription(ctx context.Context, sealer *secrets.Sealer, in NewSubscription) (CreatedSubscription, error) {
	for _, t := range in.EventTypes {
		if !slices.Contains(domain.EventTypes, t) {
			return CreatedSubscription{}, domain.Errorf(domain.EINVALID, "unknown event type %q", t)
		}
	}
	if len(in.URL) > 2000 {
		return CreatedSubscription{}, domain.Errorf(domain.EINVALID, "the URL is longer than 2000 characters")
	}
	if err := (SubscriptionChange{RateLimitSet: true, RateLimit: in.RateLimit, MaxInFlight: in.MaxInFlight, Ordering: in.Ordering}).check(); err != nil {
		return CreatedSubscription{}, err
	}
	if in.EventTypes == nil {
		in.EventTypes = []string{}
	}
	secret, id := secrets.NewSigningSecret(), NewID()
	var s Subscription
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		// The organisation's row is locked (FOR NO KEY UPDATE: rows that
		// refer to it are still written) so that subscriptions made at
		// once are counted one after another against the cap; they are
		// counted by a statement of their own, whose snapshot, taken once
		// the lock is held, sees those made before.
		var held, limit int
		err := tx.QueryRow(ctx, `SELECT subscription_cap FROM organisations WHERE id = $1 FOR NO KEY UPDATE`, in.OrgID).Scan(&limit)
		if err != nil {
			return notFound(err, "organisation")
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_subscriptions WHERE org_id = $1`, in.OrgID).Scan(&held); err != nil {
			return err
		}
		if held >= limit {
			return domain.Errorf(domain.EUNPROCESSABLE, "the organisation has %d webhook subscriptions, its cap of %d: "+
				"delete one first, or ask an operator to raise the cap", held, limit)
		}
		s, err = scanSubscription(tx.QueryRow(ctx, `
			INSERT INTO webhook_subscriptions (id, org_id, url, event_types, secret_sealed, rate_limit_per_second, max_in_flight, ordering)
			VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, 10), coalesce($8, 'none')) RETURNING `+subscriptionColumns,
			id, in.OrgID, in.URL, in.EventTypes, sealer.Seal(secret, sealedAt(subscriptionSecrets, id)), in.RateLimit, in.MaxInFlight, in.Ordering))
		return err
	})
	return CreatedSubscription{Subscription: s, Secret: secret}, err
}

// DefaultSubscriptionCap is how many webhook subscriptions an organisation
// may hold unless an operator sets another (SetSubscriptionCap).
const DefaultSubscriptionCap = 100

// SubscriptionCap is an organisation's cap on webhook subscriptions and how
// many it holds.
type SubscriptionCap struct {
	Cap  int `json:"subscription_cap"`
	Held int `json:"subscriptions"`
}

// GetSubscriptionCap reads the organisation's subscription cap and count.
func (d *DB) GetSubscriptionCap(ctx context.Context, orgID uuid.UUID) (SubscriptionCap, error) {
	var c SubscriptionCap
	err := d.pool.QueryRow(ctx, `SELECT subscription_cap, (SELECT count(*) FROM webhook_subscriptions WHERE org_id = $1)
		FROM organisations WHERE id = $1`, orgID).Scan(&c.Cap, &c.Held)
	return c, notFound(err, "organisation")
}

// SetSubscriptionCap sets how many webhook subscriptions the organisation
// may hold (0 to 100,000). Lowering it below what the organisation holds
// removes none: it makes no more until it is under the cap.
func (d *DB) SetSubscriptionCap(ctx context.Context, orgID uuid.UUID, limit int) (SubscriptionCap, error) {
	if limit < 0 || limit > 100_000 {
		return SubscriptionCap{}, domain.Errorf(domain.EINVALID, "the subscription cap must be 0 to 100000")
	}
	var c SubscriptionCap
	err := d.pool.QueryRow(ctx, `UPDATE organisations SET subscription_cap = $2 WHERE id = $1
		RETURNING subscription_cap, (SELECT count(*) FROM webhook_subscriptions WHERE org_id = $1)`, orgID, limit).Scan(&c.Cap, &c.Held)
	return c, notFound(err, "organisation")
}

// SetSubscriptionActive disables or enables one of the organisation's
// subscriptions. A disabled subscription gets no new deliveries, and its
// deliveries waiting for a retry end exhausted when their turn comes.
func (d *DB) SetSubscriptionActive(ctx context.Context, orgID, id uuid.UUID, active bool) (Subscription, error) {
	s, err := scanSubscription(d.pool.QueryRow(ctx, `
		UPDATE webhook_subscriptions SET active = $3, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING `+subscriptionColumns,
		orgID, id, active))
	return d.oneWithBacklog(ctx, s, notFound(err, "subscription"))
}

// ListSubscriptionsPage lists the organisation's subscriptions, newest
// first, a page at a time.
func (d *DB) ListSubscriptionsPage(ctx context.Context, orgID uuid.UUID, p Page) ([]Subscription, error) {
	c := newConds()
	c.add("s.org_id = ?", orgID)
	list, err := listPage(ctx, d.pool, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions s`, "webhook_subscriptions",
		"s", c, p, scanSubscription)
	return d.withBacklog(ctx, orgID, list, err)
}

// GetSubscription returns one of the organisation's subscriptions.
func (d *DB) GetSubscription(ctx context.Context, orgID, id uuid.UUID) (Subscription, error) {
	s, err := scanSubscription(d.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions
		WHERE org_id = $1 AND id = $2`, orgID, id))
	return d.oneWithBacklog(ctx, s, notFound(err, "subscription"))
}

// SubscriptionChange is what PATCH changes; nil leaves a field as it is.
// The URL is checked by the caller (outbound.CheckURL).
type SubscriptionChange struct {
	URL        *string
	EventTypes *[]string
	Active     *bool
	// RateLimitSet says the rate is changed, to RateLimit (nil: no limit).
	RateLimitSet bool
	RateLimit    *int
	MaxInFlight  *int
	Ordering     *string
}

// check refuses settings out of their ranges, with the API's words.
func (ch SubscriptionChange) check() error {
	switch {
	case ch.RateLimitSet && ch.RateLimit != nil && (*ch.RateLimit < 1 || *ch.RateLimit > 1000):
		return domain.Errorf(domain.EINVALID, "rate_limit_per_second must be 1 to 1000, or null for no limit")
	case ch.MaxInFlight != nil && (*ch.MaxInFlight < 1 || *ch.MaxInFlight > 100):
		return domain.Errorf(domain.EINVALID, "max_in_flight must be 1 to 100")
	case ch.Ordering != nil && *ch.Ordering != OrderingNone && *ch.Ordering != OrderingPerEntity:
		return domain.Errorf(domain.EINVALID, "ordering must be none or per_entity")
	}
	return nil
}

// checkEventTypes refuses unknown event types.
func checkEventTypes(types []string) error {
	for _, t := range types {
		if !slices.Contains(domain.EventTypes, t) {
			return domain.Errorf(domain.EINVALID, "unknown event type %q", t)
		}
	}
	return nil
}

// UpdateSubscription changes one of the organisation's subscriptions.
func (d *DB) UpdateSubscription(ctx context.Context, orgID, id uuid.UUID, ch SubscriptionChange) (Subscription, error) {
	if ch.EventTypes != nil {
		if err := checkEventTypes(*ch.EventTypes); err != nil {
			return Subscription{}, err
		}
	}
	if ch.URL != nil && len(*ch.URL) > 2000 {
		return Subscription{}, domain.Errorf(domain.EINVALID, "the URL is longer than 2000 characters")
	}
	if err := ch.check(); err != nil {
		return Subscription{}, err
	}
	s, err := scanSubscription(d.pool.QueryRow(ctx, `
		UPDATE webhook_subscriptions SET url = coalesce($3, url), event_types = coalesce($4, event_types),
		       active = coalesce($5, active),
		       rate_limit_per_second = CASE WHEN $6 THEN $7 ELSE rate_limit_per_second END,
		       max_in_flight = coalesce($8, max_in_flight), ordering = coalesce($9, ordering), updated_at = now()
		WHERE org_id = $1 AND id = $2 RETURNING `+subscriptionColumns, orgID, id, ch.URL, ch.EventTypes, ch.Active,
		ch.RateLimitSet, ch.RateLimit, ch.MaxInFlight, ch.Ordering))
	return d.oneWithBacklog(ctx, s, notFound(err, "subscription"))
}

// DeleteSubscription removes one of the organisation's subscriptions with
// its deliveries and their attempts.
//
// The delete takes its deliveries' row locks before the subscription's, in
// the order a recorded attempt takes them (its delivery, then its
// subscription's health): a delete that locked the subscription first and
// then cascaded to a delivery whose attempt was being recorded deadlocked
// with it. A deadlock that still happens (a delivery made and attempted
// between the two) is tried again, at most three times.
func (d *DB) DeleteSubscription(ctx context.Context, orgID, id uuid.UUID) error {
	var deleted int64
	var err error
	for range 3 {
		err = d.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2 ORDER BY id FOR UPDATE`,
				orgID, id); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE org_id = $1 AND id = $2`, orgID, id)
			deleted = tag.RowsAffected()
			return err
		})
		if pe := pgError(err); pe == nil || pe.Code != "40P01" {
			break
		}
	}
	if err == nil && deleted == 0 {
		return domain.Errorf(domain.ENOTFOUND, "subscription not found")
	}
	return err
}

// RotatedSecret is the new secret of a subscription, shown once, and until
// when the one it replaced still signs.
type RotatedSecret struct {
	Subscription
	Secret            string
	PreviousExpiresAt domain.Timestamp
}

// RotateSubscriptionSecret gives a subscription a new secret (made where
// every webhook secret is, secrets.NewSigningSecret); the secret it
// replaces keeps signing beside it for domain.SecretRotationOverlap. A second rotation
// within the overlap drops the oldest secret.
func (d *DB) RotateSubscriptionSecret(ctx context.Context, sealer *secrets.Sealer, orgID, id uuid.UUID) (RotatedSecret, error) {
	out := RotatedSecret{Secret: secrets.NewSigningSecret()}
	var expires time.Time
	s, err := scanSubscriptionWith(d.pool.QueryRow(ctx, `
		UPDATE webhook_subscriptions SET previous_secret_sealed = secret_sealed, secret_sealed = $3,
		       previous_secret_expires_at = now() + make_interval(secs => $4), updated_at = now()
		WHERE org_id = $1 AND id = $2
		RETURNING `+subscriptionColumns+`, previous_secret_expires_at`,
		orgID, id, sealer.Seal(out.Secret, sealedAt(subscriptionSecrets, id)), domain.SecretRotationOverlap.Seconds()), &expires)
	out.Subscription, err = d.oneWithBacklog(ctx, s, notFound(err, "subscription"))
	out.PreviousExpiresAt = domain.NewTimestamp(expires)
	return out, err
}
