package activities_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// stepFixture is an organisation with order SO-1 (confirmed) and an
// erp_order_status endpoint that takes posts.
type stepFixture struct {
	t   *testing.T
	d   *testdb.DB
	org domain.Organisation
	ep  db.CreatedEndpoint
	a   *activities.Activities
}

func newStepFixture(t *testing.T) *stepFixture {
	d := testdb.New(t)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-1", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`))
	if _, err := d.Seed(ctx, org.ID, sf); err != nil {
		t.Fatal(err)
	}
	ep, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	return &stepFixture{t: t, d: d, org: org, ep: ep, a: &activities.Activities{DB: d.DB}}
}

// post stores a receipt of body and returns the step's input for it.
func (f *stepFixture) post(body string) domain.InboundStepInput {
	f.t.Helper()
	id, err := f.d.StoreReceipt(context.Background(), db.NewReceipt{OrgID: f.org.ID, EndpointID: f.ep.ID, Action: f.ep.Action,
		ReceivedAt: time.Now(), Body: []byte(body), Size: len(body), BodyComplete: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return domain.InboundStepInput{KeepAnswer: true,
		Post: domain.InboundInput{OrgID: f.org.ID, EndpointID: f.ep.ID, ReceiptID: id, Source: id, Action: f.ep.Action}}
}

func (f *stepFixture) receipt(id uuid.UUID) db.Receipt {
	f.t.Helper()
	r, err := f.d.GetReceipt(context.Background(), f.org.ID, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *stepFixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.d.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A post that applies comes back recorded: its receipt holds the outcome
// and the answer the workflow would have recorded, with the effect.
func TestApplyInboundStepRecordsAnAppliedPostWithItsEffect(t *testing.T) {
	f := newStepFixture(t)
	in := f.post(`{"order_ref": "SO-1", "status": "cancelled"}`)
	step, err := f.a.ApplyInboundStep(context.Background(), in)
	if err != nil || !step.Recorded || step.Refused != nil || step.Result.Outcome != domain.OutcomeApplied {
		t.Fatalf("step %+v, %v; want applied and recorded", step, err)
	}
	r := f.receipt(in.Post.ReceiptID)
	res := step.Result
	status, body := domain.InboundOutcome{Result: &res}.HTTPAnswer(in.Post.ReceiptID, in.Post.Action)
	if r.Outcome != domain.OutcomeApplied || r.StatusCode == nil || *r.StatusCode != status || r.CompletedAt == nil || !jsonEqual(t, r.Response, body) {
		t.Fatalf("receipt outcome %q, status %v, completed %v, response %s; want applied, %d, %s", r.Outcome, r.StatusCode, r.CompletedAt, r.Response, status, body)
	}
	if n := f.count(`SELECT count(*) FROM orders WHERE org_id = $1 AND status = 'cancelled'`, f.org.ID); n != 1 {
		t.Fatalf("%d orders cancelled, want 1", n)
	}
	// Run again (the local activity retried after its commit): the same
	// result, recorded again, nothing applied twice.
	again, err := f.a.ApplyInboundStep(context.Background(), in)
	if err != nil || !again.Recorded || again.Result.Outcome != domain.OutcomeApplied {
		t.Fatalf("again: %+v, %v", again, err)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type LIKE 'order.%'`, f.org.ID); n != 1 {
		t.Fatalf("%d order events after the step ran twice, want 1", n)
	}
}

// A refusal comes back in the step, recorded as failed with its message,
// and the receipt's failure is announced once.
func TestApplyInboundStepRecordsARefusal(t *testing.T) {
	f := newStepFixture(t)
	in := f.post(`{"order_ref": "SO-1", "status": "no-such-status"}`)
	step, err := f.a.ApplyInboundStep(context.Background(), in)
	if err != nil || !step.Recorded || step.Refused == nil || step.Refused.Code.Status() < 400 || step.Refused.Message == "" {
		t.Fatalf("step %+v, %v; want a refusal, recorded", step, err)
	}
	r := f.receipt(in.Post.ReceiptID)
	status, body := domain.InboundOutcome{Code: step.Refused.Code, Message: step.Refused.Message}.HTTPAnswer(in.Post.ReceiptID, in.Post.Action)
	if r.Outcome != domain.OutcomeFailed || r.Error == nil || *r.Error != step.Refused.Message || r.StatusCode == nil || *r.StatusCode != status || !jsonEqual(t, r.Response, body) {
		t.Fatalf("receipt outcome %q, error %v, status %v, response %s", r.Outcome, r.Error, r.StatusCode, r.Response)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'inbound.receipt.failed'`, f.org.ID); n != 1 {
		t.Fatalf("%d inbound.receipt.failed events, want 1", n)
	}
}

// A post that waits for a record, and a later look that applies it, are
// not the first answer: the parked step records nothing (the workflow
// records the wait), and the later one records the outcome without an
// answer, which stays the parked one.
func TestApplyInboundStepLeavesAParkedPostToTheWorkflow(t *testing.T) {
	f := newStepFixture(t)
	in := f.post(`{"order_ref": "SO-2", "status": "cancelled"}`)
	step, err := f.a.ApplyInboundStep(context.Background(), in)
	if err != nil || step.Recorded || step.Result.Outcome != domain.OutcomeParked {
		t.Fatalf("step %+v, %v; want parked, not recorded", step, err)
	}
	if r := f.receipt(in.Post.ReceiptID); r.Outcome != domain.OutcomePending || r.StatusCode != nil {
		t.Fatalf("receipt outcome %q, status %v; want it untouched", r.Outcome, r.StatusCode)
	}
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-2", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`))
	if _, err := f.d.Seed(context.Background(), f.org.ID, sf); err != nil {
		t.Fatal(err)
	}
	in.KeepAnswer = false
	if step, err = f.a.ApplyInboundStep(context.Background(), in); err != nil || !step.Recorded {
		t.Fatalf("the later look: %+v, %v", step, err)
	}
	if r := f.receipt(in.Post.ReceiptID); r.Outcome != domain.OutcomeApplied || r.StatusCode != nil {
		t.Fatalf("receipt outcome %q, status %v; want applied with no answer kept", r.Outcome, r.StatusCode)
	}
}

// The post and the outcome that ends it commit together or not at all: a
// record the database refuses leaves the post unapplied.
func TestAPostAndItsOutcomeCommitTogether(t *testing.T) {
	f := newStepFixture(t)
	in := f.post(`{"order_ref": "SO-1", "status": "cancelled"}`)
	body, err := domain.ParseInbound(in.Post.Action, []byte(`{"order_ref": "SO-1", "status": "cancelled"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, recorded, err := f.d.ApplyInboundAndRecord(context.Background(), f.org.ID, in.Post.ReceiptID, in.Post.Source, body, "",
		func(domain.InboundResult) (db.ReceiptUpdate, bool) {
			return db.ReceiptUpdate{Outcome: "not-an-outcome"}, true // the receipts' check refuses it
		})
	if err == nil {
		t.Fatalf("recorded %v with no error; want the check's refusal", recorded)
	}
	if n := f.count(`SELECT count(*) FROM orders WHERE org_id = $1 AND status = 'cancelled'`, f.org.ID); n != 0 {
		t.Fatalf("%d orders cancelled by a post whose outcome was not recorded", n)
	}
	if n := f.count(`SELECT count(*) FROM inbound_effects WHERE org_id = $1`, f.org.ID); n != 0 {
		t.Fatalf("%d effects kept of a post whose outcome was not recorded", n)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
