// Package workflows holds the Temporal workflows, durable and deterministic
// orchestration that does no I/O of its own and calls activities for
// everything that touches the world, and the client side of Temporal
// (client.go): every start, signal, update and cancel of a workflow of this
// service. It speaks the service's vocabulary (package domain) and knows the
// activities only by their signatures (Activities), so a change of storage
// cannot silently change what its histories record.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// TaskQueue is the task queue every workflow and activity runs on.
const TaskQueue = "commerce"

// outageRetry retries an activity that failed for the service's own fault
// (the database) with a growing pause, up to five minutes apart; business
// rejections are non-retryable errors and never reach it. Every activity
// that uses it bounds it with a ScheduleToCloseTimeout.
var outageRetry = &temporal.RetryPolicy{
	InitialInterval:    time.Second,
	BackoffCoefficient: 2,
	MaximumInterval:    5 * time.Minute,
}

// Register registers every workflow and the activities with a worker.
func Register(r worker.Registry, acts Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers every workflow (and no activities), under the
// names their histories record: the worker and the replay test of recorded
// histories (docs/versioning.md) both register through it.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(QuoteExpiry)
	r.RegisterWorkflow(InboundAction)
	r.RegisterWorkflow(ThreeWayMatch)
	r.RegisterWorkflow(WebhookDelivery)
	r.RegisterWorkflow(ReplayBatch)
}
