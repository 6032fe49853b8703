// Package worker wires the worker process: the Temporal worker on the
// service's task queue, with every workflow and the activities they call,
// and beside it the relays that start and wake workflows from what Postgres
// records (quote expiry timers, parked posts and matches, the events
// outbox) and the retention sweep. `commerce worker` and `commerce dev` run
// it.
package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/internal/retention"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/tracing"
	"github.com/commerce-integration/commerce/workflows"
)

// StopTimeout is how long a stopping worker lets the activities in flight
// finish (a webhook attempt takes at most 10 seconds), so a deploy drains
// deliveries instead of cutting them off to be sent again.
const StopTimeout = 30 * time.Second

// StickyTimeout is how long a workflow's next task waits for the worker
// that ran its last one (which has its history cached) before any worker
// may take it: when that worker has died, its workflows wait this long
// (Temporal's default is 5 s).
const StickyTimeout = 2 * time.Second

// StickyCacheSize is the most workflows the process keeps in the SDK's
// sticky workflow cache (its state and goroutines, so that its next task
// does not replay its history); the SDK's default is 10,000. A workflow
// evicted from it replays its history at its next task, on any worker.
// The inbound posts' workflows finish within their post; those that wait
// (parked posts, held deliveries) wait hours, well past any cache.
const StickyCacheSize = 1000

// setStickyCacheSize sets the SDK's sticky cache size (a test watches it).
var setStickyCacheSize = worker.SetStickyWorkflowCacheSize

// newWorker is the worker on the service's task queue, its sticky cache
// bounded at StickyCacheSize: the SDK's cache is one per process, sized
// when its first worker is made.
func newWorker(c client.Client) worker.Worker {
	setStickyCacheSize(StickyCacheSize)
	return worker.New(c, workflows.TaskQueue, workerOptions())
}

// workerOptions are the worker's options. Its pollers scale with the work
// waiting (the SDK's autoscaling poller behaviour: from 5, between 1 and
// 100, as the server's answers say there is more or less to take). The
// SDK's default is two workflow-task pollers, shared between the task
// queue and the worker's sticky queue: in the production shape at 16 posts
// a second that took about 12.5 workflow tasks a second from the server,
// each waiting 2.5-18 s to be taken while the processes' CPU sat partly
// idle, and the posts' answers reached the API's 20-second wait; with the
// pollers scaling, the same load was taken as it came and the posts' p99
// stayed near a second (docs/operations.md, Long runs).
func workerOptions() worker.Options {
	return worker.Options{WorkerStopTimeout: StopTimeout,
		StickyScheduleToStartTimeout: StickyTimeout,
		WorkflowTaskPollerBehavior:   worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
		ActivityTaskPollerBehavior:   worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
	}
}

// Deps are what the worker runs on.
type Deps struct {
	Cfg      config.Config
	Log      *zap.Logger
	DB       *db.DB
	Temporal client.Client
	// Workflows and Service are the process's, built once by its
	// assembly: the relays start workflows through the one, and the bulk
	// replay's activity replays through the other.
	Workflows *workflows.Client
	Service   *integrations.Service
	// Sealer opens webhook and endpoint signing secrets.
	Sealer *secrets.Sealer
	// Polling, when set, is set once the worker polls its task queue and
	// cleared when it stops (the worker's readiness).
	Polling *atomic.Bool
	// Tracing makes deliveries client spans that send their traceparent
	// (nil: off). The workflows' and activities' spans come from the
	// Temporal client's interceptors.
	Tracing *tracing.Tracing
}

