package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// The audit log's names: a delivery by its event type and receiver, a
// subscription by its receiver, an API key actor by the key's name; a
// record of another organisation, or one that is gone, has none.
func TestAuditNamesNameRecordsOfTheOrganisationOnly(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	sub := f.subscribe(domain.EventCustomerCreated)
	f.customersCreated(1)
	var delivery string
	if err := f.d.Pool().QueryRow(ctx, `SELECT id::text FROM webhook_deliveries WHERE org_id = $1 AND subscription_id = $2`, f.org, sub).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	key, _, err := f.d.CreateAPIKey(ctx, f.org, "ERP sync", []domain.Scope{domain.ScopeProductsRead})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := f.d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other", Currency: "EUR", OwnerEmail: "o@other.example"})
	if err != nil {
		t.Fatal(err)
	}
	theirKey, _, err := f.d.CreateAPIKey(ctx, other.ID, "theirs", []domain.Scope{domain.ScopeProductsRead})
	if err != nil {
		t.Fatal(err)
	}
	gone := uuid.NewString()
	entries := []db.AuditEntry{
		{Actor: "key:" + key.ID.String(), TargetType: "delivery", TargetID: delivery},
		{Actor: "key:" + theirKey.ID.String(), TargetType: "subscription", TargetID: sub.String()},
		{Actor: "cli:ops", TargetType: "receipt", TargetID: gone},
	}
	names, err := f.d.AuditNames(ctx, f.org, entries)
	if err != nil {
		t.Fatal(err)
	}
	if n := names["delivery:"+delivery]; n.Name != domain.EventCustomerCreated || !strings.HasPrefix(n.URL, "https://erp.example.com/hooks/") {
		t.Errorf("the delivery's name %+v", n)
	}
	if n := names["subscription:"+sub.String()]; !strings.HasPrefix(n.URL, "https://erp.example.com/hooks/") {
		t.Errorf("the subscription's name %+v", n)
	}
	if n := names["key:"+key.ID.String()]; n.Name != "ERP sync" {
		t.Errorf("the key's name %+v", n)
	}
	if n, ok := names["key:"+theirKey.ID.String()]; ok {
		t.Errorf("another organisation's key is named %+v", n)
	}
	if n, ok := names["receipt:"+gone]; ok {
		t.Errorf("a receipt that is not there is named %+v", n)
	}
}
