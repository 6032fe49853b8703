package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// The admission of deliveries (docs/webhooks.md#delivery-controls): a
// delivery's workflow is started only when its subscription lets it go, so
// that a subscription's rate, its cap on attempts at once, its ordering and
// its failing spells hold whatever the number of workers and relays.
const (
	// ProbeFirst is how long after a subscription becomes failing its
	// first probe is due; each probe that fails doubles the wait, up to
	// ProbeMax.
	ProbeFirst = time.Minute
	ProbeMax   = time.Hour
	// inFlightLease is how long an admitted attempt holds its place after
	// its start at most: an attempt takes 10 seconds at most, and a place
	// whose worker was killed mid-attempt is given back after it.
	inFlightLease = 2 * time.Minute
)

// admissionSubscription is a subscription as the relay admits its
// deliveries: its settings, and where it stands now.
type admissionSubscription struct {
	id, org     uuid.UUID
	active      bool
	rate        *int
	maxInFlight int
	ordering    string
	failing     bool
	probeDue    bool
	nextSlot    *time.Time
	now         time.Time
	inFlight    int
}

// ClaimWebhookDeliveries admits and claims up to limit deliveries whose
// workflow has not been started, a subscription at a time, the
// subscriptions whose deliveries waited longest first, in a transaction
// that commits before it returns. Each subscription, locked meanwhile (so
// that relays admit its deliveries one after another), lets go, oldest
// first:
//
//   - no more than its max_in_flight less the attempts in flight;
//   - with a rate, each at a start slot of its own (the ref's NotBefore,
//     when the caller starts its workflow), 1/rate seconds after the one
//     before;
//   - with per_entity ordering, only a delivery no earlier delivery of the
//     same entity is still open for (pending, failed or held);
//   - while it is failing, none: its waiting deliveries not admitted yet
//     become held, and when its probe is due, the oldest goes alone as
//     the probe.
//
// Each admitted attempt holds a place among max_in_flight until it is
// recorded (RecordWebhookAttempt). Two relays never hold the same
// delivery, and none holds a transaction open while it starts workflows.
// The caller marks the ones it started (MarkWebhookDeliveriesStarted) and
// releases the rest (ReleaseWebhookDeliveries).
func (d *DB) ClaimWebhookDeliveries(ctx context.Context, limit int) ([]domain.WebhookDeliveryRef, error) {
	var refs []domain.WebhookDeliveryRef
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		subs, err := admissionSubscriptions(ctx, tx, limit)
		if err != nil {
			return err
		}
		for _, s := range subs {
			if len(refs) >= limit {
				break
			}
			got, err := admit(ctx, tx, s, limit-len(refs))
			if err != nil {
				return err
			}
			refs = append(refs, got...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// admissionSubscriptions locks, in id order (relays lock alike, and never
// deadlock), the subscriptions with deliveries waiting to start and not
// claimed, those that waited longest first.
func admissionSubscriptions(ctx context.Context, tx pgx.Tx, limit int) ([]admissionSubscription, error) {
	rows, err := tx.Query(ctx, `
		WITH waiting AS (
			SELECT subscription_id, min(created_at) AS since FROM webhook_deliveries
			WHERE workflow_started_at IS NULL AND status IN ('pending', 'held')
			  AND (start_claimed_until IS NULL OR start_claimed_until < now())
			GROUP BY subscription_id ORDER BY since LIMIT $1),
		locked AS (
			SELECT s.* FROM webhook_subscriptions s WHERE s.id IN (SELECT subscription_id FROM waiting) ORDER BY s.id FOR UPDATE)
		SELECT l.id, l.org_id, l.active, l.rate_limit_per_second, l.max_in_flight, l.ordering, l.failing_since IS NOT NULL,
		       coalesce(l.probe_at <= now(), false), l.next_slot_at, now(),
		       (SELECT count(*) FROM webhook_in_flight f WHERE f.org_id = l.org_id AND f.subscription_id = l.id AND f.until > now())
		FROM locked l JOIN waiting w ON w.subscription_id = l.id ORDER BY w.since`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (admissionSubscription, error) {
		var s admissionSubscription
		err := r.Scan(&s.id, &s.org, &s.active, &s.rate, &s.maxInFlight, &s.ordering, &s.failing, &s.probeDue, &s.nextSlot, &s.now, &s.inFlight)
		return s, err
	})
}

// admit admits up to room of s's waiting deliveries (see
// ClaimWebhookDeliveries) and claims them.
func admit(ctx context.Context, tx pgx.Tx, s admissionSubscription, room int) ([]domain.WebhookDeliveryRef, error) {
	free, probe := s.maxInFlight-s.inFlight, false
	switch {
	case !s.active:
		// Their workflows end them at once, without an attempt.
		free = room
	case s.failing:
		// Held: waiting, with no attempt spent. A delivery admitted
		// already (its relay's claim still holds, the start waiting for
		// its slot) goes as admitted, like one whose attempt is under way.
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'held', updated_at = now()
			WHERE org_id = $1 AND subscription_id = $2 AND workflow_started_at IS NULL AND status = 'pending'
			  AND (start_claimed_until IS NULL OR start_claimed_until < now())`, s.org, s.id); err != nil {
			return nil, err
		}
		if !s.probeDue || s.inFlight > 0 {
			return nil, nil
		}
		free, probe = 1, true
	}
	n := min(free, room)
	if n <= 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT w.id, w.org_id, w.event_id, e.type, w.subscription_id, w.attempts, e.trace_parent
		FROM webhook_deliveries w JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.workflow_started_at IS NULL AND w.status IN ('pending', 'held')
		  AND (w.start_claimed_until IS NULL OR w.start_claimed_until < now())
		  AND ($3 <> 'per_entity' OR w.entity IS NULL OR NOT EXISTS (
		      SELECT 1 FROM webhook_deliveries p JOIN events pe ON pe.org_id = p.org_id AND pe.id = p.event_id
		      WHERE p.org_id = w.org_id AND p.subscription_id = w.subscription_id AND p.entity = w.entity AND p.id <> w.id
		        AND p.status IN ('pending', 'failed', 'held') AND (pe.created_at, pe.id) < (e.created_at, e.id)))
		ORDER BY w.created_at, w.id LIMIT $4
		FOR UPDATE OF w SKIP LOCKED`, s.org, s.id, s.ordering, n)
	if err != nil {
		return nil, err
	}
	refs, err := pgx.CollectRows(rows, scanDeliveryRef)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	ids := make([]uuid.UUID, len(refs))
	until := make([]time.Time, len(refs))
	slot := s.now
	if s.nextSlot != nil && s.nextSlot.After(slot) {
		slot = *s.nextSlot
	}
	for i := range refs {
		ids[i] = refs[i].ID
		if s.active && s.rate != nil {
			refs[i].NotBefore = slot
			until[i] = slot.Add(inFlightLease)
			slot = slot.Add(time.Second / time.Duration(*s.rate))
		} else {
			until[i] = s.now.Add(inFlightLease)
		}
	}
	// A claim lasts until its delivery's slot, and ClaimLease after it:
	// the relay starts the workflow at the slot.
	claimed := make([]time.Time, len(refs))
	for i, r := range refs {
		claimed[i] = s.now.Add(ClaimLease)
		if r.NotBefore.After(s.now) {
			claimed[i] = r.NotBefore.Add(ClaimLease)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries w SET start_claimed_until = c.until,
		status = CASE WHEN w.status = 'held' THEN 'pending' ELSE w.status END, updated_at = now()
		FROM unnest($1::uuid[], $2::timestamptz[]) AS c (id, until) WHERE w.org_id = $3 AND w.id = c.id`,
		ids, claimed, s.org); err != nil {
		return nil, err
	}
	if !s.active {
		return refs, nil
	}
	return refs, takePlaces(ctx, tx, s, ids, until, probe, slot)
}

// takePlaces gives admitted attempts of s their places among its
// max_in_flight (a lease each, until the time beside it), moves its next
// start slot to next when it has a rate, and, for a probe, pushes its next
// probe past the lease (a probe whose worker died is followed by another).
func takePlaces(ctx context.Context, tx pgx.Tx, s admissionSubscription, ids []uuid.UUID, until []time.Time, probe bool, next time.Time) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_in_flight (delivery_id, org_id, subscription_id, until, probe)
		SELECT unnest($1::uuid[]), $2, $3, unnest($4::timestamptz[]), $5
		ON CONFLICT (org_id, delivery_id) DO UPDATE SET until = EXCLUDED.until, probe = EXCLUDED.probe`, ids, s.org, s.id, until, probe); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET next_slot_at = CASE WHEN $3 THEN $4 ELSE next_slot_at END,
		probe_at = CASE WHEN $5 THEN now() + make_interval(secs => $6) ELSE probe_at END WHERE org_id = $1 AND id = $2`,
		s.org, s.id, s.rate != nil, next, probe, inFlightLease.Seconds())
	return err
}

// releaseInFlight gives back the place of a delivery's admitted attempt,
// once the attempt is recorded or the delivery ended, and wakes the relays
// (a delivery may be waiting for that place). It reports whether the
// attempt was its subscription's probe.
func releaseInFlight(ctx context.Context, q querier, orgID, deliveryID uuid.UUID) (probe bool, err error) {
	err = q.QueryRow(ctx, `DELETE FROM webhook_in_flight WHERE org_id = $1 AND delivery_id = $2 RETURNING probe`, orgID, deliveryID).Scan(&probe)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // an attempt not admitted (a resend, a retry)
	}
	if err != nil {
		return false, err
	}
	_, err = q.Exec(ctx, `SELECT pg_notify('`+eventsChannel+`', '')`)
	return probe, err
}

// SkipWebhookDelivery ends one of the organisation's deliveries not
// delivered yet (pending, failed or held) without another attempt: skipped.
// With per_entity ordering, its entity's later deliveries go on; its
// workflow, should it wake for a retry, sends nothing. A resend still sends
// it. The relays are woken.
func (d *DB) SkipWebhookDelivery(ctx context.Context, orgID, id uuid.UUID) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		var status domain.WebhookStatus
		err := tx.QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2 FOR UPDATE`, orgID, id).Scan(&status)
		if err != nil {
			return notFound(err, "delivery")
		}
		switch status {
		case domain.WebhookPending, domain.WebhookFailed, domain.WebhookHeld:
		default:
			return domain.Errorf(domain.ECONFLICT, "the delivery is %s: only one not delivered yet (pending, failed or held) can be skipped", status)
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'skipped', next_attempt_at = NULL, last_error = 'skipped by support',
			updated_at = now() WHERE org_id = $1 AND id = $2`, orgID, id); err != nil {
			return err
		}
		if _, err := releaseInFlight(ctx, tx, orgID, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+eventsChannel+`', '')`)
		return err
	})
}

// AdmitRetry answers whether a delivery's automatic retry (its nightly
// run) may go now, as its subscription allows, in a transaction that locks
// the subscription:
//
//   - a subscription switched off, or a delivery not failed (skipped by
//     support meanwhile): go, and the attempt ends it;
//   - failing: the delivery is held, and waits until a while after the
//     next probe, unless the probe is due and none is in flight: then this
//     retry is the probe;
//   - healthy: go, at a start slot of its rate, when fewer than
//     max_in_flight attempts are in flight; otherwise wait, 1 second and
//     longer at each try, up to a minute.
//
// An admitted retry holds its place among max_in_flight until it is
// recorded, as a first attempt does.
//
// A resend (manual) is admitted alike, but whatever the delivery's status,
// and while the subscription is failing too: support asked for it.
func (d *DB) AdmitRetry(ctx context.Context, orgID, deliveryID uuid.UUID, tries int, manual bool) (domain.Admission, error) {
	var a domain.Admission
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var s admissionSubscription
		var status domain.WebhookStatus
		var probeAt *time.Time
		err := tx.QueryRow(ctx, `
			WITH l AS (SELECT s.* FROM webhook_subscriptions s JOIN webhook_deliveries w ON w.org_id = s.org_id AND w.subscription_id = s.id
			           WHERE w.org_id = $1 AND w.id = $2 FOR UPDATE OF s)
			SELECT l.id, l.org_id, l.active, l.rate_limit_per_second, l.max_in_flight, l.failing_since IS NOT NULL,
			       coalesce(l.probe_at <= now(), false), l.probe_at, l.next_slot_at, now(),
			       (SELECT count(*) FROM webhook_in_flight f WHERE f.org_id = l.org_id AND f.subscription_id = l.id AND f.until > now()
			          AND f.delivery_id <> $2),
			       (SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2)
			FROM l`, orgID, deliveryID).Scan(&s.id, &s.org, &s.active, &s.rate, &s.maxInFlight, &s.failing, &s.probeDue, &probeAt,
			&s.nextSlot, &s.now, &s.inFlight, &status)
		if err != nil {
			return notFound(err, "delivery")
		}
		if !s.active || (!manual && status != domain.WebhookFailed && status != domain.WebhookHeld) {
			a = domain.Admission{Go: true, At: s.now}
			return nil
		}
		probe := false
		switch {
		case s.failing && manual:
		case s.failing && s.probeDue && s.inFlight == 0:
			probe = true
		case s.failing:
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'held', updated_at = now()
				WHERE org_id = $1 AND id = $2 AND status = 'failed'`, orgID, deliveryID); err != nil {
				return err
			}
			wait := ProbeFirst
			if probeAt != nil && probeAt.Sub(s.now)+ProbeFirst > wait {
				wait = probeAt.Sub(s.now) + ProbeFirst
			}
			a = domain.Admission{Held: true, Wait: min(wait, ProbeMax)}
			return nil
		case s.inFlight >= s.maxInFlight:
			a = domain.Admission{Wait: min(time.Second<<min(tries, 6), time.Minute)}
			return nil
		}
		slot := s.now
		if s.rate != nil && s.nextSlot != nil && s.nextSlot.After(slot) {
			slot = *s.nextSlot
		}
		next := slot
		if s.rate != nil {
			next = slot.Add(time.Second / time.Duration(*s.rate))
		}
		if err := takePlaces(ctx, tx, s, []uuid.UUID{deliveryID}, []time.Time{slot.Add(inFlightLease)}, probe, next); err != nil {
			return err
		}
		// Going again: no longer held.
		_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', updated_at = now()
			WHERE org_id = $1 AND id = $2 AND status = 'held'`, orgID, deliveryID)
		a = domain.Admission{Go: true, At: slot}
		return err
	})
	return a, err
}