// activitiesOf are the worker's activities, with what the configuration
// gives them: the key that opens webhook secrets, the delivery policy
// (COMMERCE_NIGHTLY_AT), and whether webhooks may reach private addresses;
// the bulk replay's activity replays through the process's service, and
// transformations run on its runner.
func activitiesOf(d Deps) (*activities.Activities, error) {
	delivery, err := d.Cfg.Delivery()
	if err != nil {
		return nil, err
	}
	targets, err := d.Cfg.Targets()
	if err != nil {
		return nil, err
	}
	return &activities.Activities{DB: d.DB, Log: d.Log.Named("activities"), BaseURL: d.Cfg.BaseURL,
		Sealer: d.Sealer, Webhooks: d.Tracing.Client(outbound.Client(targets)), Delivery: delivery,
		Replays: d.Service.Posts, Scripts: d.Service.Scripts.Runner}, nil
}

// Run registers the workflows and activities on the task queue and runs
// them, with the relays and the retention sweep beside them, until ctx
// ends. The namespace's search attributes are the caller's to check first.
func Run(ctx context.Context, d Deps) error {
	acts, err := activitiesOf(d)
	if err != nil {
		return err
	}
	keep, err := d.Cfg.Retention()
	if err != nil {
		return err
	}
	w := newWorker(d.Temporal)
	workflows.Register(w, acts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	if d.Polling != nil {
		d.Polling.Store(true)
		defer d.Polling.Store(false)
	}
	d.Log.Info("worker started", zap.String("task_queue", workflows.TaskQueue), zap.String("namespace", d.Cfg.TemporalNamespace))
	wf := d.Workflows
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		(&relay.QuoteExpiry{DB: d.DB, Workflows: wf, Log: d.Log.Named("relay")}).Run(ctx)
		return nil
	})
	g.Go(func() error {
		(&relay.Waiters{DB: d.DB, Workflows: wf, Log: d.Log.Named("relay")}).Run(ctx)
		return nil
	})
	g.Go(func() error {
		(&relay.Outbox{DB: d.DB, Workflows: wf, Log: d.Log.Named("outbox")}).Run(ctx)
		return nil
	})
	g.Go(func() error {
		(&relay.Receipts{DB: d.DB, Workflows: wf, Log: d.Log.Named("relay")}).Run(ctx)
		return nil
	})
	g.Go(func() error {
		backfillRefs(ctx, d)
		return nil
	})
	g.Go(func() error {
		rejudgeEndpoints(ctx, d)
		return nil
	})
	g.Go(func() error {
		(&retention.Pruner{DB: d.DB, Log: d.Log.Named("prune"), Retention: keep}).Run(ctx)
		return nil
	})
	return g.Wait()
}

// backfillRefs gives the receipts stored before references were extracted
// their refs, in the background (db.BackfillReceiptRefs), logging its
// progress; until it is done a search by reference does not find them.
// After a failure it tries again a minute later.
func backfillRefs(ctx context.Context, d Deps) {
	log := d.Log.Named("refs")
	for {
		last := time.Now()
		ran, err := d.DB.BackfillReceiptRefs(ctx, db.RefsBackfillBatch, func(p db.RefsBackfillProgress) {
			if time.Since(last) >= 10*time.Second || p.Left == 0 {
				last = time.Now()
				log.Info("receipt references backfilled", zap.Int("done", p.Done), zap.Int("left", p.Left))
			}
		})
		if err == nil || ctx.Err() != nil {
			if !ran {
				log.Info("receipt references: another process is backfilling them")
			}
			return
		}
		log.Warn("receipt references backfill failed; trying again in a minute", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
	}
}

// rejudgeEndpoints judges the failing endpoints again every minute
// (db.RejudgeFailingEndpoints), so that one whose posts stopped recovers
// once its failures are past the window.
func rejudgeEndpoints(ctx context.Context, d Deps) {
	log := d.Log.Named("endpoints")
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
		if n, err := d.DB.RejudgeFailingEndpoints(ctx); err != nil && ctx.Err() == nil {
			log.Warn("judging failing endpoints again", zap.Error(err))
		} else if n > 0 {
			log.Info("failing endpoints recovered", zap.Int("recovered", n))
		}
	}
}
