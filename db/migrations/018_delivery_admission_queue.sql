---- tern: disable-tx ----
-- A subscription's deliveries not started yet, oldest first: the queue the
-- relay admits from. Built without blocking writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_queue ON webhook_deliveries (org_id, subscription_id, created_at, id)
    WHERE workflow_started_at IS NULL;
