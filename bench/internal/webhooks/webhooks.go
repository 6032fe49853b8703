// Package webhooks benchmarks outbound webhooks: events per second from the
// outbox to a local receiver, through the relay, one Temporal workflow per
// delivery and its activity (the embedded Temporal server of `commerce
// dev`, with the worker in the same process), next to the same database and
// HTTP work done without Temporal: the same relay step and the same
// delivery activity called as a function from 8 goroutines. Both run in
// the same process against the same database and receiver.
//
//	go run ./bench/webhooks [-events 2000] [-rounds 2] [-temporal-store sqlite]
//
// Each round writes its events as customer.created events (one upsert of
// 500 customers at a time) and times from the commit of the first batch
// until the receiver has every delivery and, through Temporal, until every
// delivery's workflow has closed: the last workflow task of a delivery
// completes after the receiver has it, and stopping the clock at the
// receiver would leave that work to the next round. It uses BENCH_DATABASE_URL
// (default: database commerce_bench on the local server, created when
// missing) and drops its schema when done.
package webhooks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/signature"
	"github.com/commerce-integration/commerce/workflows"
)

const schema = "bench_webhooks"

// Options say how big a run is.
type Options struct {
	Events int // events per round and path
	Rounds int // rounds per path, interleaved; the better is reported
	// Store is what the embedded Temporal server keeps its state in
	// (embedded.Stores).
	Store string
	// CPUProfile, when set, is where a CPU profile of the first Temporal
	// round is written.
	CPUProfile string
}

// Result is the better round of each path, in events per second.
type Result struct{ Temporal, Direct float64 }

// Run measures both paths.
func Run(ctx context.Context, o Options) (Result, error) {
	return run(ctx, o)
}

// receiver counts the distinct deliveries it is sent, and checks each
// signature.
type receiver struct {
	mu       sync.Mutex
	secret   string
	seen     map[string]bool
	bad      int
	want     int
	complete chan struct{}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if signature.Verify(r.Header.Get(signature.Header), rc.secret, body, time.Now(), signature.DefaultTolerance) != nil {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.seen[r.Header.Get(domain.HeaderDeliveryID)] = true
	if len(rc.seen) == rc.want && rc.complete != nil {
		close(rc.complete)
		rc.complete = nil
	}
	w.WriteHeader(http.StatusNoContent)
}

// expect resets the receiver for a round of n deliveries.
func (rc *receiver) expect(n int) <-chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.seen, rc.want = map[string]bool{}, n
	done := make(chan struct{})
	rc.complete = done
	return done
}

func run(ctx context.Context, o Options) (Result, error) {
	events, rounds := o.Events, o.Rounds
	d, done, err := harness.Database(ctx, schema)
	if err != nil {
		return Result{}, err
	}
	defer done()
	sealer, _ := secrets.NewSealer(make([]byte, 32))

	rc := &receiver{}
	receiverURL, err := harness.Listen(rc)
	if err != nil {
		return Result{}, err
	}
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Bench Ltd"})
	if err != nil {
		return Result{}, err
	}
	sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: receiverURL + "/hooks"})
	if err != nil {
		return Result{}, err
	}
	rc.secret = sub.Secret

	acts := &activities.Activities{DB: d, Log: zap.NewNop(), Sealer: sealer, Webhooks: outbound.Client(outbound.AnyTarget), Delivery: domain.NewDeliveryPolicy(2 * time.Hour)}
	tc, stopTemporal, err := embedded.Temporal(ctx, acts, o.Store)
	if err != nil {
		return Result{}, err
	}
	defer stopTemporal()
	fmt.Printf("\n%d events per round, %d rounds per path, interleaved; the better round is reported\n\n", events, rounds)

	var best [2]float64
	for round := range rounds {
		// Through the relay and Temporal.
		rctx, stop := context.WithCancel(ctx)
		relayDone := make(chan struct{})
		go func() {
			defer close(relayDone)
			(&relay.Outbox{DB: d, Workflows: workflows.NewClient(tc, ""), Log: zap.NewNop()}).Run(rctx)
		}()
		stopProfile := harness.CPUProfile(o.CPUProfile)
		o.CPUProfile = ""
		start := time.Now()
		_, err := timeRound(ctx, d, rc, org.ID, events, round*2, nil)
		var rate float64
		if err == nil {
			// A delivery's workflow closes after the receiver has it (the
			// attempt is recorded, then the workflow task completes): the
			// round ends when none runs, so that its work is counted in it
			// and not in the next round.
			err = settle(ctx, tc)
			rate = float64(events) / time.Since(start).Seconds()
			fmt.Printf("  round %d, Temporal, every workflow closed after %6.2fs: %6.0f events/s\n", round+1,
				time.Since(start).Seconds(), rate)
		}
		stopProfile()
		stop()
		<-relayDone
		if err != nil {
			return Result{}, err
		}
		best[0] = max(best[0], rate)
		// The same work without Temporal.
		rate, err = timeRound(ctx, d, rc, org.ID, events, round*2+1, func(ctx context.Context) error { return directDrain(ctx, d, acts) })
		if err != nil {
			return Result{}, err
		}
		best[1] = max(best[1], rate)
	}
	if rc.bad > 0 {
		return Result{}, fmt.Errorf("%d deliveries did not verify", rc.bad)
	}
	fmt.Printf("%-44s %12s\n", "path", "events/s")
	fmt.Printf("%-44s %12.0f\n", "relay + Temporal workflow per delivery", best[0])
	fmt.Printf("%-44s %12.0f\n", "same database and HTTP work, no Temporal", best[1])
	fmt.Printf("%-44s %12.2f\n", "ratio Temporal / direct", best[0]/best[1])
	return Result{Temporal: best[0], Direct: best[1]}, nil
}

