package domain

import (
	"cmp"
	"time"
)

// The admission of webhook deliveries (docs/webhooks.md#delivery-controls):
// a delivery's attempt starts only when its subscription lets it go, so that
// the subscription's rate, its cap on attempts at once, its ordering and its
// failing spells hold whatever the number of workers and relays. The rules
// are here, over a subscription's state as read; db reads that state under
// the subscription's lock and carries out the plan it is given.
const (
	// ProbeFirst is how long after a subscription becomes failing its
	// first probe is due; each probe that fails doubles the wait, up to
	// ProbeMax.
	ProbeFirst = time.Minute
	ProbeMax   = time.Hour
	// InFlightLease is how long an admitted attempt holds its place after
	// its start at most: an attempt takes 10 seconds at most, and a place
	// whose worker was killed mid-attempt is given back after it.
	InFlightLease = 2 * time.Minute
	// ClaimLease is how long a relay's claim on deliveries to start, or
	// wakes to send, holds them from other relays (a delivery with a start
	// slot, from its slot): longer than a round takes (a batch of starts
	// takes milliseconds), short enough that a relay that stopped holding
	// one (its worker killed) delays them little. A relay still starting
	// when its lease runs out may meet another that claimed the same
	// deliveries: starts and wakes are idempotent, so nothing doubles.
	ClaimLease = 10 * time.Second
	// PlaceWaitMax is the longest a retry waits for a place among
	// max_in_flight before it asks again.
	PlaceWaitMax = time.Minute
)

// The orderings of a subscription's deliveries
// (docs/webhooks.md#ordering).
const (
	OrderingNone      = "none"
	OrderingPerEntity = "per_entity"
)

// AwaitingAdmission are the statuses of a delivery whose workflow waits to
// be admitted: pending, or held by a failing spell. The index a relay's
// round reads them from (webhook_deliveries_awaiting, migration 027) holds
// the deliveries in these statuses: a status added here needs it added
// there.
var AwaitingAdmission = []WebhookStatus{WebhookPending, WebhookHeld}

// EntityBlockers are the statuses of an earlier delivery (in event order)
// of the same entity that keep a later one back under ordering: with
// per_entity, one not delivered yet (pending, failed or held), so the
// earlier one in flight or waiting for its retry holds its entity alone;
// with none (or any other), none. The index that finds them
// (webhook_deliveries_entity_order, migration 030) holds the deliveries in
// these statuses: a status added here needs it added there, or the
// admission's statement reads without it.
func EntityBlockers(ordering string) []WebhookStatus {
	if ordering != OrderingPerEntity {
		return nil
	}
	return []WebhookStatus{WebhookPending, WebhookFailed, WebhookHeld}
}

// RecoveryReleases are the statuses of the deliveries that go once their
// subscription recovers: the held ones, and the failed ones at their
// retry. webhook.subscription.recovered counts them.
var RecoveryReleases = []WebhookStatus{WebhookFailed, WebhookHeld}

// StatusChange moves a delivery whose status is one of From to To; one in
// any other status stays as it is.
type StatusChange struct {
	From []WebhookStatus
	To   WebhookStatus
}

// Apply is the status a delivery in status has after the change.
func (c StatusChange) Apply(status WebhookStatus) WebhookStatus {
	for _, f := range c.From {
		if f == status {
			return c.To
		}
	}
	return status
}

// The status changes of admission.
var (
	// HoldWaiting: a failing spell holds the deliveries not admitted yet,
	// with no attempt spent. One admitted already (its start waiting for
	// its slot) goes as admitted, like one whose attempt is under way.
	HoldWaiting = StatusChange{From: []WebhookStatus{WebhookPending}, To: WebhookHeld}
	// ReleaseWaiting: a held delivery admitted goes as the first attempt
	// it has not spent.
	ReleaseWaiting = StatusChange{From: []WebhookStatus{WebhookHeld}, To: WebhookPending}
	// HoldRetry: a failed delivery whose retry comes while its
	// subscription is failing is held, spending no attempt.
	HoldRetry = StatusChange{From: []WebhookStatus{WebhookFailed}, To: WebhookHeld}
	// ReleaseRetry: a held retry that goes is a failed delivery being
	// tried again.
	ReleaseRetry = StatusChange{From: []WebhookStatus{WebhookHeld}, To: WebhookFailed}
)

// AdmissionState is a subscription as admission reads it, locked: its
// settings, and where it stands at Now.
type AdmissionState struct {
	Active bool
	// Rate is how many deliveries may start in any one second; nil: no
	// limit.
	Rate        *int
	MaxInFlight int
	Ordering    string
	Failing     bool
	// ProbeAt is when a failing subscription's next probe is due.
	ProbeAt *time.Time
	// NextSlot is the subscription's next free start slot under its rate.
	NextSlot *time.Time
	// InFlight counts the attempts holding a place now (leases that have
	// not run out), the asking delivery's own left out.
	InFlight int
	Now      time.Time
}

// Free is how many more attempts may start: max_in_flight less those in
// flight, none when it is full.
func (s AdmissionState) Free() int { return max(s.MaxInFlight-s.InFlight, 0) }

