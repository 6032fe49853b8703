package relay

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/workflows"
)

// flakyTemporal answers the first fails workflow starts with an error, as
// a Temporal frontend that cannot be reached does, and records the IDs of
// the starts after them.
type flakyTemporal struct {
	client.Client
	mu      sync.Mutex
	fails   int
	calls   int
	started chan string
}

func (f *flakyTemporal) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fails > 0 {
		f.fails--
		return nil, errors.New("connection error: the frontend is unreachable")
	}
	f.started <- o.ID
	return nil, nil
}

// subscribed is a database with an organisation subscribed to every event.
func subscribed(t *testing.T) (*testdb.DB, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", Currency: "EUR", OwnerEmail: "o@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://erp.example.com/hooks"}); err != nil {
		t.Fatal(err)
	}
	return d, org.ID
}

// TestADeliveryWhoseStartFailedIsStartedAgainWithoutWaitingForTheSweep:
// with the sweep an hour away and no event after the first, the relay
// itself comes back to a delivery whose workflow it could not start (three
// starts refused in a row), as it would after Temporal was unreachable.
func TestADeliveryWhoseStartFailedIsStartedAgainWithoutWaitingForTheSweep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, org := subscribed(t)
	if _, err := d.Pool().Exec(ctx, `INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', '{}')`, org); err != nil {
		t.Fatal(err)
	}
	tc := &flakyTemporal{fails: 3, started: make(chan string, 1)}
	o := &Outbox{DB: d.DB, Workflows: workflows.NewClient(tc, "default"), Log: zap.NewNop(), Sweep: time.Hour}
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(ctx)
	}()
	// Three failures wait 1, 2 and 4 s: the start comes about 7 s in.
	select {
	case id := <-tc.started:
		tc.mu.Lock()
		calls := tc.calls
		tc.mu.Unlock()
		if calls != 4 {
			t.Errorf("the delivery %s was started on call %d, want the fourth (three refused)", id, calls)
		}
	case <-time.After(time.Minute):
		t.Fatal("the delivery was not started again within a minute of its refused starts (the sweep is an hour away)")
	}
	var status string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := d.Pool().QueryRow(ctx, `SELECT CASE WHEN workflow_started_at IS NULL THEN 'not started' ELSE 'started' END FROM webhook_deliveries WHERE org_id = $1`, org).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == "started" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status != "started" {
		t.Errorf("the delivery reads %s after its workflow started", status)
	}
	cancel()
	<-done
}

// TestRetriesDoubleUpToTheSweepAndFailuresAtOnceShareOne: each retry that
// fails again waits twice as long, up to the sweep; failures while a retry
// is pending (many paced starts refused at once) join it instead of
// doubling the wait or scheduling more; a success starts again from 1 s.
func TestRetriesDoubleUpToTheSweepAndFailuresAtOnceShareOne(t *testing.T) {
	woken := make(chan struct{}, 100)
	r := &retry{sweep: 10 * time.Second, wake: func() { woken <- struct{}{} }}
	fire := func() { // the pending retry's timer, without waiting for it
		t.Helper()
		r.mu.Lock()
		pending := r.pending
		r.mu.Unlock()
		if !pending {
			t.Fatal("no retry pending")
		}
		r.fire()
		<-woken
	}
	if got := r.failed(); got != time.Second {
		t.Fatalf("the first failure waits %s, want 1s", got)
	}
	for range 20 {
		if got := r.failed(); got != 0 {
			t.Fatalf("a failure while a retry is pending scheduled another, in %s", got)
		}
	}
	for _, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		fire()
		if got := r.failed(); got != want {
			t.Fatalf("the next failed retry waits %s, want %s", got, want)
		}
	}
	fire()
	r.succeeded()
	if got := r.failed(); got != time.Second {
		t.Errorf("after a success the first failure waits %s, want 1s", got)
	}
}

// TestARoundWithNothingToDoTakesNeitherLockNorTransaction: every attempt
// recorded wakes every relay, and most wakes find nothing to do. Such a
// round answers from one read: it does not queue for the lock relays take
// events under (held here by another transaction), nor start anything. An
// event written then is relayed and its delivery started by the next round.
func TestARoundWithNothingToDoTakesNeitherLockNorTransaction(t *testing.T) {
	ctx := context.Background()
	d, org := subscribed(t)
	tc := &flakyTemporal{started: make(chan string, 1)}
	o := &Outbox{DB: d.DB, Workflows: workflows.NewClient(tc, "default"), Log: zap.NewNop(), Sweep: time.Hour}

	held, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Rollback(ctx) }()
	if _, err := held.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('relay-events:' || current_schema(), 0))`); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	n, err := o.Drain(rctx)
	cancel()
	if err != nil || n != 0 {
		t.Fatalf("a round with nothing to do started %d and failed with %v while another held the relays' lock; want 0 and no error", n, err)
	}
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := d.Pool().Exec(ctx, `INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'customer.created', '{}')`, org); err != nil {
		t.Fatal(err)
	}
	if n, err := o.Drain(ctx); err != nil || n != 1 {
		t.Fatalf("the round after an event started %d, %v; want its one delivery", n, err)
	}
	select {
	case <-tc.started:
	default:
		t.Fatal("the delivery's workflow was not started")
	}
}
