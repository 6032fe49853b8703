package integrations

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
)

// CreateSubscription subscribes a URL to the organisation's events; the
// answer carries the secret, which is never readable again.
// in.URL is checked here (outbound.CheckURL).
func (m *Service) CreateSubscription(ctx context.Context, actor Actor, in db.NewSubscription) (db.CreatedSubscription, error) {
	u, err := outbound.CheckURL(ctx, in.URL, m.Targets)
	if err != nil {
		return db.CreatedSubscription{}, domain.Errorf(domain.EINVALID, "url: %v", err)
	}
	in.URL = u.String()
	s, err := m.DB.CreateSubscription(ctx, m.Sealer, in)
	if err != nil {
		return s, err
	}
	m.audit(ctx, actor, in.OrgID, "subscription.create", "subscription", s.ID, map[string]any{"url": outbound.Origin(s.URL), "events": s.EventTypes,
		"rate_limit_per_second": s.RateLimitPerSecond, "max_in_flight": s.MaxInFlight, "ordering": s.Ordering})
	return s, nil
}

// UpdateSubscription changes a subscription's URL, events or active flag.
func (m *Service) UpdateSubscription(ctx context.Context, actor Actor, orgID, id uuid.UUID, ch db.SubscriptionChange) (db.Subscription, error) {
	if ch.URL != nil {
		u, err := outbound.CheckURL(ctx, *ch.URL, m.Targets)
		if err != nil {
			return db.Subscription{}, domain.Errorf(domain.EINVALID, "url: %v", err)
		}
		s := u.String()
		ch.URL = &s
	}
	s, err := m.DB.UpdateSubscription(ctx, orgID, id, ch)
	if err != nil {
		return s, err
	}
	detail := map[string]any{}
	if ch.URL != nil {
		detail["url"] = outbound.Origin(*ch.URL)
	}
	if ch.EventTypes != nil {
		detail["events"] = *ch.EventTypes
	}
	if ch.Active != nil {
		detail["active"] = *ch.Active
	}
	if ch.RateLimitSet {
		detail["rate_limit_per_second"] = ch.RateLimit
	}
	if ch.MaxInFlight != nil {
		detail["max_in_flight"] = *ch.MaxInFlight
	}
	if ch.Ordering != nil {
		detail["ordering"] = *ch.Ordering
	}
	m.audit(ctx, actor, orgID, "subscription.update", "subscription", id, detail)
	return s, nil
}

// DeleteSubscription removes a subscription with its deliveries.
func (m *Service) DeleteSubscription(ctx context.Context, actor Actor, orgID, id uuid.UUID) error {
	if err := m.DB.DeleteSubscription(ctx, orgID, id); err != nil {
		return err
	}
	m.audit(ctx, actor, orgID, "subscription.delete", "subscription", id, nil)
	return nil
}

// RotateSecret gives a subscription a new secret; the old one keeps signing
// beside it for 24 hours.
func (m *Service) RotateSecret(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.RotatedSecret, error) {
	r, err := m.DB.RotateSubscriptionSecret(ctx, m.Sealer, orgID, id)
	if err != nil {
		return r, err
	}
	m.audit(ctx, actor, orgID, "subscription.rotate_secret", "subscription", id, map[string]any{"previous_expires_at": r.PreviousExpiresAt})
	return r, nil
}

// Resend makes an attempt of one of the organisation's deliveries now.
func (m *Service) Resend(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.WebhookDelivery, error) {
	x, err := m.DB.GetWebhookDelivery(ctx, orgID, id)
	if err != nil {
		return x, err
	}
	if err := m.resend(ctx, x, db.ResentBySupport, nil); err != nil {
		return x, err
	}
	m.audit(ctx, actor, orgID, "delivery.resend", "delivery", id, nil)
	return x, nil
}

// resend makes an attempt of a delivery now: one that is over (succeeded
// or exhausted) gets a run of one attempt; one still under way is told to
// attempt at once (or, if its workflow is gone, carried on from where it
// stands). by (db.ResentBy...; batch, the bulk resend) is recorded first,
// so that a failed delivery the attempt delivers reads resolved by it.
func (m *Service) resend(ctx context.Context, x db.WebhookDelivery, by string, batch *uuid.UUID) error {
	wf, err := m.workflows()
	if err != nil {
		return err
	}
	if err := m.DB.MarkDeliveriesResent(ctx, x.OrgID, []uuid.UUID{x.ID}, by, batch); err != nil {
		return err
	}
	over := x.Status == domain.WebhookSucceeded || x.Status == domain.WebhookExhausted || x.Status == domain.WebhookSkipped
	ref := domain.WebhookDeliveryRef{ID: x.ID, OrgID: x.OrgID, EventID: x.EventID, EventType: x.EventType,
		SubscriptionID: x.SubscriptionID, Attempts: x.Attempts}
	if err := wf.ResendWebhook(ctx, ref, over); err != nil {
		return err
	}
	return m.DB.MarkWebhookDeliveriesStarted(ctx, []uuid.UUID{x.ID})
}

// Skip ends a delivery not delivered yet without another attempt, so that
// its entity's later deliveries go on (db.SkipWebhookDelivery).
func (m *Service) Skip(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.WebhookDelivery, error) {
	if err := m.DB.SkipWebhookDelivery(ctx, orgID, id); err != nil {
		return db.WebhookDelivery{}, err
	}
	m.audit(ctx, actor, orgID, "delivery.skip", "delivery", id, nil)
	return m.DB.GetWebhookDelivery(ctx, orgID, id)
}

// Recover resends every delivery of a subscription created since then that
// failed or was exhausted, and returns how many.
func (m *Service) Recover(ctx context.Context, actor Actor, orgID, subscriptionID uuid.UUID, since time.Time) (int, error) {
	list, err := m.DB.RecoverableDeliveries(ctx, orgID, subscriptionID, since)
	if err != nil {
		return 0, err
	}
	if _, err := m.workflows(); err != nil {
		return 0, err
	}
	n := 0
	for _, x := range list {
		if err := m.resend(ctx, x, db.ResentByRecover, nil); err != nil {
			m.audit(ctx, actor, orgID, "subscription.recover", "subscription", subscriptionID,
				map[string]any{"since": domain.NewTimestamp(since), "resent": n, "interrupted": true})
			return n, err
		}
		n++
	}
	m.audit(ctx, actor, orgID, "subscription.recover", "subscription", subscriptionID,
		map[string]any{"since": domain.NewTimestamp(since), "resent": n})
	return n, nil
}
