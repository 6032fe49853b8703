---- tern: disable-tx ----
-- A subscription's backlog, its deliveries not delivered yet by status,
-- read with each subscription shown: the not-delivered ones are few beside
-- the delivered, so the index holds only them. Built without blocking
-- writes; one statement, outside a transaction.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_backlog ON webhook_deliveries (org_id, subscription_id, status)
    WHERE status IN ('pending', 'failed', 'held');