// ProbeNow reports whether a probe goes now: the subscription is failing,
// its probe is due, and nothing is in flight (neither an earlier probe nor
// an attempt admitted before the spell, whose outcome may end it).
func (s AdmissionState) ProbeNow() bool {
	return s.Failing && s.ProbeAt != nil && !s.ProbeAt.After(s.Now) && s.InFlight == 0
}

// Slots are the start slots of k attempts admitted together, oldest
// first, and the subscription's next slot after them. With a rate r, the
// i-th (from 0) starts at max(Now, NextSlot) + i/r and the next slot is
// k/r after the first; with none, both are nil: each starts at once, and
// there is no slot to move.
func (s AdmissionState) Slots(k int) (starts []time.Time, next *time.Time) {
	if s.Rate == nil {
		return nil, nil
	}
	slot := s.Now
	if s.NextSlot != nil && s.NextSlot.After(slot) {
		slot = *s.NextSlot
	}
	starts = make([]time.Time, k)
	for i := range starts {
		starts[i] = slot
		slot = slot.Add(time.Second / time.Duration(*s.Rate))
	}
	return starts, &slot
}

// Places are what admitted attempts take of their subscription.
type Places struct {
	// Leases say until when each holds its place among max_in_flight:
	// InFlightLease after its start.
	Leases []time.Time
	// Probe says the attempt is the subscription's probe.
	Probe bool
	// NextSlot is the subscription's next free start slot after theirs;
	// nil leaves it (no rate).
	NextSlot *time.Time
	// ProbeAt is when the next probe is due, a lease after this one's
	// start, so that a probe whose worker died is followed by another;
	// nil leaves it (not a probe).
	ProbeAt *time.Time
}

// places are what attempts starting at starts (nil: k at once) take.
func (s AdmissionState) places(k int, starts []time.Time, next *time.Time, probe bool) *Places {
	p := &Places{Leases: make([]time.Time, k), Probe: probe, NextSlot: next}
	for i := range p.Leases {
		p.Leases[i] = s.startAt(starts, i).Add(InFlightLease)
	}
	if probe {
		at := s.Now.Add(InFlightLease)
		p.ProbeAt = &at
	}
	return p
}

// startAt is when the i-th of attempts starting at starts starts: at its
// slot, or now when there is none.
func (s AdmissionState) startAt(starts []time.Time, i int) time.Time {
	if starts == nil {
		return s.Now
	}
	return starts[i]
}

// ClaimPlan is what a relay does with a subscription's deliveries waiting
// to be admitted, in one round.
type ClaimPlan struct {
	// Hold, when set, is applied first to those not admitted yet.
	Hold *StatusChange
	// Admit is how many of them go at most, oldest first, leaving out those
	// an earlier delivery of their entity keeps back (EntityBlockers).
	Admit int
	// Probe says the one admitted is the subscription's probe.
	Probe bool
}

// Claim is what a relay with room for room more deliveries in its round
// does with the subscription's waiting ones:
//
//   - switched off: admits them, up to room; their workflows end them at
//     once, without an attempt;
//   - failing: holds those not admitted yet (HoldWaiting), and admits the
//     oldest alone, as the probe, when one goes now (ProbeNow);
//   - healthy: admits as many as are free (Free).
func (s AdmissionState) Claim(room int) ClaimPlan {
	switch {
	case !s.Active:
		return ClaimPlan{Admit: max(room, 0)}
	case s.Failing:
		hold := HoldWaiting
		p := ClaimPlan{Hold: &hold}
		if s.ProbeNow() {
			p.Admit, p.Probe = min(1, max(room, 0)), true
		}
		return p
	}
	return ClaimPlan{Admit: min(s.Free(), max(room, 0))}
}

// Admitted is what k deliveries a relay admitted together take.
type Admitted struct {
	// Starts are their start slots, oldest first; nil: each starts at
	// once.
	Starts []time.Time
	// Claims say until when the relay's claim holds each from other
	// relays: ClaimLease after its start, for the relay starts its
	// workflow at its slot.
	Claims []time.Time
	// Release is applied to each: a held one goes again.
	Release StatusChange
	// Places are the places they take; nil: none (a switched-off
	// subscription's deliveries make no attempt).
	Places *Places
}

// Admit is what k deliveries admitted by Claim (probe: the one is the
// probe) take: with a rate, each its own start slot (Slots), and the next
// slot moves past them; each a place until InFlightLease after its start.
func (s AdmissionState) Admit(k int, probe bool) Admitted {
	a := Admitted{Claims: make([]time.Time, k), Release: ReleaseWaiting}
	var next *time.Time
	if s.Active {
		a.Starts, next = s.Slots(k)
	}
	for i := range a.Claims {
		a.Claims[i] = s.startAt(a.Starts, i).Add(ClaimLease)
	}
	if s.Active {
		a.Places = s.places(k, a.Starts, next, probe)
	}
	return a
}

// RetryPlan is the answer to a delivery's retry (or resend) asking to go,
// and what the answer changes.
type RetryPlan struct {
	Admission Admission
	// Change, when set, is applied to the delivery.
	Change *StatusChange
	// Places are the place it takes when it goes; nil: none.
	Places *Places
}

