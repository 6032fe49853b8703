package db

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// The admission of deliveries (docs/webhooks.md#delivery-controls): the
// rules are domain's (domain/admission.go), over a subscription's state as
// read here under its lock; this file reads that state, and carries out the
// plan domain makes of it with statements that take the plan as arguments.

// admissionState is a subscription as the relay admits its deliveries.
type admissionState struct {
	id, org uuid.UUID
	domain.AdmissionState
}

// ClaimWebhookDeliveries admits and claims up to limit deliveries whose
// workflow has not been started, a subscription at a time, the
// subscriptions whose deliveries waited longest first, in a transaction
// that commits before it returns. Each subscription, locked meanwhile (so
// that relays admit its deliveries one after another), lets go, oldest
// first, what domain.AdmissionState.Claim allows: within its max_in_flight,
// each at a start slot of its rate (the ref's NotBefore, when the caller
// starts its workflow), with per_entity ordering only a delivery no earlier
// delivery of its entity keeps back, and while it is failing none but its
// probe (the others not admitted yet become held).
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
// deadlock), the subscriptions with deliveries waiting to be admitted and
// not claimed, those that waited longest first.
//
// Admission locks a subscription FOR NO KEY UPDATE, as every lock taken on
// a subscription to change its state does: it excludes the others, and not
// the key-share lock with which inserting a delivery checks its foreign key.
// FOR UPDATE excluded that too, and a relay inserting deliveries for two
// subscriptions deadlocked with an admission that held one and waited for
// the other.
func admissionSubscriptions(ctx context.Context, tx pgx.Tx, limit int) ([]admissionState, error) {
	rows, err := tx.Query(ctx, admissionSubscriptionsSQL, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (admissionState, error) {
		var s admissionState
		err := r.Scan(&s.id, &s.org, &s.Active, &s.Rate, &s.MaxInFlight, &s.Ordering, &s.Failing, &s.ProbeAt, &s.NextSlot, &s.Now, &s.InFlight)
		return s, err
	})
}

// admissionSubscriptionsSQL reads, for each subscription, its oldest
// delivery waiting to be admitted with one probe of
// webhook_deliveries_awaiting (migration 027), so that a round's cost
// follows the number of subscriptions, not of deliveries waiting: a
// subscription failing for hours holds thousands, and a round that
// aggregated them all (as this did) took tens of milliseconds each, many
// times a second, until the relays' rounds took the machine. The statuses
// are written into the statement, so that the planner can use the partial
// index. ($1 the most subscriptions.)
var admissionSubscriptionsSQL = `
		WITH waiting AS (
			SELECT s.id AS subscription_id, q.since FROM webhook_subscriptions s
			CROSS JOIN LATERAL (
				SELECT w.created_at AS since FROM webhook_deliveries w
				WHERE w.org_id = s.org_id AND w.subscription_id = s.id AND w.workflow_started_at IS NULL
				  AND w.status IN (` + statusLiterals(domain.AwaitingAdmission) + `)
				  AND (w.start_claimed_until IS NULL OR w.start_claimed_until < now())
				ORDER BY w.created_at, w.id LIMIT 1) q
			ORDER BY q.since LIMIT $1),
		locked AS (
			SELECT s.* FROM webhook_subscriptions s WHERE s.id IN (SELECT subscription_id FROM waiting) ORDER BY s.id FOR NO KEY UPDATE)
		SELECT l.id, l.org_id, l.active, l.rate_limit_per_second, l.max_in_flight, l.ordering, l.failing_since IS NOT NULL,
		       l.probe_at, l.next_slot_at, now(),
		       (SELECT count(*) FROM webhook_in_flight f WHERE f.org_id = l.org_id AND f.subscription_id = l.id AND f.until > now())
		FROM locked l JOIN waiting w ON w.subscription_id = l.id ORDER BY w.since`

// admit carries out domain.AdmissionState.Claim for s, with room for room
// more deliveries, and claims those it admits.
func admit(ctx context.Context, tx pgx.Tx, s admissionState, room int) ([]domain.WebhookDeliveryRef, error) {
	plan := s.Claim(room)
	if plan.Hold != nil {
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $3, updated_at = now()
			WHERE org_id = $1 AND subscription_id = $2 AND workflow_started_at IS NULL AND status = ANY ($4::text[])
			  AND (start_claimed_until IS NULL OR start_claimed_until < now())`, s.org, s.id, plan.Hold.To, plan.Hold.From); err != nil {
			return nil, err
		}
	}
	if plan.Admit <= 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, admitSQL(domain.EntityBlockers(s.Ordering)), s.org, s.id, domain.AwaitingAdmission, plan.Admit)
	if err != nil {
		return nil, err
	}
	refs, err := pgx.CollectRows(rows, scanDeliveryRef)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	a := s.Admit(len(refs), plan.Probe)
	ids := make([]uuid.UUID, len(refs))
	for i := range refs {
		ids[i] = refs[i].ID
		if a.Starts != nil {
			refs[i].NotBefore = a.Starts[i]
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries w SET start_claimed_until = c.until,
		status = CASE WHEN w.status = ANY ($4::text[]) THEN $5 ELSE w.status END, updated_at = now()
		FROM unnest($1::uuid[], $2::timestamptz[]) AS c (id, until) WHERE w.org_id = $3 AND w.id = c.id`,
		ids, a.Claims, s.org, a.Release.From, a.Release.To); err != nil {
		return nil, err
	}
	if a.Places == nil {
		return refs, nil
	}
	return refs, takePlaces(ctx, tx, s, ids, *a.Places)
}

