package db

import (
	"context"

	"github.com/google/uuid"
)

// The administration CLI names some records by id alone. These lookups find
// the organisation that owns one, so the command can then call the query
// scoped by that organisation like every other.

// EndpointOrg returns the organisation of an inbound endpoint.
func (d *DB) EndpointOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return d.ownerOrg(ctx, "inbound_endpoints", "endpoint", id)
}

// ReceiptOrg returns the organisation of an inbound receipt.
func (d *DB) ReceiptOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return d.ownerOrg(ctx, "inbound_receipts", "receipt", id)
}

// APIKeyOrg returns the organisation of an API key.
func (d *DB) APIKeyOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return d.ownerOrg(ctx, "api_keys", "API key", id)
}

// SubscriptionOrg returns the organisation of a webhook subscription.
func (d *DB) SubscriptionOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return d.ownerOrg(ctx, "webhook_subscriptions", "subscription", id)
}

// WebhookDeliveryOrg returns the organisation of a webhook delivery.
func (d *DB) WebhookDeliveryOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return d.ownerOrg(ctx, "webhook_deliveries", "delivery", id)
}

// ownerOrg reads org_id of the row of table with the id; table is one of the
// constants above, never input.
func (d *DB) ownerOrg(ctx context.Context, table, what string, id uuid.UUID) (uuid.UUID, error) {
	var org uuid.UUID
	err := d.pool.QueryRow(ctx, `SELECT org_id FROM `+table+` WHERE id = $1`, id).Scan(&org)
	return org, notFound(err, what)
}
