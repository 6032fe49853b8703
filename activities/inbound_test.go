package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
