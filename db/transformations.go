package db

import (
	"context"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SkippedByTransformation is the last_error of a delivery its
// subscription's transformation skipped (answered null for its event).
func SkippedByTransformation(version int) string {
	return "skipped by the subscription's transformation (version " + strconv.Itoa(version) + ")"
}

// SkipWebhookDeliveryByTransformation ends a delivery without a request,
// because version of its subscription's transformation answered null for
// its event: skipped, as one support skipped, which is over and not a
// failure. No attempt is recorded and its subscription's health is not
// touched; its place among the attempts at once is given back, and the
// relays are woken (with per_entity ordering, its entity's later
// deliveries go on).
func (d *DB) SkipWebhookDeliveryByTransformation(ctx context.Context, orgID, deliveryID uuid.UUID, version int) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'skipped', next_attempt_at = NULL, last_status_code = NULL,
			last_error = $3, transformation_version = $4, body_sent = NULL, updated_at = now()
			WHERE org_id = $1 AND id = $2`, orgID, deliveryID, SkippedByTransformation(version), version)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound(pgx.ErrNoRows, "delivery")
		}
		if _, err := releaseInFlight(ctx, tx, orgID, deliveryID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+eventsChannel+`', '')`)
		return err
	})
}