// settle waits until no workflow runs on the embedded server.
func settle(ctx context.Context, tc client.Client) error {
	for {
		res, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Running'"})
		if err != nil {
			return err
		}
		if res.GetCount() == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// timeRound writes n events and waits for the receiver to have them all;
// drain, when set, delivers them (the direct path); otherwise the running
// relay and worker do.
func timeRound(ctx context.Context, d *db.DB, rc *receiver, org uuid.UUID, n, round int, drain func(context.Context) error) (float64, error) {
	done := rc.expect(n)
	start := time.Now()
	for i := 0; i < n; i += 500 {
		var batch []domain.CustomerInput
		for j := i; j < min(n, i+500); j++ {
			batch = append(batch, domain.CustomerInput{Company: fmt.Sprintf("Customer %d-%06d", round, j)})
		}
		if _, err := d.UpsertCustomers(ctx, org, batch); err != nil {
			return 0, err
		}
	}
	if drain != nil {
		if err := drain(ctx); err != nil {
			return 0, err
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		return 0, fmt.Errorf("round %d: not every event delivered in 10 minutes", round)
	}
	elapsed := time.Since(start)
	rate := float64(n) / elapsed.Seconds()
	path := "Temporal"
	if drain != nil {
		path = "direct"
	}
	fmt.Printf("  round %d, %-8s %6d events in %6.2fs: %6.0f events/s\n", round/2+1, path, n, elapsed.Seconds(), rate)
	return rate, nil
}

// directDrain relays the outbox as the relay does and makes each first
// attempt by calling the delivery activity from 8 goroutines.
func directDrain(ctx context.Context, d *db.DB, acts *activities.Activities) error {
	for {
		n, err := d.RelayEvents(ctx, 500)
		if err != nil {
			return err
		}
		if n < 500 {
			break
		}
	}
	for {
		refs, err := d.UnstartedWebhookDeliveries(ctx, 500)
		if err != nil || len(refs) == 0 {
			return err
		}
		jobs := make(chan domain.WebhookDeliveryRef)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for range 8 {
			wg.Go(func() {
				for ref := range jobs {
					_, err := acts.DeliverWebhook(ctx, domain.DeliverInput{OrgID: ref.OrgID, DeliveryID: ref.ID, Attempt: 1})
					if err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
				}
			})
		}
		ids := make([]uuid.UUID, len(refs))
		for i, ref := range refs {
			ids[i] = ref.ID
			jobs <- ref
		}
		close(jobs)
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		if err := d.MarkWebhookDeliveriesStarted(ctx, ids); err != nil {
			return err
		}
	}
}