// admitSQL selects, oldest first, up to $4 deliveries of the subscription
// $2 (of organisation $1) in a status of $3, not started or claimed, that
// no earlier delivery of their entity in a status of blockers keeps back,
// and locks them, skipping those another transaction holds.
func admitSQL(blockers []domain.WebhookStatus) string {
	return `
		SELECT w.id, w.org_id, w.event_id, e.type, w.subscription_id, w.attempts, e.trace_parent
		FROM webhook_deliveries w JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
		WHERE w.org_id = $1 AND w.subscription_id = $2 AND w.workflow_started_at IS NULL AND w.status = ANY ($3::text[])
		  AND (w.start_claimed_until IS NULL OR w.start_claimed_until < now())` + entityOpen(blockers) + `
		ORDER BY w.created_at, w.id LIMIT $4
		FOR UPDATE OF w SKIP LOCKED`
}

// entityOpen is the condition that leaves out a delivery an earlier
// delivery (in event order) of its entity, in one of the statuses blockers,
// keeps back; none without blockers. Each delivery carries its event's
// time (event_at, migration 029), and the index of open deliveries by
// entity in event order (webhook_deliveries_entity_order, migration 030)
// answers the question with one probe: the entity's first open delivery
// is either this one or earlier. Joining each open delivery of the entity
// to its event, as this did before, read them all for every delivery it
// looked at: with one busy entity, a round read the square of its open
// deliveries. The statuses are written into the statement rather than
// passed: the planner proves the index's predicate only from literals.
func entityOpen(blockers []domain.WebhookStatus) string {
	if len(blockers) == 0 {
		return ""
	}
	return `
		  AND (w.entity IS NULL OR NOT EXISTS (
		      SELECT 1 FROM webhook_deliveries p
		      WHERE p.org_id = w.org_id AND p.subscription_id = w.subscription_id AND p.entity = w.entity
		        AND p.status IN (` + statusLiterals(blockers) + `) AND (p.event_at, p.event_id) < (w.event_at, w.event_id)))`
}

// statusLiterals writes statuses as a list of SQL string literals.
func statusLiterals(statuses []domain.WebhookStatus) string {
	q := make([]string, len(statuses))
	for i, s := range statuses {
		q[i] = "'" + strings.ReplaceAll(string(s), "'", "''") + "'"
	}
	return strings.Join(q, ", ")
}

// takePlaces carries out domain.Places for admitted attempts of s: a lease
// each among its max_in_flight, its next start slot, and its next probe's
// due time, each left as it is when the plan has none.
func takePlaces(ctx context.Context, tx pgx.Tx, s admissionState, ids []uuid.UUID, p domain.Places) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_in_flight (delivery_id, org_id, subscription_id, until, probe)
		SELECT unnest($1::uuid[]), $2, $3, unnest($4::timestamptz[]), $5
		ON CONFLICT (org_id, delivery_id) DO UPDATE SET until = EXCLUDED.until, probe = EXCLUDED.probe`, ids, s.org, s.id, p.Leases, p.Probe); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET next_slot_at = coalesce($3, next_slot_at), probe_at = coalesce($4, probe_at)
		WHERE org_id = $1 AND id = $2`, s.org, s.id, p.NextSlot, p.ProbeAt)
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
// run; manual: support's resend) may go now, as its subscription allows
// (domain.AdmissionState.Retry), in a transaction that locks the
// subscription, and carries out the answer: a retry held while the
// subscription is failing reads held; one that goes holds its place among
// max_in_flight until it is recorded, as a first attempt does.
func (d *DB) AdmitRetry(ctx context.Context, orgID, deliveryID uuid.UUID, tries int, manual bool) (domain.Admission, error) {
	var plan domain.RetryPlan
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var s admissionState
		var status domain.WebhookStatus
		err := tx.QueryRow(ctx, `
			WITH l AS (SELECT s.* FROM webhook_subscriptions s JOIN webhook_deliveries w ON w.org_id = s.org_id AND w.subscription_id = s.id
			           WHERE w.org_id = $1 AND w.id = $2 FOR NO KEY UPDATE OF s)
			SELECT l.id, l.org_id, l.active, l.rate_limit_per_second, l.max_in_flight, l.ordering, l.failing_since IS NOT NULL,
			       l.probe_at, l.next_slot_at, now(),
			       (SELECT count(*) FROM webhook_in_flight f WHERE f.org_id = l.org_id AND f.subscription_id = l.id AND f.until > now()
			          AND f.delivery_id <> $2),
			       (SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2)
			FROM l`, orgID, deliveryID).Scan(&s.id, &s.org, &s.Active, &s.Rate, &s.MaxInFlight, &s.Ordering, &s.Failing, &s.ProbeAt,
			&s.NextSlot, &s.Now, &s.InFlight, &status)
		if err != nil {
			return notFound(err, "delivery")
		}
		plan = s.Retry(status, manual, tries)
		if plan.Places != nil {
			if err := takePlaces(ctx, tx, s, []uuid.UUID{deliveryID}, *plan.Places); err != nil {
				return err
			}
		}
		if plan.Change == nil {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $3, updated_at = now()
			WHERE org_id = $1 AND id = $2 AND status = ANY ($4::text[])`, orgID, deliveryID, plan.Change.To, plan.Change.From)
		return err
	})
	return plan.Admission, err
}
