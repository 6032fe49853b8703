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

	// pacing holds the starts waiting for their slots (pace).
	pacing sync.WaitGroup
	// retry, set by Run, wakes the relay for another round after a round
	// or a paced start failed, sooner than the sweep.
	retry *retry
}

// RetryFirst is how soon the relay tries again after a round, or a paced
// start, failed: deliveries whose workflows could not be started (Temporal
// unreachable for a while) are started again within about this long of
// Temporal's return, rather than at the next sweep or notification. Each
// retry that fails again doubles the wait, up to the sweep.
const RetryFirst = time.Second

// retry schedules the relay's next round after a failure. Failures while a
// retry is already scheduled join it: many paced starts failing at once
// (Temporal away) are one failure, not many, so the wait doubles once per
// failed retry and at most one timer is pending.
type retry struct {
	mu       sync.Mutex
	failures int  // retries scheduled since the last round that succeeded
	pending  bool // a retry is scheduled and has not fired
	sweep    time.Duration
	wake     func()
}

// failed schedules a retry unless one is pending, and reports its wait
// (zero when it joined the pending one).
func (r *retry) failed() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending {
		return 0
	}
	r.pending = true
	r.failures++
	wait := RetryFirst
	for range min(r.failures-1, 16) {
		wait *= 2
	}
	wait = min(wait, r.sweep)
	time.AfterFunc(wait, r.fire)
	return wait
}

func (r *retry) fire() {
	r.mu.Lock()
	r.pending = false
	r.mu.Unlock()
	r.wake()
}

// succeeded starts the waits from RetryFirst again.
func (r *retry) succeeded() {
	r.mu.Lock()
	r.failures = 0
	r.mu.Unlock()
}

// batch is how many events or deliveries one round takes.
const batch = 500

// Run relays until ctx ends, reconnecting 5 s after a failure (the only
// other time ListenEvents returns). A round or a paced start that fails is
// tried again after RetryFirst, then at doubling waits up to the sweep.
func (o *Outbox) Run(ctx context.Context) {
	sweep := o.Sweep
	if sweep == 0 {
		sweep = 10 * time.Second
	}
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	o.retry = &retry{sweep: sweep, wake: notify}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			if _, err := o.Drain(ctx); err != nil && ctx.Err() == nil {
				o.Log.Warn("relaying events failed; retrying soon", zap.Error(err))
				o.retry.failed()
			} else if err == nil {
				o.retry.succeeded()
			}
		}
	}()
	notify()
	repeat(ctx, 5*time.Second, func() {
		if err := o.DB.ListenEvents(ctx, sweep, notify); err != nil && ctx.Err() == nil {
			o.Log.Warn("listening for events failed; retrying", zap.Error(err))
			notify()
		}
	})
	<-done
	o.pacing.Wait()
}

// Drain relays every waiting event and starts every waiting delivery, and
// reports how many deliveries it started.
func (o *Outbox) Drain(ctx context.Context) (int, error) {
	// One read first: most wakes (an attempt recorded) bring no event and
	// leave no delivery to admit.
	events, waiting, err := o.DB.RelayWork(ctx)
	if err != nil {
		return 0, err
	}
	for events {
		n, err := o.DB.RelayEvents(ctx, batch)
		if err != nil {
			return 0, err
		}
		waiting = waiting || n > 0
		events = n == batch
	}
	if !waiting {
		return 0, nil
	}
	started := 0
	for {
		// Claimed in a transaction of its own, which has committed: the
		// workflows start outside it.
		claimed, err := o.DB.ClaimWebhookDeliveries(ctx, batch)
		if err != nil || len(claimed) == 0 {
			return started, err
		}
		refs, later := due(claimed, time.Now())
		o.pace(ctx, later)
		ok, startErr := o.start(ctx, refs)
		bg := context.WithoutCancel(ctx)
		if err := o.DB.MarkWebhookDeliveriesStarted(bg, ok); err != nil {
			return started, err
		}
		started += len(ok)
		if startErr != nil {
			return started, errors.Join(startErr, o.DB.ReleaseWebhookDeliveries(bg, notStarted(refs, ok)))
		}
		if len(claimed) < batch {
			return started, nil
		}
	}
}

// due splits refs into those to start now and those whose subscription's
// rate gave them a later slot.
func due(refs []domain.WebhookDeliveryRef, now time.Time) (nowRefs, later []domain.WebhookDeliveryRef) {
	for _, r := range refs {
		if r.NotBefore.After(now) {
			later = append(later, r)
		} else {
			nowRefs = append(nowRefs, r)
		}
	}
	return nowRefs, later
}

// pace starts each of refs at its slot, in the background, and marks it
// started (or releases it, for the next round, when its start fails). Its
// claim lasts past its slot; a relay stopped meanwhile leaves it to
// another once the claim runs out. Starts are paced here, not by a delay
// Temporal keeps: the server fires delayed starts a second at a time, and
// a subscription's rate is finer than that.
func (o *Outbox) pace(ctx context.Context, refs []domain.WebhookDeliveryRef) {
	for _, r := range refs {
		o.pacing.Go(func() {
			t := time.NewTimer(time.Until(r.NotBefore))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			bg := context.WithoutCancel(ctx)
			ok, err := o.start(ctx, []domain.WebhookDeliveryRef{r})
			if err == nil {
				err = o.DB.MarkWebhookDeliveriesStarted(bg, ok)
			} else {
				err = errors.Join(err, o.DB.ReleaseWebhookDeliveries(bg, []uuid.UUID{r.ID}))
			}
			if err != nil && ctx.Err() == nil {
				o.Log.Warn("starting a paced delivery failed; the next round takes it", zap.Stringer("delivery_id", r.ID), zap.Error(err))
				if o.retry != nil { // nil when Drain is called without Run
					o.retry.failed()
				}
			}
		})
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
