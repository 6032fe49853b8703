package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// erpEndpoint makes an unsigned erp_order_status endpoint.
func (f *fixture) erpEndpoint(t *testing.T) db.CreatedEndpoint {
	t.Helper()
	ep, err := f.db.CreateEndpoint(context.Background(), nil, db.NewEndpoint{OrgID: f.org.ID, AsEmail: "owner@acme.example",
		Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// A post that passes every check but whose workflow cannot be started (no
// workflow service here) answers 500 without internal text, and its receipt
// ends error, with an inbound.receipt.failed event, so that support sees it
// and can replay it.
func TestInboundPostWithoutWorkflowServiceEndsInError(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ep := f.erpEndpoint(t)
	status, h, b := f.do(http.MethodPost, "/api/in/"+ep.Token, "", strings.NewReader(`{"order_ref": "SO-1", "status": "processing"}`))
	if status != http.StatusInternalServerError || errorBody(t, b) != "Internal server error" {
		t.Fatalf("answer = %d %s, want 500 Internal server error", status, b)
	}
	id, err := uuid.Parse(h.Get("X-Receipt-Id"))
	if err != nil {
		t.Fatalf("X-Receipt-Id %q: %v", h.Get("X-Receipt-Id"), err)
	}
	r, err := f.db.GetReceipt(ctx, f.org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != domain.OutcomeError || r.StatusCode == nil || *r.StatusCode != 500 || r.Error == nil || r.CompletedAt == nil {
		t.Fatalf("receipt = outcome %s, status %v, error %v, completed %v; want error, 500, an error text, completed",
			r.Outcome, r.StatusCode, r.Error, r.CompletedAt)
	}
	if r.WorkflowID == nil || *r.WorkflowID != "inbound/"+id.String() {
		t.Fatalf("workflow id = %v, want the one it tried to start", r.WorkflowID)
	}
	var events int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE org_id = $1 AND type = 'inbound.receipt.failed'
		AND data->>'receipt_id' = $2 AND data->>'outcome' = 'error'`, f.org.ID, id.String()).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Fatalf("inbound.receipt.failed events = %d, want 1", events)
	}
}

// A post refused before any workflow runs is a receipt that names no
// workflow: there is none to look for in the Temporal UI.
func TestRefusedInboundPostNamesNoWorkflow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ep := f.erpEndpoint(t)
	status, h, b := f.do(http.MethodPost, "/api/in/"+ep.Token, "", strings.NewReader(`{"status": "processing"}`))
	if status != http.StatusBadRequest {
		t.Fatalf("answer = %d %s, want 400", status, b)
	}
	r, err := f.db.GetReceipt(ctx, f.org.ID, uuid.MustParse(h.Get("X-Receipt-Id")))
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != domain.OutcomeFailed || r.WorkflowID != nil {
		t.Fatalf("receipt = outcome %s, workflow %v; want failed and no workflow", r.Outcome, r.WorkflowID)
	}
}
