package domain

import (
	"slices"
	"testing"
	"time"
)

var admissionNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// nowPlus is the time d after admissionNow.
func nowPlus(d time.Duration) *time.Time { return new(admissionNow.Add(d)) }

// healthy is an active subscription with room, no rate and no ordering.
func healthy() AdmissionState {
	return AdmissionState{Active: true, MaxInFlight: 10, Ordering: OrderingNone, Now: admissionNow}
}

// With a rate r, the k-th delivery admitted together (from 0) starts at
// max(now, next slot) + k/r, and the next slot moves past the last; with
// none, there is no slot: each starts at once.
func TestSlotsAreOneOverTheRateApartFromTheNextSlot(t *testing.T) {
	for _, c := range []struct {
		name     string
		rate     *int
		nextSlot *time.Time
		k        int
		starts   []time.Duration // from now
		next     *time.Duration
	}{
		{name: "no rate, no slot", k: 3},
		{name: "no rate ignores an old next slot", nextSlot: nowPlus(5 * time.Second), k: 2},
		{name: "4/s from now", rate: new(4), k: 3, starts: []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond},
			next: new(750 * time.Millisecond)},
		{name: "from a next slot ahead", rate: new(2), nextSlot: nowPlus(3 * time.Second), k: 2,
			starts: []time.Duration{3 * time.Second, 3500 * time.Millisecond}, next: new(4 * time.Second)},
		{name: "a next slot passed starts now", rate: new(10), nextSlot: nowPlus(-time.Minute), k: 2,
			starts: []time.Duration{0, 100 * time.Millisecond}, next: new(200 * time.Millisecond)},
		{name: "1/3 s in whole nanoseconds", rate: new(3), k: 2, starts: []time.Duration{0, 333333333}, next: new(time.Duration(666666666))},
		{name: "1000/s", rate: new(1000), k: 1, starts: []time.Duration{0}, next: new(time.Millisecond)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := healthy()
			s.Rate, s.NextSlot = c.rate, c.nextSlot
			starts, next := s.Slots(c.k)
			var want []time.Time
			for _, d := range c.starts {
				want = append(want, admissionNow.Add(d))
			}
			if !slices.Equal(starts, want) {
				t.Fatalf("starts %v, want %v", starts, want)
			}
			switch {
			case c.next == nil && next != nil:
				t.Fatalf("next slot %v, want none", next)
			case c.next != nil && (next == nil || !next.Equal(admissionNow.Add(*c.next))):
				t.Fatalf("next slot %v, want now+%v", next, *c.next)
			}
		})
	}
}

// A claim lasts until ClaimLease after the delivery's start slot (the relay
// starts it then), and its place until InFlightLease after it; the next
// slot the subscription keeps is past the last one admitted.
func TestAdmittedDeliveriesHoldTheirClaimAndPlaceFromTheirSlot(t *testing.T) {
	s := healthy()
	s.Rate, s.NextSlot = new(2), nowPlus(time.Second)
	a := s.Admit(2, false)
	wantStarts := []time.Time{admissionNow.Add(time.Second), admissionNow.Add(1500 * time.Millisecond)}
	if !slices.Equal(a.Starts, wantStarts) {
		t.Fatalf("starts %v, want %v", a.Starts, wantStarts)
	}
	if want := []time.Time{wantStarts[0].Add(10 * time.Second), wantStarts[1].Add(10 * time.Second)}; !slices.Equal(a.Claims, want) {
		t.Fatalf("claims until %v, want %v", a.Claims, want)
	}
	if a.Places == nil {
		t.Fatal("admitted deliveries take no places")
	}
	if want := []time.Time{wantStarts[0].Add(2 * time.Minute), wantStarts[1].Add(2 * time.Minute)}; !slices.Equal(a.Places.Leases, want) {
		t.Fatalf("leases until %v, want %v", a.Places.Leases, want)
	}
	if a.Places.NextSlot == nil || !a.Places.NextSlot.Equal(admissionNow.Add(2*time.Second)) || a.Places.Probe || a.Places.ProbeAt != nil {
		t.Fatalf("places %+v, want the next slot at now+2s and no probe", *a.Places)
	}
	// Without a rate each starts now: no slot, and none to move.
	b := healthy().Admit(1, false)
	if b.Starts != nil || !b.Claims[0].Equal(admissionNow.Add(ClaimLease)) || !b.Places.Leases[0].Equal(admissionNow.Add(InFlightLease)) ||
		b.Places.NextSlot != nil {
		t.Fatalf("without a rate: %+v, places %+v", b, *b.Places)
	}
}

