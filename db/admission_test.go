package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// A subscription failing 5 attempts in a row holds its waiting deliveries,
// admitting none but a probe: the first a minute after, then after 2, 4,
// 8 ... minutes as probes fail, never more than an hour apart. The probe's
// success makes it healthy, and the held deliveries are admitted again.
func TestAFailingSubscriptionHoldsItsDeliveriesAndProbesOnASchedule(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerCreated)
	f.customersCreated(30)
	claim := f.claim
	record := func(r domain.WebhookDeliveryRef, ok bool) {
		t.Helper()
		status, code := domain.WebhookFailed, 503
		next := time.Now().Add(time.Hour)
		rec := db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: r.ID, Attempt: r.Attempts + 1, StartedAt: time.Now(),
			StatusCode: &code, Status: status, NextAttemptAt: &next}
		if ok {
			code = 200
			rec.Status, rec.NextAttemptAt = domain.WebhookSucceeded, nil
		}
		if _, err := f.d.RecordWebhookAttempt(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	probe := func() (interval int, in time.Duration) {
		t.Helper()
		var due *time.Time
		var secs *int
		if err := f.d.Pool().QueryRow(ctx, `SELECT probe_at, probe_interval_seconds FROM webhook_subscriptions WHERE id = $1`, sub).
			Scan(&due, &secs); err != nil {
			t.Fatal(err)
		}
		if due == nil || secs == nil {
			return 0, 0
		}
		return *secs, time.Until(*due)
	}
	// Ten admitted (max_in_flight), five fail: failing, the first probe a
	// minute away.
	first := claim()
	if len(first) != 10 {
		t.Fatalf("admitted %d, want max_in_flight 10", len(first))
	}
	for _, r := range first[:5] {
		record(r, false)
	}
	if secs, in := probe(); secs != 60 || in < 55*time.Second || in > 61*time.Second {
		t.Fatalf("probe every %d s, next in %v; want 60 s, in a minute", secs, in)
	}
	// Failing: the waiting deliveries are held, with no attempt spent,
	// and none is admitted before the probe is due. The five attempts
	// still in flight keep the probe back too, until they are recorded.
	if got := claim(); len(got) != 0 {
		t.Fatalf("a failing subscription admitted %d deliveries", len(got))
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'held' AND attempts = 0`, sub); n != 20 {
		t.Fatalf("%d deliveries held, want the 20 waiting", n)
	}
	for _, r := range first[5:] {
		record(r, false)
	}
	due := func() {
		f.exec(`UPDATE webhook_subscriptions SET probe_at = now() - interval '1 second' WHERE id = $1`, sub)
	}
	for _, want := range []int{120, 240, 480, 960, 1920, 3600, 3600} {
		due()
		got := claim()
		if len(got) != 1 {
			t.Fatalf("a due probe admitted %d deliveries, want 1", len(got))
		}
		if got := claim(); len(got) != 0 {
			t.Fatalf("a second probe while one is in flight: %d", len(got))
		}
		record(got[0], false)
		if secs, in := probe(); secs != want || in < time.Duration(want-5)*time.Second || in > time.Duration(want+1)*time.Second {
			t.Fatalf("after a failed probe: every %d s, next in %v; want %d s", secs, in, want)
		}
	}
	// The probe succeeds: healthy, and the held deliveries are admitted,
	// as many as max_in_flight at once.
	due()
	p := claim()
	if len(p) != 1 {
		t.Fatalf("the last probe: %d admitted", len(p))
	}
	record(p[0], true)
	if secs, _ := probe(); secs != 0 || f.count(`SELECT count(*) FROM webhook_subscriptions WHERE id = $1 AND failing_since IS NULL`, sub) != 1 {
		t.Fatal("a successful probe left the subscription failing")
	}
	released := claim()
	if len(released) != 10 {
		t.Fatalf("released %d of the held deliveries at once, want max_in_flight 10", len(released))
	}
	for _, r := range released {
		if r.Attempts != 0 {
			t.Fatalf("a held delivery released with %d attempts spent", r.Attempts)
		}
	}
}

// A delivery admitted before its subscription became failing, whose
// workflow its relay has not started yet (it waits for its start slot),
// goes as admitted: it is not held under the relay, whose start would
// then spend an attempt of a delivery reading held.
func TestADeliveryAdmittedBeforeItsSubscriptionFailsIsNotHeld(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerCreated)
	f.customersCreated(12)
	refs, err := f.d.ClaimWebhookDeliveries(ctx, 100)
	if err != nil || len(refs) != 10 {
		t.Fatalf("admitted %d (%v), want max_in_flight 10", len(refs), err)
	}
	// Five started, and failed; five claimed, their starts still to come.
	started := []uuid.UUID{refs[0].ID, refs[1].ID, refs[2].ID, refs[3].ID, refs[4].ID}
	if err := f.d.MarkWebhookDeliveriesStarted(ctx, started); err != nil {
		t.Fatal(err)
	}
	for _, r := range refs[:5] {
		code, next := 503, time.Now().Add(time.Hour)
		if _, err := f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: r.ID, Attempt: 1,
			StartedAt: time.Now(), StatusCode: &code, Status: domain.WebhookFailed, NextAttemptAt: &next}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.d.ClaimWebhookDeliveries(ctx, 100); err != nil || len(got) != 0 {
		t.Fatalf("a failing subscription admitted %d (%v)", len(got), err)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'held' AND attempts = 0`, sub); n != 2 {
		t.Fatalf("%d deliveries held, want the 2 not admitted", n)
	}
	for _, r := range refs[5:] {
		if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE id = $1 AND status = 'pending'`, r.ID); n != 1 {
			t.Fatalf("delivery %s, admitted before the subscription failed, is no longer pending", r.ID)
		}
	}
}

// customersCreated creates n customers and relays their customer.created
// events: a delivery each to every subscription to them, none started.
// claim admits and claims up to 100 deliveries, as a relay's round does,
// and marks their workflows started.
func (f *opsFixture) claim() []domain.WebhookDeliveryRef {
	f.t.Helper()
	ctx := context.Background()
	refs, err := f.d.ClaimWebhookDeliveries(ctx, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	ids := make([]uuid.UUID, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	if err := f.d.MarkWebhookDeliveriesStarted(ctx, ids); err != nil {
		f.t.Fatal(err)
	}
	return refs
}

func (f *opsFixture) customersCreated(n int) {
	f.t.Helper()
	in := make([]domain.CustomerInput, n)
	for i := range in {
		in[i] = domain.CustomerInput{Company: string(rune('A' + i))}
	}
	if _, err := f.d.UpsertCustomers(context.Background(), f.org, in); err != nil {
		f.t.Fatal(err)
	}
	f.relay()
}

func (f *opsFixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.d.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// A nightly retry asks its subscription first: held while it is failing
// (unless it can be the probe), made to wait while the cap is full, and
// given a slot of the rate when it goes.
func TestANightlyRetryIsAdmittedAsItsSubscriptionAllows(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerCreated)
	if _, err := f.d.UpsertCustomers(ctx, f.org, []domain.CustomerInput{{Company: "A"}, {Company: "B"}}); err != nil {
		t.Fatal(err)
	}
	f.relay()
	refs, err := f.d.ClaimWebhookDeliveries(ctx, 10)
	if err != nil || len(refs) != 2 {
		t.Fatalf("claimed %d, %v", len(refs), err)
	}
	retry := refs[0]
	code := 503
	next := time.Now().Add(time.Hour)
	if _, err := f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: retry.ID, Attempt: 1, StartedAt: time.Now(),
		StatusCode: &code, Status: domain.WebhookFailed, NextAttemptAt: &next}); err != nil {
		t.Fatal(err)
	}
	admit := func() domain.Admission {
		t.Helper()
		a, err := f.d.AdmitRetry(ctx, f.org, retry.ID, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Healthy, one place of one taken by the other delivery: wait.
	f.exec(`UPDATE webhook_subscriptions SET max_in_flight = 1 WHERE id = $1`, sub)
	if a := admit(); a.Go || a.Wait != time.Second {
		t.Fatalf("with the cap full: %+v, want to wait a second", a)
	}
	// Failing, the probe not due: held, waiting past the next probe.
	f.exec(`UPDATE webhook_subscriptions SET max_in_flight = 10, failing_since = now(), probe_at = now() + interval '2 minutes' WHERE id = $1`, sub)
	if a := admit(); a.Go || !a.Held || a.Wait < 2*time.Minute || a.Wait > 4*time.Minute {
		t.Fatalf("while failing: %+v, want held until after the probe", a)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE id = $1 AND status = 'held' AND attempts = 1`, retry.ID); n != 1 {
		t.Fatal("the held retry does not read held, with its one attempt")
	}
	// A resend goes while the subscription is failing (support asked),
	// holding a place as any attempt.
	if a, err := f.d.AdmitRetry(ctx, f.org, retry.ID, 0, true); err != nil || !a.Go || a.Held {
		t.Fatalf("a resend while failing: %+v %v, want to go", a, err)
	}
	if n := f.count(`SELECT count(*) FROM webhook_in_flight WHERE delivery_id = $1 AND NOT probe`, retry.ID); n != 1 {
		t.Fatal("the resend holds no place")
	}
	f.exec(`DELETE FROM webhook_in_flight WHERE delivery_id = $1`, retry.ID)
	// The probe due, none in flight (the other delivery recorded): this
	// retry is the probe.
	ok := 200
	if _, err := f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: refs[1].ID, Attempt: 1, StartedAt: time.Now(),
		StatusCode: &ok, Status: domain.WebhookSucceeded}); err != nil {
		t.Fatal(err)
	}
	f.exec(`UPDATE webhook_subscriptions SET failing_since = now(), probe_at = now() - interval '1 second' WHERE id = $1`, sub)
	if a := admit(); !a.Go {
		t.Fatalf("the probe due: %+v, want to go", a)
	}
	if n := f.count(`SELECT count(*) FROM webhook_in_flight WHERE delivery_id = $1 AND probe`, retry.ID); n != 1 {
		t.Fatal("the retry going as the probe holds no probe's lease")
	}
	// Healthy with a rate: the slot is the rate's.
	f.exec(`DELETE FROM webhook_in_flight WHERE delivery_id = $1`, retry.ID)
	f.exec(`UPDATE webhook_subscriptions SET failing_since = NULL, probe_at = NULL, rate_limit_per_second = 2,
		next_slot_at = now() + interval '3 seconds' WHERE id = $1`, sub)
	if a := admit(); !a.Go || time.Until(a.At) < 2*time.Second {
		t.Fatalf("with a rate: %+v, want its slot 3 s away", a)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE id = $1 AND status = 'failed'`, retry.ID); n != 1 {
		t.Fatal("an admitted retry still reads held")
	}
}

// Under per_entity ordering an entity's deliveries are admitted one at a
// time, in event order: an earlier one pending or failed keeps the later
// back, one delivered or skipped lets it go. With a rate, each admitted
// delivery starts at a slot of its own, 1/rate after the one before, and
// the next round's slots come after them.
func TestPerEntityOrderingAndTheRateAreKeptByAdmission(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerUpdated)
	rate, ordering := 4, db.OrderingPerEntity
	if _, err := f.d.UpdateSubscription(ctx, f.org, sub, db.SubscriptionChange{RateLimitSet: true, RateLimit: &rate, Ordering: &ordering}); err != nil {
		t.Fatal(err)
	}
	for _, entity := range []string{"A", "A", "B", "B"} {
		tx, err := f.d.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Emit(ctx, tx, f.org, domain.Event{Type: domain.EventCustomerUpdated, Data: map[string]string{"id": entity},
			Entity: domain.Entity{Type: domain.EntityCustomer, ID: entity}}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f.relay()
	claim := f.claim
	entityOf := func(r domain.WebhookDeliveryRef) string {
		t.Helper()
		var e string
		if err := f.d.Pool().QueryRow(ctx, `SELECT entity FROM webhook_deliveries WHERE id = $1`, r.ID).Scan(&e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	record := func(r domain.WebhookDeliveryRef, status domain.WebhookStatus, code int) {
		t.Helper()
		rec := db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: r.ID, Attempt: 1, StartedAt: time.Now(), StatusCode: &code, Status: status}
		if status == domain.WebhookFailed {
			next := time.Now().Add(time.Hour)
			rec.NextAttemptAt = &next
		}
		if _, err := f.d.RecordWebhookAttempt(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	first := claim()
	if len(first) != 2 || entityOf(first[0]) != "customer:A" || entityOf(first[1]) != "customer:B" {
		t.Fatalf("admitted %d, want the first delivery of each entity, in event order", len(first))
	}
	if gap := first[1].NotBefore.Sub(first[0].NotBefore); gap != time.Second/4 || time.Until(first[0].NotBefore) > time.Second {
		t.Fatalf("start slots %v apart, the first at %v; want 1/rate apart, from now", gap, first[0].NotBefore)
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("admitted %d while the first of each entity is pending", len(got))
	}
	// A's first delivered lets A's second go; B's first failed keeps B's
	// second back.
	record(first[0], domain.WebhookSucceeded, 200)
	record(first[1], domain.WebhookFailed, 503)
	second := claim()
	if len(second) != 1 || entityOf(second[0]) != "customer:A" {
		t.Fatalf("admitted %d after A's first was delivered and B's failed, want A's second alone", len(second))
	}
	if second[0].NotBefore.Before(first[1].NotBefore.Add(time.Second / 4)) {
		t.Fatalf("the next round's slot %v is not after the last one's %v", second[0].NotBefore, first[1].NotBefore)
	}
	// B's first skipped by support lets B's second go.
	if err := f.d.SkipWebhookDelivery(ctx, f.org, first[1].ID); err != nil {
		t.Fatal(err)
	}
	if third := claim(); len(third) != 1 || entityOf(third[0]) != "customer:B" {
		t.Fatalf("admitted %d after B's first was skipped, want B's second", len(third))
	}
}

// Relays that insert deliveries and relays that admit them run at once on
// every worker: an insert's foreign-key check takes a key-share lock on
// each subscription it delivers to, and admission locks the subscriptions
// it admits for. Neither waits for the other, so under any interleaving
// none deadlocks (as relays did when admission locked FOR UPDATE: one
// inserting for two subscriptions while another held one and waited for
// the other).
func TestRelayingAndAdmittingAtOnceNeverDeadlock(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	for range 8 {
		f.subscribe(domain.EventCustomerCreated)
	}
	deadline := time.Now().Add(3 * time.Second)
	errs := make(chan error, 6)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { // events arrive and are relayed
			for time.Now().Before(deadline) {
				if _, err := f.d.Pool().Exec(ctx, `INSERT INTO events (id, org_id, type, data)
					SELECT gen_random_uuid(), $1, 'customer.created', '{}' FROM generate_series(1, 5)`, f.org); err != nil {
					errs <- err
					return
				}
				if _, err := f.d.RelayEvents(ctx, 100); err != nil {
					errs <- fmt.Errorf("relaying: %w", err)
					return
				}
			}
		})
		wg.Go(func() { // deliveries are admitted, started and recorded
			for time.Now().Before(deadline) {
				refs, err := f.d.ClaimWebhookDeliveries(ctx, 100)
				if err != nil {
					errs <- fmt.Errorf("admitting: %w", err)
					return
				}
				ids := make([]uuid.UUID, len(refs))
				for i, r := range refs {
					ids[i] = r.ID
				}
				if err := f.d.MarkWebhookDeliveriesStarted(ctx, ids); err != nil {
					errs <- err
					return
				}
				for _, r := range refs {
					code := 200
					if _, err := f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: r.ID, Attempt: 1,
						StartedAt: time.Now(), StatusCode: &code, Status: domain.WebhookSucceeded}); err != nil {
						errs <- fmt.Errorf("recording: %w", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded'`, f.org); n == 0 {
		t.Fatal("no delivery was admitted and recorded: the test raced nothing")
	}
}

