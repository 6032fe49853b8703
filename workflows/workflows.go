// Package workflows holds the Temporal workflows: durable, deterministic
// orchestration that does no I/O of its own and calls activities for
// everything that touches the world. Names (task queue, workflow IDs,
// search attributes) are defined here once.
package workflows

import (
	"go.temporal.io/sdk/worker"

	"github.com/commerce-integration/commerce/activities"
)

// TaskQueue is the task queue every workflow and activity runs on.
const TaskQueue = "commerce"

// Register registers every workflow and the activities with a worker.
func Register(r worker.Registry, acts *activities.Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers every workflow (and no activities).
func RegisterWorkflows(r worker.Registry) {
	r.RegisterWorkflow(QuoteExpiry)
	r.RegisterWorkflow(InboundAction)
	r.RegisterWorkflow(ThreeWayMatch)
	r.RegisterWorkflow(WebhookDelivery)
}
