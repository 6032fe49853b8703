package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/tracing/w3c"
)

// LISTEN/NOTIFY channels: eventsChannel wakes the outbox relay;
// recordsChannel (payload: an organisation id) says a load of records
// queued wakes (record_wakes) for the workflows waiting for them.
const (
	eventsChannel  = "commerce_events"
	recordsChannel = "commerce_records"
)

// emit writes an event to the outbox in the caller's transaction, so the
// event exists exactly when the change it reports does, and wakes the relay
// when the transaction commits. The event is made by its domain.EventKind,
// so its data is its type's, and it names the entity it is about. It keeps
// the span that wrote it (none with tracing off), so that its deliveries
// join the same trace.
func emit(ctx context.Context, q querier, orgID uuid.UUID, e domain.Event) error {
	return emitFor(ctx, q, orgID, nil, e)
}

// emitFor is emit of an event about a receipt (its failure), which the
// receipt's trace lists: receiptID, when given, is the event's receipt_id
// (otherwise the column's default, the receipt an inbound apply step set).
//
// The event's time is when it is written (clock_timestamp), not when its
// transaction began: a write holds its entity's row lock until it
// commits, so the events of one entity are in the order they committed,
// the order the relay sees them and per-entity ordering keeps.
func emitFor(ctx context.Context, q querier, orgID uuid.UUID, receiptID *uuid.UUID, e domain.Event) error {
	id := NewID()
	entity := e.Entity
	if entity.ID == "" {
		entity.ID = id.String() // a products batch is its own entity
	}
	if receiptID != nil {
		_, err := q.Exec(ctx, `
			WITH e AS (INSERT INTO events (id, org_id, type, data, receipt_id, trace_parent, entity_type, entity_id, created_at)
			           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, clock_timestamp()))
			SELECT pg_notify('`+eventsChannel+`', '')`, id, orgID, e.Type, e.Data, *receiptID, w3c.Parent(ctx), entity.Type, entity.ID)
		return err
	}
	_, err := q.Exec(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data, trace_parent, entity_type, entity_id, created_at)
		           VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()))
		SELECT pg_notify('`+eventsChannel+`', '')`, id, orgID, e.Type, e.Data, w3c.Parent(ctx), entity.Type, entity.ID)
	return err
}

// ListenRecords calls fn on every notification that wakes were queued
// (see recordsChannel), and after every interval without one, until ctx
// ends. It holds one connection.
func (d *DB) ListenRecords(ctx context.Context, interval time.Duration, fn func()) error {
	return d.listen(ctx, recordsChannel, interval, func(string) { fn() }, fn)
}

// listen holds one connection listening on channel, calling onNotify with
// each notification's payload and onIdle after every interval without one,
// until ctx ends (nil) or the connection fails (the error).
func (d *DB) listen(ctx context.Context, channel string, interval time.Duration, onNotify func(string), onIdle func()) error {
	return d.listenReady(ctx, channel, interval, func() {}, onNotify, onIdle)
}

// listenReady is listen, calling ready once the connection listens.
func (d *DB) listenReady(ctx context.Context, channel string, interval time.Duration, ready func(), onNotify func(string), onIdle func()) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	ready()
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+channel) }()
	for {
		wctx, cancel := context.WithTimeout(ctx, interval)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			onNotify(n.Payload)
		case errors.Is(err, context.DeadlineExceeded):
			onIdle()
		default:
			return err
		}
	}
}
