package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/relay"
	"github.com/commerce-integration/commerce/workflows"
)

func TestQuoteExpiryTimersRunOnTemporal(t *testing.T) {
	env := Start(t)
	ctx := context.Background()
	org, _, err := env.DB.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(domain.DateLayout)
	nextMonth := time.Now().UTC().AddDate(0, 1, 0).Format(domain.DateLayout)
	f, err := domain.ParseSeed(fmt.Appendf(nil, `{"quotes": [
		{"number": "Q-PAST", "status": "sent", "valid_until": %q},
		{"number": "Q-FUTURE", "status": "sent", "valid_until": %q},
		{"number": "Q-ACCEPTED", "status": "accepted", "valid_until": %q}]}`, yesterday, nextMonth, yesterday))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.DB.Seed(ctx, org.ID, f); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	rows, _ := env.DB.Pool().Query(ctx, `SELECT number, id::text FROM quotes`)
	for rows.Next() {
		var n, id string
		_ = rows.Scan(&n, &id)
		ids[n] = id
	}
	rows.Close()

	sweep := &relay.QuoteExpiry{DB: env.DB.DB, Workflows: env.Workflows, Log: env.Log}
	started, err := sweep.Sweep(ctx)
	if err != nil || started != 2 {
		t.Fatalf("sweep started %d timers (%v), want 2 (draft and sent quotes only)", started, err)
	}

	var res domain.ExpireQuoteResult
	run := env.Temporal.GetWorkflow(ctx, "quote-expiry/"+ids["Q-PAST"], "")
	if err := run.Get(ctx, &res); err != nil || !res.Expired {
		t.Fatalf("past quote's timer: %+v, %v", res, err)
	}
	var status string
	_ = env.DB.Pool().QueryRow(ctx, `SELECT status FROM quotes WHERE number = 'Q-PAST'`).Scan(&status)
	if status != "expired" {
		t.Fatalf("past quote is %s, want expired", status)
	}

	desc, err := env.Temporal.DescribeWorkflowExecution(ctx, "quote-expiry/"+ids["Q-FUTURE"], "")
	if err != nil || desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("future quote's timer is not waiting: %v %v", desc, err)
	}
	_ = env.DB.Pool().QueryRow(ctx, `SELECT status FROM quotes WHERE number = 'Q-FUTURE'`).Scan(&status)
	if status != "sent" {
		t.Fatalf("future quote is %s, want sent", status)
	}

	// The organisation's runs can be found by search attribute.
	query := fmt.Sprintf("%s = '%s'", workflows.OrgIDAttr.GetName(), org.ID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := env.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Namespace, Query: query})
		if err == nil && len(list.Executions) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search by %s found %v (%v), want 2 runs", query, list, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A second sweep starts nothing new.
	if again, err := sweep.Sweep(ctx); err != nil || again != 0 {
		t.Fatalf("second sweep started %d (%v)", again, err)
	}
}
