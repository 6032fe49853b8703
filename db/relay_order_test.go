package db_test

import (
	"context"
	"sync"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// Three relays taking one event at a time side by side never make an
// entity's delivery before the delivery of its earlier event exists: a
// trigger of the test's own notes each delivery inserted while an earlier
// event of its entity had none for its subscription. (Side by side without
// taking turns, one relay took an event while another held the entity's
// earlier one, and the later delivery could be admitted and arrive first.)
func TestRelaysSideBySideMakeAnEntitysDeliveriesInEventOrder(t *testing.T) {
	f := newOpsFixture(t)
	ctx := context.Background()
	f.subscribe(domain.EventCustomerUpdated)
	f.exec(`CREATE TABLE out_of_order (delivery uuid)`)
	f.exec(`CREATE FUNCTION note_out_of_order() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM events e JOIN events p ON p.org_id = e.org_id AND p.entity_type = e.entity_type AND p.entity_id = e.entity_id
			           WHERE e.id = NEW.event_id AND (p.created_at, p.id) < (e.created_at, e.id)
			             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = p.id AND d.subscription_id = NEW.subscription_id)) THEN
				INSERT INTO out_of_order VALUES (NEW.id);
			END IF;
			RETURN NEW;
		END $$`)
	f.exec(`CREATE TRIGGER note_out_of_order BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION note_out_of_order()`)
	const entities, each, relays = 4, 150, 3
	// One statement, each row its own clock_timestamp(): the events of
	// the entities interleaved, in order.
	f.exec(`INSERT INTO events (id, org_id, type, data, entity_type, entity_id, created_at)
		SELECT gen_random_uuid(), $1, 'customer.updated', '{}', 'customer', (g % $2)::text, clock_timestamp()
		FROM generate_series(1, $3::int) g`, f.org, entities, entities*each)
	var wg sync.WaitGroup
	for range relays {
		wg.Go(func() {
			for {
				n, err := f.d.RelayEvents(ctx, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if n := f.count(`SELECT count(*) FROM webhook_deliveries`); n != entities*each {
		t.Fatalf("%d deliveries, want %d", n, entities*each)
	}
	if n := f.count(`SELECT count(*) FROM out_of_order`); n != 0 {
		t.Fatalf("%d deliveries were made before the delivery of their entity's earlier event", n)
	}
}