// A relay admits as many as max_in_flight less those in flight, within its
// round's room; none when the subscription is full. A switched-off
// subscription admits all its waiting deliveries (their workflows end
// them without an attempt), taking no places.
func TestPlacesAreMaxInFlightLessThoseInFlight(t *testing.T) {
	for _, c := range []struct {
		name                  string
		active                bool
		maxInFlight, inFlight int
		room                  int
		admit                 int
	}{
		{"all free", true, 10, 0, 100, 10},
		{"less those in flight", true, 10, 3, 100, 7},
		{"within the round's room", true, 10, 3, 2, 2},
		{"full", true, 10, 10, 100, 0},
		{"over full (a lowered cap)", true, 5, 8, 100, 0},
		{"one place", true, 1, 0, 100, 1},
		{"switched off admits all to end them", false, 1, 5, 50, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := healthy()
			s.Active, s.MaxInFlight, s.InFlight = c.active, c.maxInFlight, c.inFlight
			p := s.Claim(c.room)
			if p.Admit != c.admit || p.Hold != nil || p.Probe {
				t.Fatalf("plan %+v, want %d admitted, none held, no probe", p, c.admit)
			}
		})
	}
	off := healthy()
	off.Active, off.Rate = false, new(1)
	if a := off.Admit(3, false); a.Places != nil || a.Starts != nil || len(a.Claims) != 3 {
		t.Fatalf("a switched-off subscription's admitted: %+v; want no places, no slots, a claim each", a)
	}
}

// A probe goes only when the subscription is failing, its probe is due
// (its time reached) and nothing is in flight.
func TestAProbeGoesOnlyWhenDueAndNothingIsInFlight(t *testing.T) {
	for _, c := range []struct {
		name     string
		failing  bool
		probeAt  *time.Time
		inFlight int
		want     bool
	}{
		{"due, nothing in flight", true, nowPlus(-time.Second), 0, true},
		{"due this instant", true, nowPlus(0), 0, true},
		{"not due yet", true, nowPlus(time.Second), 0, false},
		{"due, an attempt in flight", true, nowPlus(-time.Minute), 1, false},
		{"no probe scheduled", true, nil, 0, false},
		{"healthy", false, nowPlus(-time.Minute), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := healthy()
			s.Failing, s.ProbeAt, s.InFlight = c.failing, c.probeAt, c.inFlight
			if got := s.ProbeNow(); got != c.want {
				t.Fatalf("ProbeNow %v, want %v", got, c.want)
			}
		})
	}
}

// A failing subscription holds its waiting deliveries not admitted yet
// (pending becomes held) and admits none but the probe, alone, whose
// place's lease pushes the next probe past it.
func TestAFailingSubscriptionHoldsItsWaitingDeliveriesAndAdmitsOnlyTheProbe(t *testing.T) {
	for _, c := range []struct {
		name     string
		probeAt  *time.Time
		inFlight int
		admit    int
	}{
		{"the probe not due", nowPlus(time.Minute), 0, 0},
		{"the probe due", nowPlus(-time.Second), 0, 1},
		{"the probe due, an attempt in flight", nowPlus(-time.Second), 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := healthy()
			s.Failing, s.ProbeAt, s.InFlight = true, c.probeAt, c.inFlight
			p := s.Claim(100)
			if p.Hold == nil || p.Hold.Apply(WebhookPending) != WebhookHeld || p.Hold.Apply(WebhookFailed) != WebhookFailed {
				t.Fatalf("hold %+v, want pending held and nothing else", p.Hold)
			}
			if p.Admit != c.admit || p.Probe != (c.admit == 1) {
				t.Fatalf("plan %+v, want %d admitted, as the probe when one", p, c.admit)
			}
		})
	}
	s := healthy()
	s.Failing, s.ProbeAt = true, nowPlus(-time.Second)
	a := s.Admit(1, true)
	if !a.Places.Probe || a.Places.ProbeAt == nil || !a.Places.ProbeAt.Equal(admissionNow.Add(2*time.Minute)) {
		t.Fatalf("the probe's places %+v, want a probe's lease and the next probe at now+2m", *a.Places)
	}
	if a.Release.Apply(WebhookHeld) != WebhookPending {
		t.Fatalf("a held delivery admitted reads %s, want pending", a.Release.Apply(WebhookHeld))
	}
	// Switched off comes first: nothing is held, all go to be ended.
	s.Active = false
	if p := s.Claim(7); p.Hold != nil || p.Admit != 7 {
		t.Fatalf("a switched-off failing subscription: %+v, want all admitted, none held", p)
	}
}

