package db_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// Under per-entity ordering a round asks, of the deliveries queued behind
// a busy entity, only the first whether anything earlier holds the entity:
// with 500 of one customer's deliveries waiting behind its first, in
// flight, the admitting statement reads each waiting delivery and its
// event a few times at most (its plan, from Postgres itself, without statistics of
// the tables and with them), where asking for each delivery read the
// entity's deliveries and their events again for every one. It admits the
// other customers' deliveries and none of the busy one's.
func TestAdmissionReadsEachWaitingDeliveryOnceBehindABusyEntity(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	sub := f.subscribe(domain.EventCustomerUpdated)
	ordering := db.OrderingPerEntity
	if _, err := f.d.UpdateSubscription(ctx, f.org, sub, db.SubscriptionChange{Ordering: &ordering}); err != nil {
		t.Fatal(err)
	}
	const queued = 500
	f.exec(`INSERT INTO events (id, org_id, type, data, entity_type, entity_id, created_at)
		SELECT gen_random_uuid(), $1, 'customer.updated', '{}', 'customer', 'BUSY', clock_timestamp() FROM generate_series(0, $2)`, f.org, queued)
	f.relay()
	if first := f.claim(); len(first) != 1 {
		t.Fatalf("admitted %d, want the busy customer's first", len(first))
	}
	f.exec(`INSERT INTO events (id, org_id, type, data, entity_type, entity_id, created_at)
		SELECT gen_random_uuid(), $1, 'customer.updated', '{}', 'customer', 'C-' || n, clock_timestamp() FROM generate_series(1, 3) n`, f.org)
	f.relay()

	for _, analyzed := range []bool{false, true} {
		if analyzed {
			f.exec(`ANALYZE webhook_deliveries`)
			f.exec(`ANALYZE events`)
		}
		tx, err := f.d.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		err = tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+db.AdmitSQL(db.OrderingPerEntity), f.org, sub, domain.AwaitingAdmission, 10).Scan(&raw)
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var plans []struct {
			Plan map[string]any `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("EXPLAIN answered %s (%v)", raw, err)
		}
		if read := rowsRead(plans[0].Plan, "events"); read > 4*queued {
			t.Errorf("analyzed %v: the statement read %.0f events with %d deliveries waiting, want a few each; its plan: %s", analyzed, read, queued, raw)
		}
		if read := rowsRead(plans[0].Plan, "webhook_deliveries"); read > 4*queued {
			t.Errorf("analyzed %v: the statement read %.0f deliveries with %d waiting, want a few each; its plan: %s", analyzed, read, queued, raw)
		}
	}
	if got := f.claim(); len(got) != 3 {
		t.Fatalf("admitted %d, want the three other customers' deliveries and none of the busy one's", len(got))
	}
	if n := f.count(`SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND workflow_started_at IS NULL`, sub); n != queued {
		t.Fatalf("%d deliveries still waiting, want %d", n, queued)
	}
}