// Retry answers whether a delivery in status may make its automatic retry
// now (manual: support's resend), having asked tries times before:
//
//   - a subscription switched off, or (a retry) a delivery neither failed
//     nor held (skipped by support meanwhile): go at once, and the attempt
//     ends it;
//   - failing: a resend goes (support asked for it); a retry goes as the
//     probe when one goes now (ProbeNow), and is otherwise held
//     (HoldRetry), waiting RetryHeldWait before it asks again;
//   - healthy and full: wait PlaceWait(tries) and ask again;
//   - otherwise go, at a start slot of the rate (Slots).
//
// One that goes takes a place as a first attempt does, and is no longer
// held (ReleaseRetry).
func (s AdmissionState) Retry(status WebhookStatus, manual bool, tries int) RetryPlan {
	if !s.Active || (!manual && status != WebhookFailed && status != WebhookHeld) {
		return RetryPlan{Admission: Admission{Go: true, At: s.Now}}
	}
	probe := false
	switch {
	case s.Failing && manual:
	case s.ProbeNow():
		probe = true
	case s.Failing:
		hold := HoldRetry
		return RetryPlan{Admission: Admission{Held: true, Wait: s.RetryHeldWait()}, Change: &hold}
	case s.Free() == 0:
		return RetryPlan{Admission: Admission{Wait: PlaceWait(tries)}}
	}
	starts, next := s.Slots(1)
	release := ReleaseRetry
	return RetryPlan{Admission: Admission{Go: true, At: s.startAt(starts, 0)}, Change: &release,
		Places: s.places(1, starts, next, probe)}
}

// RetryHeldWait is how long a retry held by a failing spell waits before
// it asks again: until ProbeFirst after the next probe (so the probe's
// outcome is known), at least ProbeFirst, at most ProbeMax.
func (s AdmissionState) RetryHeldWait() time.Duration {
	wait := ProbeFirst
	if s.ProbeAt != nil && s.ProbeAt.Sub(s.Now)+ProbeFirst > wait {
		wait = s.ProbeAt.Sub(s.Now) + ProbeFirst
	}
	return min(wait, ProbeMax)
}

// PlaceWait is how long a retry that found no place waits before it asks
// again, having asked tries times before: 1 second, doubling at each try,
// up to PlaceWaitMax.
func PlaceWait(tries int) time.Duration {
	return min(time.Second<<min(max(tries, 0), 6), PlaceWaitMax)
}

// HealthState is a subscription's health as kept: its run of failed
// attempts, its failing spell and its probe schedule.
type HealthState struct {
	ConsecutiveFailures int
	// FailingSince is when the failing spell began; nil: healthy.
	FailingSince *time.Time
	// ProbeInterval is the wait before the next probe after a failed one;
	// 0 when not failing.
	ProbeInterval time.Duration
	// ProbeAt is when the next probe is due; nil when not failing.
	ProbeAt           *time.Time
	LastFailureStatus *int
	LastFailureError  *string
}

// AttemptOutcome is how an attempt went, as its subscription's health
// counts it.
type AttemptOutcome struct {
	Succeeded bool
	// Probe says the attempt was the subscription's probe.
	Probe bool
	// StatusCode and Error are a failed attempt's answer (nil: none).
	StatusCode *int
	Error      *string
}

// Failing reports whether the subscription is in a failing spell.
func (h HealthState) Failing() bool { return h.FailingSince != nil }

// ChangedBy reports whether an attempt that went so changes h: every
// failure does; a success of a healthy subscription with no failure in a
// row (the common case) changes nothing, and needs no lock that
// deliveries to the subscription would queue behind.
func (h HealthState) ChangedBy(succeeded bool) bool {
	return !succeeded || h.ConsecutiveFailures > 0 || h.FailingSince != nil
}

// After is h after an attempt that went as o, recorded at now:
//
//   - a success ends the run and any failing spell, with its probes; the
//     last failure is kept for the record;
//   - a failure counts one more in the run and is the last failure; the
//     SubscriptionFailingAfter-th in a row of a healthy subscription makes
//     it failing since now, with its first probe ProbeFirst later;
//   - a failed probe doubles the wait for the next one, up to ProbeMax.
func (h HealthState) After(o AttemptOutcome, now time.Time) HealthState {
	if o.Succeeded {
		h.ConsecutiveFailures, h.FailingSince, h.ProbeInterval, h.ProbeAt = 0, nil, 0, nil
		return h
	}
	h.ConsecutiveFailures++
	h.LastFailureStatus, h.LastFailureError = o.StatusCode, o.Error
	switch {
	case h.FailingSince == nil && h.ConsecutiveFailures >= SubscriptionFailingAfter:
		h.FailingSince = &now
		h.ProbeInterval = ProbeFirst
	case h.FailingSince != nil && o.Probe:
		h.ProbeInterval = min(cmp.Or(h.ProbeInterval, ProbeFirst)*2, ProbeMax)
	default:
		return h
	}
	at := now.Add(h.ProbeInterval)
	h.ProbeAt = &at
	return h
}