// A retry (or resend) asks before its attempt: a manual resend goes while
// the subscription is failing; a retry of a failed delivery is held with a
// wait that reaches past the next probe, unless it can be the probe; a
// full subscription makes it wait 1 s, doubling at each try, up to a
// minute.
func TestARetryIsAdmittedAsItsSubscriptionAllows(t *testing.T) {
	for _, c := range []struct {
		name   string
		state  func(*AdmissionState)
		status WebhookStatus
		manual bool
		tries  int
		want   Admission
		change *StatusChange
		places bool
		probe  bool
	}{
		{name: "healthy goes now", status: WebhookFailed, want: Admission{Go: true, At: admissionNow},
			change: &ReleaseRetry, places: true},
		{name: "healthy goes at its slot", state: func(s *AdmissionState) { s.Rate, s.NextSlot = new(2), nowPlus(3*time.Second) },
			status: WebhookHeld, want: Admission{Go: true, At: admissionNow.Add(3 * time.Second)}, change: &ReleaseRetry, places: true},
		{name: "switched off goes to be ended", state: func(s *AdmissionState) { s.Active, s.Failing, s.InFlight = false, true, 10 },
			status: WebhookFailed, want: Admission{Go: true, At: admissionNow}},
		{name: "a skipped delivery's retry goes to find it ended", state: func(s *AdmissionState) { s.Failing = true },
			status: WebhookSkipped, want: Admission{Go: true, At: admissionNow}},
		{name: "a manual resend goes while failing", state: func(s *AdmissionState) { s.Failing, s.ProbeAt = true, nowPlus(time.Hour) },
			status: WebhookSucceeded, manual: true, want: Admission{Go: true, At: admissionNow}, change: &ReleaseRetry, places: true},
		{name: "failing holds a failed retry past the next probe", state: func(s *AdmissionState) { s.Failing, s.ProbeAt = true, nowPlus(2*time.Minute) },
			status: WebhookFailed, want: Admission{Held: true, Wait: 3 * time.Minute}, change: &HoldRetry},
		{name: "failing with the probe passed holds a minute", state: func(s *AdmissionState) { s.Failing, s.ProbeAt, s.InFlight = true, nowPlus(-time.Minute), 1 },
			status: WebhookHeld, want: Admission{Held: true, Wait: time.Minute}, change: &HoldRetry},
		{name: "failing with no probe scheduled holds a minute", state: func(s *AdmissionState) { s.Failing = true },
			status: WebhookFailed, want: Admission{Held: true, Wait: time.Minute}, change: &HoldRetry},
		{name: "failing holds at most an hour", state: func(s *AdmissionState) { s.Failing, s.ProbeAt = true, nowPlus(time.Hour) },
			status: WebhookFailed, want: Admission{Held: true, Wait: time.Hour}, change: &HoldRetry},
		{name: "failing, the probe due: the retry is the probe", state: func(s *AdmissionState) { s.Failing, s.ProbeAt = true, nowPlus(-time.Second) },
			status: WebhookHeld, want: Admission{Go: true, At: admissionNow}, change: &ReleaseRetry, places: true, probe: true},
		{name: "full waits a second", state: func(s *AdmissionState) { s.InFlight = 10 },
			status: WebhookFailed, want: Admission{Wait: time.Second}},
		{name: "full waits longer at each try", state: func(s *AdmissionState) { s.InFlight = 10 },
			status: WebhookFailed, tries: 5, want: Admission{Wait: 32 * time.Second}},
		{name: "full waits a minute at most", state: func(s *AdmissionState) { s.InFlight = 10 },
			status: WebhookFailed, tries: 6, want: Admission{Wait: time.Minute}},
		{name: "a resend waits for a place too", state: func(s *AdmissionState) { s.InFlight = 12 },
			status: WebhookSucceeded, manual: true, tries: 1, want: Admission{Wait: 2 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := healthy()
			if c.state != nil {
				c.state(&s)
			}
			p := s.Retry(c.status, c.manual, c.tries)
			if p.Admission != c.want {
				t.Fatalf("answer %+v, want %+v", p.Admission, c.want)
			}
			switch {
			case (p.Change == nil) != (c.change == nil):
				t.Fatalf("status change %+v, want %+v", p.Change, c.change)
			case p.Change != nil && (p.Change.To != c.change.To || !slices.Equal(p.Change.From, c.change.From)):
				t.Fatalf("status change %+v, want %+v", *p.Change, *c.change)
			case (p.Places != nil) != c.places:
				t.Fatalf("places %+v, want some: %v", p.Places, c.places)
			case p.Places != nil && (p.Places.Probe != c.probe || len(p.Places.Leases) != 1 || !p.Places.Leases[0].Equal(c.want.At.Add(InFlightLease))):
				t.Fatalf("places %+v, want one lease from %v, probe %v", *p.Places, c.want.At, c.probe)
			}
		})
	}
}

