package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// The retention sweep deletes, in batches smaller than what is old, only
// what is past its age: relayed events whose deliveries are over, receipts
// that are not pending or parked (a replay with its original), attempts.
func TestPruneDeletesOnlyWhatIsPastItsRetention(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	ep, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: "o@acme.example", Name: "erp", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := d.CreateSubscription(ctx, sealer, db.NewSubscription{OrgID: org.ID, URL: "https://r.example/h"})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := d.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := d.Pool().QueryRow(ctx, sql, org.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 25 old receipts (one parked), each old applied one with an old replay;
	// 5 recent ones. 12 old events with succeeded deliveries and attempts,
	// one old event whose delivery failed, 3 recent events.
	exec(`INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, outcome)
		SELECT gen_random_uuid(), $1, $2, 'erp_order_status', now() - make_interval(days => CASE WHEN i <= 25 THEN 100 ELSE 1 END),
		       '\x7b7d', 2, CASE WHEN i = 1 THEN 'parked' ELSE 'applied' END
		FROM generate_series(1, 30) i`, org.ID, ep.ID)
	exec(`INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, outcome, replay_of)
		SELECT gen_random_uuid(), org_id, endpoint_id, action, received_at + interval '1 day', body, size_bytes, 'unchanged', id
		FROM inbound_receipts WHERE org_id = $1 AND received_at < now() - interval '50 days' AND outcome = 'applied' LIMIT 3`, org.ID)
	exec(`INSERT INTO events (id, org_id, type, data, created_at, relayed_at)
		SELECT gen_random_uuid(), $1, 'customer.created', '{}', now() - make_interval(days => CASE WHEN i <= 13 THEN 40 ELSE 1 END), now()
		FROM generate_series(1, 16) i`, org.ID)
	exec(`INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, created_at)
		SELECT gen_random_uuid(), org_id, id, $2, CASE WHEN row_number() OVER (ORDER BY id) = 1 THEN 'failed' ELSE 'succeeded' END, created_at
		FROM events WHERE org_id = $1 AND created_at < now() - interval '30 days'`, org.ID, sub.ID)
	exec(`INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, started_at, duration_ms)
		SELECT gen_random_uuid(), org_id, id, 1, now() - interval '100 days', 5 FROM webhook_deliveries WHERE org_id = $1`, org.ID)

	p, err := d.Prune(ctx, db.Retention{Events: 30 * 24 * time.Hour, Receipts: 90 * 24 * time.Hour, Attempts: 90 * 24 * time.Hour, Batch: 4}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Receipts != 24+3 || p.Events != 12 || p.Attempts != 13 {
		t.Fatalf("pruned %+v, want 27 receipts (24 old ones and 3 replays), 12 events, 13 attempts", p)
	}
	if n := count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1`); n != 6 {
		t.Fatalf("%d receipts left, want the parked one and the 5 recent ones", n)
	}
	if n := count(`SELECT count(*) FROM events WHERE org_id = $1`); n != 4 {
		t.Fatalf("%d events left, want the one whose delivery failed and the 3 recent ones", n)
	}
	if n := count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'failed'`); n != 1 {
		t.Fatal("the failed delivery went")
	}
}
