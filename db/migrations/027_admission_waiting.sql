---- tern: disable-tx ----
-- The deliveries waiting to be admitted (not started, pending or held), by
-- subscription, oldest first: a relay's round finds each subscription's
-- oldest from it with one probe, however many deliveries a failing
-- subscription holds. Built without blocking writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_awaiting ON webhook_deliveries (org_id, subscription_id, created_at, id)
    WHERE workflow_started_at IS NULL AND status IN ('pending', 'held');