// A failing spell holds what waits (a pending delivery not admitted yet; a
// failed one at its retry) and a held one that goes reads as it was.
func TestAFailingSpellHoldsPendingAndFailedDeliveries(t *testing.T) {
	for _, c := range []struct {
		name   string
		change StatusChange
		from   WebhookStatus
		to     WebhookStatus
	}{
		{"waiting pending is held", HoldWaiting, WebhookPending, WebhookHeld},
		{"waiting failed is not (its retry holds it)", HoldWaiting, WebhookFailed, WebhookFailed},
		{"a failed retry is held", HoldRetry, WebhookFailed, WebhookHeld},
		{"a succeeded delivery is not held", HoldRetry, WebhookSucceeded, WebhookSucceeded},
		{"a held delivery admitted is pending", ReleaseWaiting, WebhookHeld, WebhookPending},
		{"a held retry going is failed", ReleaseRetry, WebhookHeld, WebhookFailed},
		{"a skipped delivery stays skipped", ReleaseRetry, WebhookSkipped, WebhookSkipped},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.change.Apply(c.from); got != c.to {
				t.Fatalf("%s becomes %s, want %s", c.from, got, c.to)
			}
		})
	}
}

// Under per_entity ordering an earlier delivery of the entity that is not
// delivered yet (pending, failed or held) keeps a later one back; one
// delivered, exhausted or skipped does not. Under none nothing does.
func TestEarlierOpenDeliveriesOfAnEntityBlockUnderPerEntity(t *testing.T) {
	for _, c := range []struct {
		ordering string
		status   WebhookStatus
		blocks   bool
	}{
		{OrderingPerEntity, WebhookPending, true},
		{OrderingPerEntity, WebhookFailed, true},
		{OrderingPerEntity, WebhookHeld, true},
		{OrderingPerEntity, WebhookSucceeded, false},
		{OrderingPerEntity, WebhookExhausted, false},
		{OrderingPerEntity, WebhookSkipped, false},
		{OrderingNone, WebhookPending, false},
		{OrderingNone, WebhookFailed, false},
		{OrderingNone, WebhookHeld, false},
		{"", WebhookPending, false},
	} {
		t.Run(c.ordering+"/"+string(c.status), func(t *testing.T) {
			if got := slices.Contains(EntityBlockers(c.ordering), c.status); got != c.blocks {
				t.Fatalf("blocks %v, want %v", got, c.blocks)
			}
		})
	}
	if b := EntityBlockers(OrderingNone); b != nil {
		t.Fatalf("none's blockers %v, want nil (no condition at all)", b)
	}
}

