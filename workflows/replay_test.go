package workflows

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The recorded histories (docs/versioning.md): one file per workflow type
// and path, <type>.<path>.json, written by
// COMMERCE_RECORD_HISTORIES=1 go test ./internal/e2e -run TestRecordHistories.
const historiesDir = "testdata/histories"

// workflowNames are the names the worker registers the workflows under,
// read from RegisterWorkflows: a workflow type added there must come with
// its recorded histories.
func workflowNames() []string {
	var r names
	RegisterWorkflows(&r)
	return r
}

// names is a workflow registry that keeps only the names registered.
type names []string

func (n *names) RegisterWorkflow(w any) {
	full := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	*n = append(*n, full[strings.LastIndex(full, ".")+1:])
}

func (n *names) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	*n = append(*n, o.Name)
}

func (n *names) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {}

type recorded struct {
	file, workflowType string
	history            *historypb.History
}

// loadHistories reads every recorded history, and checks that each file is
// named after the workflow type it records and that every workflow type has
// one.
func loadHistories(t *testing.T) []recorded {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories in %s (%v)", historiesDir, err)
	}
	var out []recorded
	seen := map[string]bool{}
	for _, file := range files {
		r, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
		_ = r.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		typ := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
		if !strings.HasPrefix(filepath.Base(file), typ+".") {
			t.Fatalf("%s records a %q workflow; name it %s.<path>.json", file, typ, typ)
		}
		seen[typ] = true
		out = append(out, recorded{file: filepath.Base(file), workflowType: typ, history: h})
	}
	for _, name := range workflowNames() {
		if !seen[name] {
			t.Errorf("no recorded history of %s", name)
		}
	}
	return out
}

// The workflows as the worker registers them replay every recorded history
// without a non-determinism error.
func TestRecordedHistoriesReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	RegisterWorkflows(r)
	for _, h := range loadHistories(t) {
		t.Run(h.file, func(t *testing.T) {
			if err := r.ReplayWorkflowHistory(nil, h.history); err != nil {
				t.Fatalf("replaying %s: %v", h.file, err)
			}
		})
	}
}

// withTimerFirst is wf with a one-second timer before its first command:
// behind the change id "replay-test-timer" when marked, without a version
// marker otherwise.
func withTimerFirst[In, Out any](wf func(workflow.Context, In) (Out, error), marked bool) func(workflow.Context, In) (Out, error) {
	return func(ctx workflow.Context, in In) (Out, error) {
		if !marked || workflow.GetVersion(ctx, "replay-test-timer", workflow.DefaultVersion, 1) == 1 {
			if err := workflow.Sleep(ctx, time.Second); err != nil {
				var zero Out
				return zero, err
			}
		}
		return wf(ctx, in)
	}
}

// changedReplayer registers every workflow, changed by withTimerFirst,
// under its production name.
func changedReplayer(marked bool) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(withTimerFirst(QuoteExpiry, marked), workflow.RegisterOptions{Name: "QuoteExpiry"})
	r.RegisterWorkflowWithOptions(withTimerFirst(InboundAction, marked), workflow.RegisterOptions{Name: "InboundAction"})
	r.RegisterWorkflowWithOptions(withTimerFirst(ThreeWayMatch, marked), workflow.RegisterOptions{Name: "ThreeWayMatch"})
	r.RegisterWorkflowWithOptions(withTimerFirst(WebhookDelivery, marked), workflow.RegisterOptions{Name: "WebhookDelivery"})
	replayBatch := func(ctx workflow.Context, in domain.ReplayBatchInput) (struct{}, error) {
		return struct{}{}, ReplayBatch(ctx, in)
	}
	r.RegisterWorkflowWithOptions(withTimerFirst(replayBatch, marked), workflow.RegisterOptions{Name: "ReplayBatch"})
	return r
}

// The replay test bites: a workflow whose command sequence changed without
// a version marker fails to replay every recorded history, with the SDK's
// non-determinism error.
func TestReplayRejectsAnUnmarkedChange(t *testing.T) {
	r := changedReplayer(false)
	quiet := log.NewStructuredLogger(slog.New(slog.DiscardHandler)) // the SDK logs each failure's stack
	for _, h := range loadHistories(t) {
		t.Run(h.file, func(t *testing.T) {
			err := r.ReplayWorkflowHistory(quiet, h.history)
			if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
				t.Fatalf("replaying %s with a timer added first: %v, want a non-determinism error", h.file, err)
			}
		})
	}
}

// The same change behind workflow.GetVersion replays every recorded
// history: the way to change a workflow safely.
func TestReplayAcceptsAChangeBehindGetVersion(t *testing.T) {
	r := changedReplayer(true)
	for _, h := range loadHistories(t) {
		t.Run(h.file, func(t *testing.T) {
			if err := r.ReplayWorkflowHistory(nil, h.history); err != nil {
				t.Fatalf("replaying %s with a timer added behind GetVersion: %v", h.file, err)
			}
		})
	}
}
