package db_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// An organisation holds at most its cap of subscriptions (100 unless an
// operator sets another): one more is refused as unprocessable, naming the
// cap, even when many are made at once; lowering the cap removes none.
func TestSubscriptionsPerOrganisationAreCapped(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", Currency: "EUR", OwnerEmail: "o@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other", Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	subscribe := func(orgID uuid.UUID) error {
		_, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: orgID, URL: "https://erp.example.com/hook"})
		return err
	}
	if c, err := d.GetSubscriptionCap(ctx, org.ID); err != nil || db.DefaultSubscriptionCap != 100 || c.Cap != 100 || c.Held != 0 {
		t.Fatalf("a new organisation's cap %+v, %v; want 100", c, err)
	}
	for range db.DefaultSubscriptionCap {
		if err := subscribe(org.ID); err != nil {
			t.Fatal(err)
		}
	}
	err = subscribe(org.ID)
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), "its cap of 100") {
		t.Fatalf("the 101st subscription: %v; want unprocessable, naming the cap", err)
	}
	// Another organisation's subscriptions are its own.
	if err := subscribe(other.ID); err != nil {
		t.Fatalf("another organisation: %v", err)
	}

	// Made at once, no more than the cap get through.
	if _, err := d.SetSubscriptionCap(ctx, other.ID, 5); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() { errs <- subscribe(other.ID) })
	}
	wg.Wait()
	close(errs)
	made, refused := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			made++
		case domain.ErrorCode(err) == domain.EUNPROCESSABLE && strings.Contains(domain.ErrorMessage(err), "its cap of 5"):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if made != 4 || refused != 16 {
		t.Fatalf("20 at once with 1 of 5 held: %d made, %d refused; want 4 and 16", made, refused)
	}

	// Lowered below what it holds: nothing removed, nothing added.
	c, err := d.SetSubscriptionCap(ctx, org.ID, 10)
	if err != nil || c.Cap != 10 || c.Held != 100 {
		t.Fatalf("lowered: %+v, %v", c, err)
	}
	if err := subscribe(org.ID); domain.ErrorCode(err) != domain.EUNPROCESSABLE {
		t.Fatalf("over a lowered cap: %v", err)
	}
	for _, bad := range []int{-1, 100_001} {
		if _, err := d.SetSubscriptionCap(ctx, org.ID, bad); domain.ErrorCode(err) != domain.EINVALID {
			t.Fatalf("cap %d: %v", bad, err)
		}
	}
	if _, err := d.SetSubscriptionCap(ctx, uuid.New(), 10); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("an unknown organisation: %v", err)
	}
}

// Migration 023 gives every organisation the default cap, and the
// operational events written before it keep only their subscription's
// origin.
func TestMigration023CapsOrganisationsAndCutsEventURLsToTheirOrigin(t *testing.T) {
	ctx := context.Background()
	u, conn, org, _ := olderSchema(t, 22, "erp_order_status")
	for _, ev := range []struct{ typ, data string }{
		{"webhook.subscription.failing", `{"url": "https://erp.example.com:8443/hooks/t?apikey=secret", "consecutive_failures": 5}`},
		{"webhook.subscription.recovered", `{"url": "http://erp.example.com?apikey=secret", "held_deliveries": 0}`},
		{"webhook.subscription.failing", `{"url": "https://erp.example.com", "consecutive_failures": 5}`},
		{"customer.created", `{"url": "https://kept.example.com/as/it/is?x=1"}`},
	} {
		if _, err := conn.Exec(ctx, `INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, $2, $3)`, org, ev.typ, ev.data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	var limit int
	if err := conn.QueryRow(ctx, `SELECT subscription_cap FROM organisations WHERE id = $1`, org).Scan(&limit); err != nil || limit != 100 {
		t.Fatalf("cap after the migration: %d, %v", limit, err)
	}
	rows, err := conn.Query(ctx, `SELECT type, data->>'url' FROM events WHERE org_id = $1 ORDER BY type, data->>'url'`, org)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var typ, url string
		if err := rows.Scan(&typ, &url); err != nil {
			t.Fatal(err)
		}
		got = append(got, typ+" "+url)
	}
	rows.Close()
	want := []string{"customer.created https://kept.example.com/as/it/is?x=1", "webhook.subscription.failing https://erp.example.com",
		"webhook.subscription.failing https://erp.example.com:8443", "webhook.subscription.recovered http://erp.example.com"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events after the migration:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
