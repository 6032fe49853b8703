package crash

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/commerce-integration/commerce/domain"
)

// check counts what became of each post and each delivery.
func (u *upgrade) check(ctx context.Context, answers []answer) error {
	r := &u.res
	q := u.d.Pool()
	// Per invoice reference: receipts, applied ones, invoices.
	rows, err := q.Query(ctx, `
		SELECT ref, count(*), count(*) FILTER (WHERE outcome = 'applied'),
		       (SELECT count(*) FROM order_invoices i WHERE i.org_id = $1 AND i.invoice_ref = ref)
		FROM (SELECT convert_from(body, 'UTF8')::jsonb ->> 'invoice_ref' AS ref, outcome FROM inbound_receipts
		      WHERE org_id = $1 AND replay_of IS NULL) r
		GROUP BY ref`, u.org)
	if err != nil {
		return err
	}
	type counts struct{ receipts, applied, invoices int }
	byRef := map[string]counts{}
	for rows.Next() {
		var ref string
		var c counts
		if err := rows.Scan(&ref, &c.receipts, &c.applied, &c.invoices); err != nil {
			rows.Close()
			return err
		}
		byRef[ref] = c
	}
	if err := rows.Err(); err != nil {
		return err
	}
	r.Posts, r.Parked, r.FailedPosts = u.opts.Posts, upgradeParked, upgradeFailed
	for i := range u.opts.Posts {
		ref, c := invoiceRef(i), byRef[invoiceRef(i)]
		switch {
		case c.receipts == 1 && c.applied == 1 && c.invoices == 1 && answers[i].err == nil:
			r.Applied++
		case c.receipts > 1 || c.invoices > 1:
			r.Doubled++
			r.problem("post %s doubled: %+v", ref, c)
		default:
			r.PostsLost++
			r.problem("post %s: %+v, answered %d %v", ref, c, answers[i].status, answers[i].err)
		}
	}
	for i := range upgradeParked {
		ref := fmt.Sprintf("PARK-%03d", i)
		if c := byRef[ref]; c.receipts == 1 && c.applied == 1 && c.invoices == 1 {
			r.Woken++
		} else {
			r.problem("parked post %s: %+v", ref, c)
		}
	}
	// Deliveries: each invoice event once to each subscription.
	err = q.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM events WHERE org_id = $1 AND type = $2),
		       (SELECT count(DISTINCT event_id) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $3 AND status = 'succeeded'),
		       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $3),
		       (SELECT count(DISTINCT event_id) FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $4 AND status = 'succeeded')`,
		u.org, domain.EventOrderInvoiceRecorded, u.sub, u.downSub).Scan(&r.Deliveries, &r.Delivered, new(int), &r.DownDelivered)
	if err != nil {
		return err
	}
	if got := u.rc.events(); got != r.Deliveries {
		r.problem("the healthy receiver got %d events, want %d", got, r.Deliveries)
	}
	if r.DownDelivered != r.Deliveries {
		r.problem("the failing subscription delivered %d of %d events", r.DownDelivered, r.Deliveries)
	}
	r.HeldSeen = u.heldCount()
	if r.HeldSeen == 0 || r.Nightly == 0 {
		r.problem("the failing subscription had %d held and %d awaiting the nightly retry: the rehearsal did not hold any", r.HeldSeen, r.Nightly)
	}
	if r.Matches != upgradeMatches {
		r.problem("the old release left %d of %d supplier invoices waiting for goods: the rehearsal did not hold them", r.Matches, upgradeMatches)
	} else if r.Matched != r.Matches {
		r.problem("%d of the %d matches waiting for goods across the upgrade matched once the goods came", r.Matched, r.Matches)
	}
	if r.BulkReplay == "running" || r.BulkReplay == "" {
		r.problem("the bulk replay started by the old release is %q", r.BulkReplay)
	}
	return nil
}

// checkRuns reads from Temporal every run started before cutoff (the first
// new worker) and each one's history: closed, and no workflow task failed
// for nondeterminism.
func (u *upgrade) checkRuns(ctx context.Context, cutoff time.Time) error {
	query := fmt.Sprintf("StartTime < '%s'", cutoff.UTC().Format(time.RFC3339Nano))
	var token []byte
	for {
		resp, err := u.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query, PageSize: 500, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list runs (%s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			u.res.OldRuns++
			st := e.GetStatus()
			u.res.OldByStatus[strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_")]++
			if st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				u.res.OldOpen++
				u.res.problem("run %s (%s) started by the old release is still running", e.GetExecution().GetWorkflowId(), e.GetType().GetName())
			}
			it := u.tc.GetWorkflowHistory(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return err
				}
				if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
					continue
				}
				u.res.TaskFailures++
				a := ev.GetWorkflowTaskFailedEventAttributes()
				if a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR || strings.Contains(a.GetFailure().GetMessage(), "TMPRL1100") {
					u.res.Nondeterministic++
					u.res.problem("run %s (%s): nondeterminism: %s", e.GetExecution().GetWorkflowId(), e.GetType().GetName(), a.GetFailure().GetMessage())
				}
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}
