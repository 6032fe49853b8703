package temporalwork

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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

// scrape reads the server's persistence-request counters, summed by
// operation over every other label.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "persistence_requests{") && !strings.HasPrefix(line, "persistence_requests_total{") {
			continue
		}
		op := label(line, "operation")
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil || op == "" {
			continue
		}
		out[op] += v
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no persistence_requests counter", url)
	}
	return out, sc.Err()
}

func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// diff is after less before, operations that did not move left out.
func diff(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for op, v := range after {
		if d := v - before[op]; d > 0 {
			out[op] = d
		}
	}
	return out
}
