package workflows

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// Client is the service's side of Temporal: the API, the worker's relays and
// the CLI start, join, signal, update and cancel the service's workflows
// only through it, so each workflow's ID, options, search attributes and
// memo are built in one place (the ...Options functions below).
type Client struct {
	temporal  client.Client
	namespace string
	// delivery is the policy handed to the webhook deliveries it starts;
	// nil leaves it to the worker's.
	delivery *domain.DeliveryPolicy
}

// NewClient wraps a Temporal client connected to namespace ("default" when
// empty).
func NewClient(c client.Client, namespace string) *Client {
	if namespace == "" {
		namespace = "default"
	}
	return &Client{temporal: c, namespace: namespace}
}

// WithDelivery makes the client hand p to every webhook delivery it starts
// or resends (domain.WebhookInput.Policy), and returns it.
func (c *Client) WithDelivery(p domain.DeliveryPolicy) *Client {
	c.delivery = &p
	return c
}

// describeWait bounds the look that tells a slow workflow from one that
// never started.
const describeWait = 5 * time.Second

// ErrStillRunning reports that a workflow was started (or was running) but
// did not answer within the caller's deadline: it goes on by itself.
var ErrStillRunning = errors.New("the workflow is still running")

// RunInbound starts (or joins) the workflow of a stored receipt,
// inbound/<receipt_id>, and waits until ctx ends for its first answer
// (update-with-start). When the wait ends first but the workflow exists, it
// returns ErrStillRunning; any other error means the workflow could not be
// started.
func (c *Client) RunInbound(ctx context.Context, in domain.InboundInput) (domain.InboundOutcome, error) {
	var out domain.InboundOutcome
	start := c.temporal.NewWithStartWorkflowOperation(inboundOptions(in), InboundAction, in)
	handle, err := c.temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions:          client.UpdateWorkflowOptions{UpdateName: AnswerUpdate, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err == nil {
		err = handle.Get(ctx, &out)
	}
	if err == nil {
		return out, nil
	}
	// Slow (no worker free, a long action): a workflow that runs will finish
	// on its own.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), describeWait)
	defer cancel()
	if _, derr := c.temporal.DescribeWorkflowExecution(dctx, domain.InboundWorkflowID(in.ReceiptID), ""); derr == nil {
		return out, ErrStillRunning
	}
	return out, err
}

// CancelInbound stops a parked post's workflow; the workflow records the
// cancellation on its receipt.
func (c *Client) CancelInbound(ctx context.Context, receiptID uuid.UUID) error {
	return c.temporal.CancelWorkflow(ctx, domain.InboundWorkflowID(receiptID), "")
}

// WakeInbound tells a parked post that records it waits for were created,
// with their wait keys (domain.WaitKey; none: any record). A workflow that
// has ended is not an error.
func (c *Client) WakeInbound(ctx context.Context, receiptID uuid.UUID, keys []string) error {
	return c.signalIfRunning(ctx, domain.InboundWorkflowID(receiptID), RecordCreatedSignal, domain.RecordsCreated{Keys: keys})
}

// WakeMatch tells a three-way match waiting for goods that goods were
// received against its purchase order. A workflow that has ended is not an
// error.
func (c *Client) WakeMatch(ctx context.Context, poID uuid.UUID, invoiceRef string) error {
	return c.signalIfRunning(ctx, domain.MatchWorkflowID(poID, invoiceRef), ReceiptRecordedSignal, domain.GoodsReceived{POID: &poID})
}

func (c *Client) signalIfRunning(ctx context.Context, workflowID, name string, payload any) error {
	err := c.temporal.SignalWorkflow(ctx, workflowID, "", name, payload)
	var gone *serviceerror.NotFound
	if errors.As(err, &gone) {
		return nil
	}
	return err
}

// StartWebhookDelivery starts a delivery's workflow; one that exists
// already, running or closed, is left as it is. The start asks for eager
// execution: when a worker runs on the same Temporal client (as the
// worker's outbox relay does) and has room, the server hands it the first
// workflow task in its answer, instead of dispatching it through matching.
func (c *Client) StartWebhookDelivery(ctx context.Context, ref domain.WebhookDeliveryRef) error {
	opts := webhookOptions(ref)
	opts.EnableEagerStart = true
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	_, err := c.temporal.ExecuteWorkflow(ctx, opts, WebhookDelivery,
		domain.WebhookInput{OrgID: ref.OrgID, DeliveryID: ref.ID, Attempts: ref.Attempts, Policy: c.delivery})
	return ignoreAlreadyStarted(err)
}

// ResendWebhook makes an attempt of a delivery now. A delivery still under
// way is told to attempt at once (ResendSignal); one that is over
// (succeeded or exhausted) gets a new run of one manual attempt.
func (c *Client) ResendWebhook(ctx context.Context, ref domain.WebhookDeliveryRef, over bool) error {
	opts := webhookOptions(ref)
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	opts.Memo["resend"] = true
	_, err := c.temporal.SignalWithStartWorkflow(ctx, opts.ID, ResendSignal, nil, opts, WebhookDelivery,
		domain.WebhookInput{OrgID: ref.OrgID, DeliveryID: ref.ID, Attempts: ref.Attempts, Manual: over, Policy: c.delivery})
	return err
}

// StartReplayBatch starts a bulk replay's workflow, replay-batch/<id>; one
// that exists already is left as it is.
func (c *Client) StartReplayBatch(ctx context.Context, in domain.ReplayBatchInput) error {
	_, err := c.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       domain.ReplayBatchWorkflowID(in.BatchID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(OrgIDAttr.ValueSet(in.OrgID.String())),
		Memo:                     map[string]any{"org_id": in.OrgID.String(), "batch_id": in.BatchID.String(), "dry_run": in.DryRun},
	}, ReplayBatch, in)
	return ignoreAlreadyStarted(err)
}

