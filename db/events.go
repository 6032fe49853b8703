package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// LISTEN/NOTIFY channels: eventsChannel wakes the outbox relay;
// recordsChannel (payload: an organisation id) says records were created
// that parked inbound posts or waiting matches may be waiting for.
const (
	eventsChannel  = "commerce_events"
	recordsChannel = "commerce_records"
)

// emit writes an event to the outbox in the caller's transaction, so the
// event exists exactly when the change it reports does, and wakes the relay
// when the transaction commits.
func emit(ctx context.Context, q querier, orgID uuid.UUID, eventType string, data any) error {
	_, err := q.Exec(ctx, `
		WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES ($1, $2, $3, $4))
		SELECT pg_notify('`+eventsChannel+`', '')`, NewID(), orgID, eventType, data)
	return err
}

// ListenRecords calls fn with the organisation of every notification that
// records were created (see recordsChannel), and with nil after every
// interval without one, until ctx ends. It holds one connection.
func (d *DB) ListenRecords(ctx context.Context, interval time.Duration, fn func(org *uuid.UUID)) error {
	return d.listen(ctx, recordsChannel, interval, func(payload string) {
		if org, err := uuid.Parse(payload); err == nil {
			fn(&org)
		}
	}, func() { fn(nil) })
}

// listen holds one connection listening on channel, calling onNotify with
// each notification's payload and onIdle after every interval without one,
// until ctx ends (nil) or the connection fails (the error).
func (d *DB) listen(ctx context.Context, channel string, interval time.Duration, onNotify func(string), onIdle func()) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
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
