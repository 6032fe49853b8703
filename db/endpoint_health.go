package db

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// endpointOutcome judges an endpoint's last domain.EndpointWindow after one
// of its posts came to outcome (failing: whether the endpoint reads failing,
// when the caller read it already) (docs/webhooks.md#operational-events): at
// least domain.EndpointWindowPosts posts, more than half failed or error,
// make it failing and emit inbound.endpoint.failing; a later outcome after
// which that no longer holds emits inbound.endpoint.recovered. Only a
// failure can start a spell and only another outcome end one, so a healthy
// endpoint's posts cost no count. It reports whether the endpoint changed.
func endpointOutcome(ctx context.Context, q querier, orgID, endpointID uuid.UUID, outcome domain.Outcome, failing *bool) (changed bool, err error) {
	if outcome == "" || outcome == domain.OutcomePending {
		return false, nil
	}
	bad := outcome == domain.OutcomeFailed || outcome == domain.OutcomeError
	if failing == nil { // not read with the receipt
		failing = new(bool)
		if err := q.QueryRow(ctx, `SELECT failing_since IS NOT NULL FROM inbound_endpoints WHERE org_id = $1 AND id = $2`,
			orgID, endpointID).Scan(failing); err != nil {
			return false, notFound(err, "endpoint")
		}
	}
	if bad == *failing {
		return false, nil
	}
	var d domain.EndpointHealthData
	// The update's condition is read again on the row it locks: of two
	// posts judging at once, one changes it and emits.
	err = q.QueryRow(ctx, `
		WITH w AS (
			SELECT count(*)::int AS posts, (count(*) FILTER (WHERE outcome IN ('failed', 'error')))::int AS failed
			FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2 AND received_at > now() - make_interval(secs => $3))
		UPDATE inbound_endpoints e SET failing_since = CASE WHEN $4 THEN now() END
		FROM w WHERE e.org_id = $1 AND e.id = $2 AND (e.failing_since IS NULL) = $4
		  AND (w.posts >= $5 AND w.failed * 2 > w.posts) = $4
		RETURNING e.id, e.name, e.action, w.posts, w.failed`,
		orgID, endpointID, domain.EndpointWindow.Seconds(), bad, domain.EndpointWindowPosts).Scan(
		&d.EndpointID, &d.Name, &d.Action, &d.WindowPosts, &d.FailedPosts)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	case bad:
		return true, emit(ctx, q, orgID, domain.EndpointFailing.New(d))
	default:
		return true, emit(ctx, q, orgID, domain.EndpointRecovered.New(d))
	}
}

// RejudgeFailingEndpoints judges again every failing endpoint's last
// domain.EndpointWindow, as an outcome that did not fail would: one that
// stopped receiving posts while failing recovers once its failures leave
// the window (inbound.endpoint.recovered), without waiting for its next
// post. It returns how many recovered.
func (d *DB) RejudgeFailingEndpoints(ctx context.Context) (int, error) {
	rows, err := d.pool.Query(ctx, `SELECT org_id, id FROM inbound_endpoints WHERE failing_since IS NOT NULL`)
	if err != nil {
		return 0, err
	}
	type ep struct{ org, id uuid.UUID }
	eps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ep, error) {
		var e ep
		err := r.Scan(&e.org, &e.id)
		return e, err
	})
	if err != nil {
		return 0, err
	}
	recovered := 0
	for _, e := range eps {
		var changed bool
		err := d.inTx(ctx, func(tx pgx.Tx) (err error) {
			failing := true
			changed, err = endpointOutcome(ctx, tx, e.org, e.id, domain.OutcomeApplied, &failing)
			return err
		})
		if err != nil {
			return recovered, err
		}
		if changed {
			recovered++
		}
	}
	return recovered, nil
}
