---- tern: disable-tx ----
-- The deliveries a relay admits, a subscription at a time, oldest first;
-- and the open deliveries of an entity, which hold back its later ones.
-- Built without blocking writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_entity_open ON webhook_deliveries (org_id, subscription_id, entity)
    WHERE status IN ('pending', 'failed', 'held');
