package db_test

import (
	"context"
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
	in := make([]domain.CustomerInput, 30)
	for i := range in {
		in[i] = domain.CustomerInput{Company: string(rune('A' + i))}
	}
	if _, err := f.d.UpsertCustomers(ctx, f.org, in); err != nil {
		t.Fatal(err)
	}
	f.relay()
	claim := func() []domain.WebhookDeliveryRef {
		t.Helper()
		refs, err := f.d.ClaimWebhookDeliveries(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uuid.UUID, len(refs))
		for i, r := range refs {
			ids[i] = r.ID
		}
		if err := f.d.MarkWebhookDeliveriesStarted(ctx, ids); err != nil {
			t.Fatal(err)
		}
		return refs
	}
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

func (f *opsFixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.d.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}
