package db_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// statements counts the statements a pool sends, by their first word.
type statements struct {
	mu   sync.Mutex
	sent []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := strings.Fields(d.SQL); len(f) > 0 {
		s.sent = append(s.sent, strings.ToLower(f[0]))
	}
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// since returns the statements sent since the last call.
func (s *statements) since() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sent
	s.sent = nil
	return out
}

// A succeeded attempt of a delivery to a healthy subscription (the common
// case) is recorded in one statement, with everything the transaction did:
// the attempt, the delivery succeeded, its place given back and the relays
// woken. A success after failures, which ends the subscription's run, still
// takes the transaction that writes its health.
func TestASuccessToAHealthySubscriptionIsRecordedInOneStatement(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	sub := f.subscribe(domain.EventCustomerCreated)
	f.customersCreated(3)
	refs := f.claim()
	if len(refs) != 3 {
		t.Fatalf("claimed %d deliveries, want 3", len(refs))
	}
	var trace statements
	traced, err := db.ConnectWith(ctx, f.d.URL, db.Options{MaxConns: 2, Tracer: &trace})
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	listener, err := pgx.Connect(ctx, f.d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN commerce_events"); err != nil {
		t.Fatal(err)
	}
	woken := func() bool {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := listener.WaitForNotification(wctx)
		return err == nil
	}
	record := func(delivery domain.WebhookDeliveryRef, status domain.WebhookStatus, code int) (failing bool) {
		t.Helper()
		rec := db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: delivery.ID, Attempt: 1, StartedAt: time.Now(),
			Duration: 40 * time.Millisecond, StatusCode: &code, Status: status}
		if status == domain.WebhookFailed {
			why, next := "the receiver answered 503", time.Now().Add(time.Hour)
			rec.Error, rec.NextAttemptAt = &why, &next
		}
		failing, err := traced.RecordWebhookAttempt(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		return failing
	}

	trace.since()
	if record(refs[0], domain.WebhookSucceeded, 204) {
		t.Fatal("a healthy subscription reported failing")
	}
	if sent := trace.since(); len(sent) != 1 || sent[0] != "with" {
		t.Fatalf("a success to a healthy subscription sent %v, want one statement", sent)
	}
	if n := f.count(`SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1 AND attempt = 1 AND status_code = 204 AND duration_ms = 40`, refs[0].ID); n != 1 {
		t.Fatalf("%d attempts recorded, want 1", n)
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE id = $1 AND status = 'succeeded' AND attempts = 1
		AND last_status_code = 204 AND next_attempt_at IS NULL`, refs[0].ID); n != 1 {
		t.Fatal("the delivery is not succeeded after its first attempt")
	}
	if n := f.count(`SELECT count(*) FROM webhook_in_flight WHERE delivery_id = $1`, refs[0].ID); n != 0 {
		t.Fatal("the delivery still holds its place among its subscription's attempts in flight")
	}
	if !woken() {
		t.Fatal("the relays were not woken when the place was given back")
	}

	// Recorded again, as a retried activity does: one attempt still.
	record(refs[0], domain.WebhookSucceeded, 204)
	if n := f.count(`SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1`, refs[0].ID); n != 1 {
		t.Fatalf("%d attempts after the same attempt was recorded twice, want 1", n)
	}

	// A failure, then a success: the success ends the run of failures,
	// in the transaction.
	record(refs[1], domain.WebhookFailed, 503)
	if n := f.count(`SELECT consecutive_failures FROM webhook_subscriptions WHERE id = $1`, sub); n != 1 {
		t.Fatalf("%d failures in a row, want 1", n)
	}
	trace.since()
	record(refs[2], domain.WebhookSucceeded, 200)
	if sent := trace.since(); len(sent) < 3 || sent[0] != "with" || sent[1] != "begin" {
		t.Fatalf("a success after a failure sent %v, want the one statement (which finds the run) and then the transaction", sent)
	}
	if n := f.count(`SELECT consecutive_failures FROM webhook_subscriptions WHERE id = $1`, sub); n != 0 {
		t.Fatalf("%d failures in a row after a success, want 0", n)
	}
	if n := f.count(`SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1`, refs[2].ID); n != 1 {
		t.Fatalf("%d attempts recorded for the success after a failure, want 1", n)
	}
}

// RelayWork says whether a relay's round has anything to do: events to
// relay, deliveries waiting for admission that no claim holds.
func TestRelayWorkSaysWhetherARoundHasAnythingToDo(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	f.subscribe(domain.EventCustomerCreated)
	work := func(wantEvents, wantDeliveries bool, when string) {
		t.Helper()
		events, deliveries, err := f.d.RelayWork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if events != wantEvents || deliveries != wantDeliveries {
			t.Fatalf("%s: events %v, deliveries %v; want %v, %v", when, events, deliveries, wantEvents, wantDeliveries)
		}
	}
	work(false, false, "nothing written")
	if _, err := f.d.UpsertCustomers(ctx, f.org, []domain.CustomerInput{{Company: "A"}, {Company: "B"}}); err != nil {
		t.Fatal(err)
	}
	work(true, false, "two events written")
	f.relay()
	work(false, true, "relayed")
	refs, err := f.d.ClaimWebhookDeliveries(ctx, 100)
	if err != nil || len(refs) != 2 {
		t.Fatalf("claimed %d, %v; want 2", len(refs), err)
	}
	work(false, false, "both claimed")
	f.exec(`UPDATE webhook_deliveries SET start_claimed_until = now() - interval '1 second' WHERE id = $1`, refs[0].ID)
	work(false, true, "a claim run out")
	f.exec(`UPDATE webhook_deliveries SET workflow_started_at = now()`)
	work(false, false, "both started")
}
