package relay

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/tracing/w3c"
	"github.com/commerce-integration/commerce/workflows"
)

// Outbox relays the events outbox to webhook deliveries: for each event it
// records one delivery per matching subscription, then starts each
// delivery's workflow, webhook/<delivery_id>. It wakes on the NOTIFY every
// event sends and sweeps on its own every Sweep, so an event written while
// no relay listened, or a delivery whose workflow a crash kept from
// starting, is picked up. Recording and starting are both idempotent: a
// crash anywhere loses nothing, and a repeat doubles nothing. Deliveries are
// claimed (db.ClaimWebhookDeliveries) before their workflows start, so two
// relays do not start the same ones at once, and no transaction is open
// while Temporal is called.
type Outbox struct {
	DB        *db.DB
	Workflows *workflows.Client
	Log       *zap.Logger
	// Sweep is how often the relay looks without a notification (10 s
	// when zero).
	Sweep time.Duration
	// Starts is how many workflow starts run at once (8 when zero).
	Starts int
}

// batch is how many events or deliveries one round takes.
const batch = 500

// Run relays until ctx ends, reconnecting 5 s after a failure (the only
// other time ListenEvents returns).
func (o *Outbox) Run(ctx context.Context) {
	sweep := o.Sweep
	if sweep == 0 {
		sweep = 10 * time.Second
	}
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			if _, err := o.Drain(ctx); err != nil && ctx.Err() == nil {
				o.Log.Warn("relaying events failed; retrying at the next sweep", zap.Error(err))
			}
		}
	}()
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	notify()
	repeat(ctx, 5*time.Second, func() {
		if err := o.DB.ListenEvents(ctx, sweep, notify); err != nil && ctx.Err() == nil {
			o.Log.Warn("listening for events failed; retrying", zap.Error(err))
			notify()
		}
	})
	<-done
}

// Drain relays every waiting event and starts every waiting delivery, and
// reports how many deliveries it started.
func (o *Outbox) Drain(ctx context.Context) (int, error) {
	for {
		n, err := o.DB.RelayEvents(ctx, batch)
		if err != nil {
			return 0, err
		}
		if n < batch {
			break
		}
	}
	started := 0
	for {
		// Claimed in a transaction of its own, which has committed: the
		// workflows start outside it.
		refs, err := o.DB.ClaimWebhookDeliveries(ctx, batch)
		if err != nil || len(refs) == 0 {
			return started, err
		}
		ok, startErr := o.start(ctx, refs)
		bg := context.WithoutCancel(ctx)
		if err := o.DB.MarkWebhookDeliveriesStarted(bg, ok); err != nil {
			return started, err
		}
		started += len(ok)
		if startErr != nil {
			return started, errors.Join(startErr, o.DB.ReleaseWebhookDeliveries(bg, notStarted(refs, ok)))
		}
		if len(refs) < batch {
			return started, nil
		}
	}
}

// notStarted is the ids of refs that are not in started.
func notStarted(refs []domain.WebhookDeliveryRef, started []uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	for _, r := range refs {
		if !slices.Contains(started, r.ID) {
			out = append(out, r.ID)
		}
	}
	return out
}

// start starts the workflows of refs, a few at a time, and returns the ids
// of those that now exist (started now, or before) and the first error.
func (o *Outbox) start(ctx context.Context, refs []domain.WebhookDeliveryRef) ([]uuid.UUID, error) {
	workers := o.Starts
	if workers == 0 {
		workers = 8
	}
	var mu sync.Mutex
	var ok []uuid.UUID
	var firstErr error
	jobs := make(chan domain.WebhookDeliveryRef)
	var wg sync.WaitGroup
	for range min(workers, len(refs)) {
		wg.Go(func() {
			for ref := range jobs {
				// The start joins the trace of the span that wrote the event.
				err := o.Workflows.StartWebhookDelivery(w3c.WithParent(ctx, ref.TraceParent), ref)
				mu.Lock()
				if err == nil {
					ok = append(ok, ref.ID)
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	for _, ref := range refs {
		jobs <- ref
	}
	close(jobs)
	wg.Wait()
	return ok, firstErr
}
