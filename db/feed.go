package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// Event is an event of the outbox as the feed shows it: the envelope
// deliveries carry.
type Event struct {
	ID        uuid.UUID
	Type      string
	CreatedAt domain.Timestamp
	Data      domain.JSONObject
	// Entity is what the event is about; nil for events written before
	// events named it.
	Entity *domain.Entity
}

const eventColumns = `e.id, e.type, e.created_at, e.data, e.entity_type, e.entity_id`

func scanEvent(r pgx.Row) (Event, error) {
	var e Event
	var typ, id *string
	err := r.Scan(&e.ID, &e.Type, &e.CreatedAt, &e.Data, &typ, &id)
	if typ != nil && id != nil {
		e.Entity = &domain.Entity{Type: *typ, ID: *id}
	}
	return e, err
}

// EventFilter narrows the event feed.
type EventFilter struct {
	Type         string
	CreatedAfter *time.Time
}

// ListEvents lists the organisation's events, newest first.
func (d *DB) ListEvents(ctx context.Context, orgID uuid.UUID, f EventFilter, p Page) ([]Event, error) {
	c := newConds()
	c.add("e.org_id = ?", orgID)
	c.addIf(f.Type != "", "e.type = ?", f.Type)
	c.addIf(f.CreatedAfter != nil, "e.created_at > ?", f.CreatedAfter)
	return listPage(ctx, d.pool, `SELECT `+eventColumns+` FROM events e`, "events", "e", c, p, scanEvent)
}

// GetEvent returns one of the organisation's events.
func (d *DB) GetEvent(ctx context.Context, orgID, id uuid.UUID) (Event, error) {
	e, err := scanEvent(d.pool.QueryRow(ctx, `SELECT `+eventColumns+` FROM events e WHERE e.org_id = $1 AND e.id = $2`, orgID, id))
	return e, notFound(err, "event")
}

// EventReceipt is the receipt whose effect emitted one of the
// organisation's events (nil when no inbound post did).
func (d *DB) EventReceipt(ctx context.Context, orgID, id uuid.UUID) (*uuid.UUID, error) {
	var receipt *uuid.UUID
	err := d.pool.QueryRow(ctx, `SELECT receipt_id FROM events WHERE org_id = $1 AND id = $2`, orgID, id).Scan(&receipt)
	return receipt, notFound(err, "event")
}
