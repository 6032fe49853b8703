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
func (d *DB) DeleteSubscription(ctx context.Context, orgID, id uuid.UUID) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE org_id = $1 AND id = $2`, orgID, id)
	if err == nil && tag.RowsAffected() == 0 {
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

// DeliveryListFilter narrows the organisation's delivery list.
type DeliveryListFilter struct {
	SubscriptionID *uuid.UUID
	Status         domain.WebhookStatus
	EventType      string
	// EventID narrows to one event's deliveries, one per subscription
	// (read by the index of the event and subscription).
	EventID *uuid.UUID
}

// ListWebhookDeliveriesPage lists the organisation's deliveries, newest
// first, a page at a time.
func (d *DB) ListWebhookDeliveriesPage(ctx context.Context, orgID uuid.UUID, f DeliveryListFilter, p Page) ([]WebhookDelivery, error) {
	c := newConds()
	c.add("w.org_id = ?", orgID)
	c.addIf(f.Status != "", "w.status = ?", f.Status)
	c.addIf(f.SubscriptionID != nil, "w.subscription_id = ?", f.SubscriptionID)
	c.addIf(f.EventType != "", "e.type = ?", f.EventType)
	c.addIf(f.EventID != nil, "w.event_id = ?", f.EventID)
	return listPage(ctx, d.pool, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom, "webhook_deliveries", "w", c, p, scanWebhookDelivery)
}

// RecoverableDeliveries lists, oldest first, the deliveries of one of the
// organisation's subscriptions created since then that failed or were
// exhausted: the ones a receiver that was down missed. ENOTFOUND when the
// organisation has no such subscription.
func (d *DB) RecoverableDeliveries(ctx context.Context, orgID, subscriptionID uuid.UUID, since time.Time) ([]WebhookDelivery, error) {
	if _, err := d.GetSubscription(ctx, orgID, subscriptionID); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+`
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.created_at >= $3 AND w.status IN ('failed', 'exhausted')
		ORDER BY w.created_at, w.id`, orgID, subscriptionID, since)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) { return scanWebhookDelivery(r) })
}