// A relay's round reads each subscription's oldest waiting delivery, not
// every waiting delivery: a subscription failing for hours holds thousands,
// and rounds come many times a second. With 3,000 held, the round's first
// statement reads a handful of deliveries (its plan, from Postgres itself),
// and still finds both subscriptions and admits the healthy one's.
func TestARelayRoundReadsNoMoreDeliveriesWhenThousandsAreHeld(t *testing.T) {
	f := newOpsFixture(t)
	failing := f.subscribe(domain.EventCustomerCreated)
	healthy := f.subscribe(domain.EventOrderInvoiceRecorded)
	f.exec(`INSERT INTO events (id, org_id, type, data) SELECT gen_random_uuid(), $1, 'customer.created', '{}' FROM generate_series(1, 3000)`, f.org)
	f.exec(`INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, $2, '{}')`, f.org, domain.EventOrderInvoiceRecorded)
	f.relay()
	f.exec(`UPDATE webhook_deliveries SET status = 'held' WHERE subscription_id = $1`, failing)
	f.exec(`UPDATE webhook_subscriptions SET consecutive_failures = 5, failing_since = now(), probe_at = now() + interval '1 hour' WHERE id = $1`, failing)

	// Planned without statistics of the table (a server without
	// autovacuum, or just loaded) and with them.
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			f.exec(`ANALYZE webhook_deliveries`)
		}
		plan, raw := f.explain(db.AdmissionSubscriptionsSQL, 100)
		if read := rowsRead(plan, "webhook_deliveries"); read > 20 {
			t.Errorf("analyzed %v: the round's first statement read %.0f deliveries with 3,000 held, want a few per subscription; its plan: %s", analyzed, read, raw)
		}
	}

	refs := f.claim()
	if len(refs) != 1 || refs[0].SubscriptionID != healthy {
		t.Fatalf("admitted %+v, want the healthy subscription's one delivery", refs)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'held' AND workflow_started_at IS NULL`, failing); n != 3000 {
		t.Fatalf("%d deliveries still held, want 3000", n)
	}
}

// rowsRead sums, over a plan's nodes that scan table, the rows they
// returned and the rows their filters removed, all loops counted.
func rowsRead(node map[string]any, table string) float64 {
	num := func(k string) float64 { v, _ := node[k].(float64); return v }
	var n float64
	if node["Relation Name"] == table {
		loops := max(num("Actual Loops"), 1)
		n += (num("Actual Rows") + num("Rows Removed by Filter") + num("Rows Removed by Index Recheck")) * loops
	}
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		if m, ok := c.(map[string]any); ok {
			n += rowsRead(m, table)
		}
	}
	return n
}
