package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// The queries behind the CLI's record-id commands change or show a record
// only within the organisation they are given; the owner lookups name that
// organisation, and an unknown id is not found.
func TestRecordIDQueriesAreScopedByOrganisation(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	other, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other"})
	endpoint, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := d.CreateAPIKey(ctx, org.ID, "erp", domain.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://receiver.example/h"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertCustomers(ctx, org.ID, []domain.CustomerInput{{Company: "A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	refs, err := d.UnstartedWebhookDeliveries(ctx, 10)
	if err != nil || len(refs) != 1 {
		t.Fatalf("%d deliveries, %v", len(refs), err)
	}
	delivery := refs[0].ID

	for _, c := range []struct {
		name   string
		owner  func(context.Context, uuid.UUID) (uuid.UUID, error)
		id     uuid.UUID
		scoped func(orgID uuid.UUID) error
	}{
		{"endpoint", d.EndpointOrg, endpoint.ID, func(o uuid.UUID) error {
			_, err := d.SetEndpointState(ctx, o, endpoint.ID, domain.EndpointPaused)
			return err
		}},
		{"API key", d.APIKeyOrg, key.ID, func(o uuid.UUID) error {
			_, err := d.RevokeAPIKey(ctx, o, key.ID)
			return err
		}},
		{"subscription", d.SubscriptionOrg, sub.ID, func(o uuid.UUID) error {
			_, err := d.SetSubscriptionActive(ctx, o, sub.ID, false)
			return err
		}},
		{"delivery", d.WebhookDeliveryOrg, delivery, func(o uuid.UUID) error {
			_, err := d.GetWebhookDelivery(ctx, o, delivery)
			return err
		}},
	} {
		if err := c.scoped(other.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Errorf("%s through another organisation: %v, want ENOTFOUND", c.name, err)
		}
		if got, err := c.owner(ctx, c.id); err != nil || got != org.ID {
			t.Errorf("%s owner = %s, %v; want %s", c.name, got, err, org.ID)
		}
		if _, err := c.owner(ctx, db.NewID()); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Errorf("%s owner of an unknown id: %v, want ENOTFOUND", c.name, err)
		}
		if err := c.scoped(org.ID); err != nil {
			t.Errorf("%s through its own organisation: %v", c.name, err)
		}
	}
}