// The fifth failed attempt in a row makes a healthy subscription failing,
// its first probe a minute later; a success anywhere in the run starts it
// again.
func TestFiveConsecutiveFailuresMakeASubscriptionFailing(t *testing.T) {
	fail := AttemptOutcome{StatusCode: new(503), Error: new("503 Service Unavailable")}
	for _, c := range []struct {
		name     string
		outcomes []bool // succeeded, in order
		failures int
		failing  bool
	}{
		{"four failures", []bool{false, false, false, false}, 4, false},
		{"five failures", []bool{false, false, false, false, false}, 5, true},
		{"a success in the run", []bool{false, false, false, false, true, false, false, false, false}, 4, false},
		{"six failures stay failing", []bool{false, false, false, false, false, false}, 6, true},
		{"a success after five", []bool{false, false, false, false, false, true}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h HealthState
			for i, ok := range c.outcomes {
				o := fail
				o.Succeeded = ok
				h = h.After(o, admissionNow.Add(time.Duration(i)*time.Second))
			}
			if h.ConsecutiveFailures != c.failures || h.Failing() != c.failing {
				t.Fatalf("%d failures, failing %v; want %d, %v", h.ConsecutiveFailures, h.Failing(), c.failures, c.failing)
			}
		})
	}
	var h HealthState
	for i := range SubscriptionFailingAfter {
		h = h.After(fail, admissionNow.Add(time.Duration(i)*time.Second))
	}
	fifth := admissionNow.Add(4 * time.Second)
	if !h.FailingSince.Equal(fifth) || h.ProbeInterval != time.Minute || !h.ProbeAt.Equal(fifth.Add(time.Minute)) {
		t.Fatalf("failing since %v, probe every %v at %v; want since the fifth, the first probe a minute later", h.FailingSince, h.ProbeInterval, h.ProbeAt)
	}
	if *h.LastFailureStatus != 503 || *h.LastFailureError != "503 Service Unavailable" {
		t.Fatalf("last failure %v %q", *h.LastFailureStatus, *h.LastFailureError)
	}
	// A success keeps the last failure for the record, and ends the rest.
	r := h.After(AttemptOutcome{Succeeded: true}, fifth.Add(time.Hour))
	if r.Failing() || r.ConsecutiveFailures != 0 || r.ProbeInterval != 0 || r.ProbeAt != nil || *r.LastFailureStatus != 503 {
		t.Fatalf("after a success: %+v", r)
	}
}

// Each failed probe doubles the wait for the next one: 1, 2, 4 ... minutes,
// never more than an hour. A failure that is not the probe (an attempt
// admitted before the spell, a resend) leaves the schedule alone.
func TestFailedProbesDoubleTheWaitUpToAnHour(t *testing.T) {
	since := admissionNow
	h := HealthState{ConsecutiveFailures: 5, FailingSince: &since, ProbeInterval: ProbeFirst, ProbeAt: new(since.Add(ProbeFirst))}
	now := since
	for _, want := range []time.Duration{2, 4, 8, 16, 32, 60, 60} {
		now = now.Add(time.Minute)
		h = h.After(AttemptOutcome{Probe: true}, now)
		if h.ProbeInterval != want*time.Minute || !h.ProbeAt.Equal(now.Add(want*time.Minute)) || !h.FailingSince.Equal(since) {
			t.Fatalf("after a failed probe: every %v, next at %v, since %v; want every %v min", h.ProbeInterval, h.ProbeAt, h.FailingSince, want)
		}
	}
	before := h
	h = h.After(AttemptOutcome{}, now.Add(time.Second))
	if h.ProbeInterval != before.ProbeInterval || h.ProbeAt != before.ProbeAt || h.ConsecutiveFailures != before.ConsecutiveFailures+1 {
		t.Fatalf("a failure that is not the probe moved the schedule: %+v", h)
	}
	// A spell recorded without an interval starts the doubling from the
	// first.
	h.ProbeInterval = 0
	if h = h.After(AttemptOutcome{Probe: true}, now); h.ProbeInterval != 2*time.Minute {
		t.Fatalf("from no interval: every %v, want 2 minutes", h.ProbeInterval)
	}
}

// Only a success of a healthy subscription with no failure in a row leaves
// its health as it is (and needs no lock).
func TestOnlyASuccessOfAHealthySubscriptionChangesNothing(t *testing.T) {
	since := admissionNow
	for _, c := range []struct {
		name      string
		h         HealthState
		succeeded bool
		changed   bool
	}{
		{"a success, healthy", HealthState{}, true, false},
		{"a failure, healthy", HealthState{}, false, true},
		{"a success ends a run", HealthState{ConsecutiveFailures: 2}, true, true},
		{"a success ends a spell", HealthState{ConsecutiveFailures: 0, FailingSince: &since}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.ChangedBy(c.succeeded); got != c.changed {
				t.Fatalf("changed %v, want %v", got, c.changed)
			}
			if after := c.h.After(AttemptOutcome{Succeeded: c.succeeded}, admissionNow); !c.changed && (after.ConsecutiveFailures != 0 || after.Failing()) {
				t.Fatalf("an attempt that changes nothing made %+v", after)
			}
		})
	}
}
