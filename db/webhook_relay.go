package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// RelayEvents takes up to limit events not relayed yet (oldest first),
// creates one delivery per matching active subscription (an operational
// event only for those that name it, never for the subscription it
// concerns), each with its event's time, and marks the events relayed, in
// one transaction. Deliveries are made in event order (their ids follow
// it), the order a relay admits them in. It returns how many events it
// took; their deliveries wait in UnstartedWebhookDeliveries for their
// workflows.
//
// Relays take events one after another (an advisory lock of the schema's,
// held to the commit). Side by side, one relay could take an entity's
// later event while another still held its earlier one, and commit first:
// the later delivery was then admitted with nothing earlier open to hold
// it back, and arrived first. One after another, a relay that sees an
// event also sees its entity's earlier events (they committed before it,
// their writes holding the entity's row lock) either waiting or relayed.
func (d *DB) RelayEvents(ctx context.Context, limit int) (int, error) {
	var taken int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('relay-events:' || current_schema(), 0))`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			WITH ev AS (
				SELECT id, org_id, type, data, entity_type, entity_id, created_at FROM events WHERE relayed_at IS NULL
				ORDER BY created_at, id LIMIT $1 FOR UPDATE
			)
			SELECT ev.id, ev.org_id, s.id, ev.entity_type || ':' || ev.entity_id, ev.created_at
			FROM ev LEFT JOIN webhook_subscriptions s
			  ON s.org_id = ev.org_id AND s.active
			 AND (ev.type = ANY (s.event_types) OR (cardinality(s.event_types) = 0 AND NOT ev.type = ANY ($2::text[])))
			 AND s.id IS DISTINCT FROM (CASE WHEN ev.type = ANY ($2::text[]) THEN (ev.data->>'subscription_id')::uuid END)
			ORDER BY ev.created_at, ev.id`,
			limit, domain.OperationalEventTypes)
		if err != nil {
			return err
		}
		var events, ids, orgs, evIDs, subs []uuid.UUID
		var entities []*string
		var times []time.Time
		seen := map[uuid.UUID]bool{}
		for rows.Next() {
			var ev, org uuid.UUID
			var sub *uuid.UUID
			var entity *string
			var at time.Time
			if err := rows.Scan(&ev, &org, &sub, &entity, &at); err != nil {
				rows.Close()
				return err
			}
			if !seen[ev] {
				seen[ev] = true
				events = append(events, ev)
			}
			if sub != nil {
				ids, orgs, evIDs, subs = append(ids, NewID()), append(orgs, org), append(evIDs, ev), append(subs, *sub)
				entities, times = append(entities, entity), append(times, at)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		taken = len(events)
		if taken == 0 {
			return nil
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, entity, event_at)
				SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::timestamptz[])
				ON CONFLICT (event_id, subscription_id) DO NOTHING`, ids, orgs, evIDs, subs, entities, times); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE events SET relayed_at = now() WHERE id = ANY ($1)`, events)
		return err
	})
	return taken, err
}

// RelayWork reports, in one statement outside any transaction, whether
// a relay's round has anything to do: events not relayed yet, and
// deliveries waiting to be admitted (db.ClaimWebhookDeliveries) that no
// relay's claim holds. Every attempt recorded wakes every relay (its
// place may be what a delivery waits for), and most of those wakes find
// nothing new: this one read answers them, where the round's two
// transactions took seven round trips and the relays' shared lock. A
// wake comes after the commit that sent it, so what it announced is seen
// here. The statuses are written into the statement, so that the planner
// can use the partial index webhook_deliveries_awaiting.
func (d *DB) RelayWork(ctx context.Context) (events, deliveries bool, err error) {
	err = d.pool.QueryRow(ctx, relayWorkSQL).Scan(&events, &deliveries)
	return events, deliveries, err
}

var relayWorkSQL = `
	SELECT EXISTS (SELECT 1 FROM events WHERE relayed_at IS NULL),
	       EXISTS (SELECT 1 FROM webhook_deliveries w WHERE w.workflow_started_at IS NULL
	                 AND w.status IN (` + statusLiterals(domain.AwaitingAdmission) + `)
	                 AND (w.start_claimed_until IS NULL OR w.start_claimed_until < now()))`

// unstartedDeliveries selects up to $1 deliveries whose workflow has not
// been started and that no relay's claim holds, oldest first, skipping
// those another transaction holds.
const unstartedDeliveries = `
	SELECT w.id, w.org_id, w.event_id, e.type, w.subscription_id, w.attempts, e.trace_parent
	FROM webhook_deliveries w JOIN events e ON e.org_id = w.org_id AND e.id = w.event_id
	WHERE w.workflow_started_at IS NULL AND (w.start_claimed_until IS NULL OR w.start_claimed_until < now())
	ORDER BY w.created_at, w.id LIMIT $1
	FOR UPDATE OF w SKIP LOCKED`

func scanDeliveryRef(r pgx.CollectableRow) (domain.WebhookDeliveryRef, error) {
	var x domain.WebhookDeliveryRef
	err := r.Scan(&x.ID, &x.OrgID, &x.EventID, &x.EventType, &x.SubscriptionID, &x.Attempts, &x.TraceParent)
	return x, err
}

// UnstartedWebhookDeliveries lists up to limit deliveries whose workflow
// has not been started, oldest first, leaving out those a relay holds
// (ClaimWebhookDeliveries).
func (d *DB) UnstartedWebhookDeliveries(ctx context.Context, limit int) ([]domain.WebhookDeliveryRef, error) {
	rows, err := d.pool.Query(ctx, unstartedDeliveries, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanDeliveryRef)
}

// MarkWebhookDeliveriesStarted records that the deliveries' workflows
// exist (which ends any claim on them).
func (d *DB) MarkWebhookDeliveriesStarted(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `UPDATE webhook_deliveries SET workflow_started_at = now(), start_claimed_until = NULL
		WHERE id = ANY ($1) AND workflow_started_at IS NULL`, ids)
	return err
}

// ReleaseWebhookDeliveries ends a relay's claim on deliveries it did not
// start, so that the next round takes them again.
func (d *DB) ReleaseWebhookDeliveries(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `
		WITH released AS (UPDATE webhook_deliveries SET start_claimed_until = NULL
		                  WHERE id = ANY ($1) AND workflow_started_at IS NULL RETURNING org_id, id)
		DELETE FROM webhook_in_flight f USING released r WHERE f.org_id = r.org_id AND f.delivery_id = r.id`, ids)
	return err
}

// ListenEvents calls fn whenever events were written (see eventsChannel),
// and after every interval without one, until ctx ends.
func (d *DB) ListenEvents(ctx context.Context, interval time.Duration, fn func()) error {
	return d.listen(ctx, eventsChannel, interval, func(string) { fn() }, fn)
}
