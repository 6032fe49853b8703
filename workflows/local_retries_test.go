package workflows

import (
	"context"
	"slices"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// kinds records the activities a delivery's run started, local and not,
// in order.
func kinds(e *webhookEnv) (acts, locals *[]string) {
	acts, locals = &[]string{}, &[]string{}
	e.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		*acts = append(*acts, info.ActivityType.Name)
	})
	e.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		*locals = append(*locals, info.ActivityType.Name)
	})
	return acts, locals
}

func TestARetrysAdmissionIsALocalActivity(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverOK)
	acts, locals := kinds(e)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if want := []string{deliverWebhook, admitRetry}; !slices.Equal(*acts, []string{deliverWebhook}) || !slices.Equal(*locals, want) {
		t.Fatalf("activities %v, local activities %v; want the retry's attempt and %v", *acts, *locals, want)
	}
}

func TestARunRecordedBeforeLocalRetriesRetriesThroughActivities(t *testing.T) {
	e := newWebhookEnv(receiverDown, receiverOK)
	e.OnGetVersion(localRetries, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	acts, locals := kinds(e)
	e.ExecuteWorkflow(WebhookDelivery, webhookIn)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if want := []string{admitRetry, deliverWebhook}; !slices.Equal(*acts, want) || !slices.Equal(*locals, []string{deliverWebhook}) {
		t.Fatalf("activities %v, local activities %v; want %v and the first attempt", *acts, *locals, want)
	}
}
