package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// Commands that take a record's id alone keep working without --org (the
// record's organisation is looked up), act through --org when it is given,
// and find nothing through another organisation's --org.
func TestRecordIDCommandsActWithinTheRecordsOrganisation(t *testing.T) {
	t.Setenv("COMMERCE_SECRET_KEY", strings.Repeat("ef", 32))
	ctx := context.Background()
	d := testdb.New(t)
	orgID := func(name string) string {
		_, out, _ := run(t, d.URL, "org", "create", "--name", name, "--owner-email", "owner@"+strings.ToLower(name)+".example", "--json")
		var org struct{ ID string }
		mustJSON(t, out, &org)
		return org.ID
	}
	acme, other := orgID("Acme"), orgID("Other")
	created := func(args ...string) string {
		code, out, errOut := run(t, d.URL, append(args, "--json")...)
		if code != 0 {
			t.Fatalf("%v: %s", args, errOut)
		}
		var rec struct{ ID string }
		mustJSON(t, out, &rec)
		return rec.ID
	}
	endpoint := created("endpoint", "create", "--org", acme, "--as", "owner@acme.example", "--name", "ERP", "--action", "erp_order_status")
	key := created("key", "create", "--org", acme, "--name", "erp", "--scopes", "all")
	sub := created("webhook", "add", "--org", acme, "--url", "https://8.8.8.8/hooks")
	acmeID := uuid.MustParse(acme)
	if _, err := d.UpsertCustomers(ctx, acmeID, []domain.CustomerInput{{Company: "A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	refs, _ := d.UnstartedWebhookDeliveries(ctx, 10)
	if len(refs) != 1 {
		t.Fatalf("%d deliveries", len(refs))
	}
	delivery := refs[0].ID.String()

	for _, c := range []struct {
		args  []string
		field string
		want  any
	}{
		{[]string{"endpoint", "pause", endpoint}, "state", "paused"},
		{[]string{"webhook", "disable", sub}, "active", false},
		{[]string{"webhook", "show", delivery}, "id", delivery},
		{[]string{"key", "revoke", key}, "id", key},
	} {
		if code, out, errOut := run(t, d.URL, append(c.args, "--org", other)...); code != 1 || !strings.Contains(errOut, "not found") {
			t.Errorf("%v --org <another organisation>: exit %d, %s %s; want not found", c.args, code, out, errOut)
		}
		if code, _, errOut := run(t, d.URL, append(c.args, "--org", "acme")...); code != 2 || !strings.Contains(errOut, "--org") {
			t.Errorf("%v --org acme: exit %d, %s; want a usage error", c.args, code, errOut)
		}
		for _, args := range [][]string{c.args, append(c.args, "--org", acme)} {
			code, out, errOut := run(t, d.URL, append(args, "--json")...)
			var rec map[string]any
			if code == 0 {
				mustJSON(t, out, &rec)
			}
			if code != 0 || rec[c.field] != c.want {
				t.Errorf("%v: exit %d, %s %s; want %s %v", args, code, out, errOut, c.field, c.want)
			}
		}
	}
	if code, _, errOut := run(t, d.URL, "endpoint", "pause", db.NewID().String()); code != 1 || !strings.Contains(errOut, "endpoint not found") {
		t.Errorf("an unknown endpoint: exit %d, %s", code, errOut)
	}
}
