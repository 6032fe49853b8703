package temporalwork

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// The waits below ask by run ID after their first call: asked by workflow
// ID alone, the server looks up the current run in persistence
// (GetCurrentExecution) on every call, and the polls would count among
// the items' requests.

// closed waits until workflowID's run has closed.
func closed(ctx context.Context, c client.Client, workflowID string) error {
	deadline := time.Now().Add(2 * time.Minute)
	runID := ""
	for time.Now().Before(deadline) {
		d, err := c.DescribeWorkflowExecution(ctx, workflowID, runID)
		if err != nil {
			return err
		}
		runID = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s still running after 2 minutes", workflowID)
}

// settled waits until workflowID's run has closed, or, open, has no
// workflow task or activity pending and a history that no longer grows
// (a parked post waiting on its timer).
func settled(ctx context.Context, c client.Client, workflowID string) error {
	deadline := time.Now().Add(2 * time.Minute)
	last, same := int64(-1), 0
	runID := ""
	for time.Now().Before(deadline) {
		d, err := c.DescribeWorkflowExecution(ctx, workflowID, runID)
		if err != nil {
			return err
		}
		info := d.GetWorkflowExecutionInfo()
		runID = info.GetExecution().GetRunId()
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return nil
		}
		if d.GetPendingWorkflowTask() == nil && len(d.GetPendingActivities()) == 0 && info.GetHistoryLength() == last {
			if same++; same >= 3 {
				return nil
			}
		} else {
			same = 0
		}
		last = info.GetHistoryLength()
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not settled after 2 minutes", workflowID)
}

// Markdown writes the per-item averages of every row: the summary, the
// history events by type, and the persistence requests by operation.
func Markdown(w io.Writer, res Result, store string, n int) {
	fmt.Fprintf(w, "Per item, the average over %d items of each kind (Temporal on %s).\n\n", n, store)
	fmt.Fprintf(w, "| kind | events | workflow tasks | activities | local activities | version markers | timers | search attribute upserts | persistence requests |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Rows {
		x := r.Work
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n", r.Kind, f(x.Events, r.Items), f(x.WorkflowTasks, r.Items),
			f(x.Activities, r.Items), f(x.LocalActivities, r.Items), f(x.Versions, r.Items), f(x.Timers, r.Items), f(x.Upserts, r.Items),
			x.PersistenceTotal()/float64(max(1, r.Items)))
	}
	fmt.Fprintf(w, "\nHistory events by type, per item:\n\n")
	matrix(w, res.Rows, func(x Work) map[string]float64 {
		m := map[string]float64{}
		for k, v := range x.ByType {
			m[k] = float64(v)
		}
		return m
	})
	fmt.Fprintf(w, "\nPersistence requests by operation, per item (the server's counters over the batch; while idle it made %.1f requests a second of its own, %s):\n\n",
		sum(res.Idle)/res.IdleFor.Seconds(), opsLine(res.Idle, res.IdleFor))
	matrix(w, res.Rows, func(x Work) map[string]float64 { return x.Persistence })
}

func f(n, items int) string { return fmt.Sprintf("%.1f", per(n, items)) }

func sum(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

func opsLine(m map[string]float64, d time.Duration) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %.1f/s", k, m[k]/d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// matrix writes one line per key (event type, operation) and one column
// per row, each cell per item.
func matrix(w io.Writer, rows []Row, of func(Work) map[string]float64) {
	keys := map[string]float64{}
	for _, r := range rows {
		for k, v := range of(r.Work) {
			keys[k] += v
		}
	}
	fmt.Fprintf(w, "| |")
	for _, r := range rows {
		fmt.Fprintf(w, " %s |", r.Kind)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(rows)))
	names := sortedKeys(keys)
	slices.SortStableFunc(names, func(a, b string) int { return int(keys[b]) - int(keys[a]) })
	for _, k := range names {
		fmt.Fprintf(w, "| %s |", k)
		for _, r := range rows {
			v := of(r.Work)[k] / float64(max(1, r.Items))
			if v == 0 {
				fmt.Fprintf(w, " |")
			} else {
				fmt.Fprintf(w, " %.1f |", v)
			}
		}
		fmt.Fprintln(w)
	}
}
