package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// Whoever can start workflows can pass any input: the apply activity loads
// its receipt within the input's organisation and runs only what that
// receipt bears out, so an input naming another organisation, another
// action or another post to key effects by changes nothing.
func TestApplyInboundRunsOnlyWhatItsReceiptBearsOut(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other", OwnerEmail: "owner@other.example"})
	if err != nil {
		t.Fatal(err)
	}
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-1", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`))
	for _, o := range []domain.Organisation{org, other} {
		if _, err := d.Seed(ctx, o.ID, sf); err != nil {
			t.Fatal(err)
		}
	}
	ep, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"order_ref": "SO-1", "status": "cancelled"}`
	receipt, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org.ID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: time.Now(),
		Body: []byte(body), Size: len(body), BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	a := &activities.Activities{DB: d.DB}
	honest := domain.InboundInput{OrgID: org.ID, EndpointID: ep.ID, ReceiptID: receipt, Source: receipt, Action: ep.Action}
	forOther, otherAction, otherSource := honest, honest, honest
	forOther.OrgID = other.ID
	otherAction.Action = domain.ActionOrderInvoice
	otherSource.Source = other.ID
	for name, in := range map[string]domain.InboundInput{"another organisation": forOther, "another action": otherAction, "another source": otherSource} {
		_, err := a.ApplyInbound(ctx, in)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || !app.NonRetryable() {
			t.Errorf("%s: %v, want a non-retryable refusal", name, err)
		}
	}
	var cancelled int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM orders WHERE status = 'cancelled'`).Scan(&cancelled); err != nil {
		t.Fatal(err)
	}
	if cancelled != 0 {
		t.Fatalf("%d orders cancelled by inputs their receipt does not bear out", cancelled)
	}
	if res, err := a.ApplyInbound(ctx, honest); err != nil || res.Outcome != domain.OutcomeApplied {
		t.Fatalf("the honest input: %+v, %v", res, err)
	}
}

// A replay of a post that was applied changes nothing and says so
// (unchanged, no changes, as its dry run does), where it used to repeat the
// original's result; a retry of the run that applied a post still answers
// what that run did, and a replay that applies a failed post is the run
// that applied it.
func TestAReplayOfAnAppliedPostIsUnchanged(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	a := &activities.Activities{DB: d.DB}
	store := func(replayOf *uuid.UUID) uuid.UUID {
		t.Helper()
		body := `{"order_ref": "SO-1", "status": "cancelled"}`
		id, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org.ID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: time.Now(),
			Body: []byte(body), Size: len(body), BodyComplete: true, ReplayOf: replayOf})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	apply := func(receipt, source uuid.UUID) domain.InboundResult {
		t.Helper()
		res, err := a.ApplyInbound(ctx, domain.InboundInput{OrgID: org.ID, EndpointID: ep.ID, ReceiptID: receipt, Source: source, Action: ep.Action})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-1", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`))
	if _, err := d.Seed(ctx, org.ID, sf); err != nil {
		t.Fatal(err)
	}
	original := store(nil)
	if res := apply(original, original); res.Outcome != domain.OutcomeApplied || len(res.Changes) == 0 {
		t.Fatalf("the original: %+v", res)
	}
	if res := apply(original, original); res.Outcome != domain.OutcomeApplied || len(res.Changes) == 0 {
		t.Fatalf("a retry of the original's run: %+v", res)
	}
	replay := store(&original)
	for range 2 { // the replay's run, and a retry of it
		if res := apply(replay, original); res.Outcome != domain.OutcomeUnchanged || len(res.Changes) != 0 {
			t.Fatalf("the replay of an applied post: %+v", res)
		}
	}
	var events int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE org_id = $1 AND type LIKE 'order.%'`, org.ID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Fatalf("%d order events, want the original's one", events)
	}
}
