package temporalwork

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Work is what Temporal was asked for: counted from workflow histories
// (every run of every workflow of the items) and from the server's
// persistence-request counters over the batch.
type Work struct {
	Events          int
	ByType          map[string]int // history events by type
	WorkflowTasks   int            // WorkflowTaskCompleted
	TasksScheduled  int            // WorkflowTaskScheduled
	Activities      int            // ActivityTaskScheduled
	LocalActivities int            // LocalActivity markers
	Versions        int            // Version markers (workflow.GetVersion)
	Timers          int            // TimerStarted
	Upserts         int            // UpsertWorkflowSearchAttributes
	Persistence     map[string]float64
}

func (w *Work) add(o Work) {
	if w.ByType == nil {
		w.ByType = map[string]int{}
	}
	w.Events += o.Events
	for k, v := range o.ByType {
		w.ByType[k] += v
	}
	w.WorkflowTasks += o.WorkflowTasks
	w.TasksScheduled += o.TasksScheduled
	w.Activities += o.Activities
	w.LocalActivities += o.LocalActivities
	w.Versions += o.Versions
	w.Timers += o.Timers
	w.Upserts += o.Upserts
}

// PersistenceTotal is every persistence request of the batch.
func (w Work) PersistenceTotal() float64 {
	var t float64
	for _, v := range w.Persistence {
		t += v
	}
	return t
}

// history counts the events of workflowID's runs, the latest first and
// then each run it continued from (none of the runs here continues as new,
// but a run that did would be counted whole).
func history(ctx context.Context, c client.Client, workflowID string) (Work, error) {
	w := Work{ByType: map[string]int{}}
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return w, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		w.Events++
		t := e.GetEventType()
		w.ByType[t.String()]++
		switch t {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			w.WorkflowTasks++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			w.TasksScheduled++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			w.Activities++
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			w.Timers++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			w.Upserts++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			switch e.GetMarkerRecordedEventAttributes().GetMarkerName() {
			case "LocalActivity":
				w.LocalActivities++
			case "Version":
				w.Versions++
			}
		}
	}
	return w, nil
}