// StartInbound starts the workflow of a stored receipt without waiting for
// its answer (the worker's sweep of receipts whose workflow never started):
// a run that exists joins, and a run that has closed is not started again.
func (c *Client) StartInbound(ctx context.Context, in domain.InboundInput) error {
	opts := inboundOptions(in)
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	_, err := c.temporal.ExecuteWorkflow(ctx, opts, InboundAction, in)
	return ignoreAlreadyStarted(err)
}

// StartQuoteExpiry starts a quote's expiry timer; a timer that exists
// already is left as it is.
func (c *Client) StartQuoteExpiry(ctx context.Context, q domain.QuoteExpiryInput) error {
	_, err := c.temporal.ExecuteWorkflow(ctx, quoteExpiryOptions(q), QuoteExpiry, q)
	return ignoreAlreadyStarted(err)
}

func ignoreAlreadyStarted(err error) error {
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// inboundSearch and inboundMemo are what an operator finds an inbound
// post's workflows by: its own, and the three-way match it may start.
func inboundSearch(in domain.InboundInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		OrgIDAttr.ValueSet(in.OrgID.String()),
		ActionAttr.ValueSet(string(in.Action)),
		EndpointIDAttr.ValueSet(in.EndpointID.String()),
		ReceiptIDAttr.ValueSet(in.ReceiptID.String()),
	)
}

func inboundMemo(in domain.InboundInput) map[string]any {
	return map[string]any{"org_id": in.OrgID, "action": in.Action, "endpoint_id": in.EndpointID,
		"receipt_id": in.ReceiptID, "source_receipt_id": in.Source}
}

// InboundTaskTimeout is an inbound post's workflow task timeout: when the
// worker that took a task dies, the task goes to another after this long
// (Temporal's default is 10 s, which the post's sender would wait). A task
// that runs its local activities longer than this is kept alive by the SDK,
// which heartbeats it at 80% of the timeout.
const InboundTaskTimeout = 4 * time.Second

// DeliveryTaskTimeout is a delivery's workflow task timeout. A task the
// server hands to a poll whose answer never arrives (its worker died, or
// the network between them drops everything while the connection looks
// open) is given to another poll only when this timeout passes: with
// Temporal's 10 s, a delivery whose first task and its retry were both
// sent into a 15-second partition was made 20 s after it began, 5 s after
// the network healed. A slow receiver's first attempt, a local activity
// of up to 10 s, keeps its task alive by the SDK's heartbeat at 80% of
// the timeout: two or three more workflow tasks in that run's history.
const DeliveryTaskTimeout = 4 * time.Second

// inboundOptions: a second start for the same receipt joins the first.
func inboundOptions(in domain.InboundInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       domain.InboundWorkflowID(in.ReceiptID),
		TaskQueue:                TaskQueue,
		WorkflowTaskTimeout:      InboundTaskTimeout,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    inboundSearch(in),
		Memo:                     inboundMemo(in),
		StaticSummary:            in.Summary(),
	}
}

// matchOptions: the match of an invoice outlives the post that started it,
// and a second post of the same invoice finds it running.
func matchOptions(in domain.InboundInput, m domain.MatchInput) workflow.ChildWorkflowOptions {
	memo := inboundMemo(in)
	memo["invoice_id"], memo["po_id"] = m.InvoiceID, m.POID
	return workflow.ChildWorkflowOptions{
		WorkflowID:            domain.MatchWorkflowID(m.POID, m.InvoiceRef),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: inboundSearch(in),
		Memo:                  memo,
	}
}

// webhookOptions: the delivery's ID, and its event and subscription for an
// operator; callers set the reuse policy of a first start or a resend.
func webhookOptions(ref domain.WebhookDeliveryRef) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    domain.WebhookWorkflowID(ref.ID),
		TaskQueue:             TaskQueue,
		WorkflowTaskTimeout:   DeliveryTaskTimeout,
		TypedSearchAttributes: temporal.NewSearchAttributes(OrgIDAttr.ValueSet(ref.OrgID.String())),
		Memo: map[string]any{"org_id": ref.OrgID.String(), "event_id": ref.EventID.String(), "event_type": ref.EventType,
			"subscription_id": ref.SubscriptionID.String()},
		StaticSummary: ref.EventType + " to subscription " + ref.SubscriptionID.String(),
	}
}

// quoteExpiryOptions: one timer per quote, ever.
func quoteExpiryOptions(q domain.QuoteExpiryInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       domain.QuoteExpiryWorkflowID(q.QuoteID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(OrgIDAttr.ValueSet(q.OrgID.String())),
		Memo:                     map[string]any{"org_id": q.OrgID.String(), "quote_id": q.QuoteID.String()},
	}
}
