---- tern: disable-tx ----
-- The open deliveries of an entity in event order: an admission under
-- per-entity ordering asks it whether anything earlier than a delivery is
-- still open with one probe. Its leading columns are those of
-- webhook_deliveries_entity_open (migration 017), which the previous
-- release's statement reads; that one goes in a later release. Built
-- without blocking writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_entity_order ON webhook_deliveries (org_id, subscription_id, entity, event_at, event_id)
    WHERE status IN ('pending', 'failed', 'held');
