package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// A failed receipt whose replay applied reads resolved, naming the replay,
// in receipts show and list; a list of failures leaves it out unless
// --resolved asks for it.
func TestReceiptsResolvedByAReplayThroughTheCLI(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"order_ref": "SO-9", "status": "open"}`)
	failed, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org.ID, EndpointID: e.ID, Action: e.Action, ReceivedAt: time.Now().Add(-time.Minute),
		Body: body, Size: len(body), BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateReceipt(ctx, org.ID, failed, db.ReceiptUpdate{Outcome: domain.OutcomeFailed}); err != nil {
		t.Fatal(err)
	}
	replay, _, err := d.StoreReplay(ctx, db.NewReceipt{OrgID: org.ID, EndpointID: e.ID, Action: e.Action, ReceivedAt: time.Now(),
		Body: body, Size: len(body), BodyComplete: true, ReplayOf: &failed})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateReceipt(ctx, org.ID, replay, db.ReceiptUpdate{Outcome: domain.OutcomeApplied}); err != nil {
		t.Fatal(err)
	}

	var list []map[string]any
	_, out, _ := run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--status", "failed", "--json")
	mustJSON(t, out, &list)
	if len(list) != 0 {
		t.Fatalf("--status failed after the replay applied: %s, want none", out)
	}
	_, out, _ = run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--status", "failed", "--resolved", "true", "--json")
	mustJSON(t, out, &list)
	if len(list) != 1 || list[0]["id"] != failed.String() {
		t.Fatalf("--status failed --resolved true: %s", out)
	}
	res, _ := list[0]["resolution"].(map[string]any)
	if res["by"] != "replay" || res["receipt_id"] != replay.String() {
		t.Fatalf("the resolved receipt's resolution: %v, want by replay naming %s", list[0]["resolution"], replay)
	}
	if code, out, _ := run(t, d.URL, "receipts", "show", failed.String()); code != 0 || !regexp.MustCompile(`(?m)^resolved +replay `+replay.String()+` `).MatchString(out) {
		t.Fatalf("receipts show of the resolved receipt: %s", out)
	}
	if code, _, errOut := run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--resolved", "maybe"); code == 0 || !strings.Contains(errOut, "maybe") {
		t.Fatalf("--resolved maybe: %d %s, want refused naming it", code, errOut)
	}
}
