---- tern: disable-tx ----
-- The worker's sweep for receipts whose workflow never started (the API
-- process that stored them died before Temporal took the start) reads the
-- pending receipts without a run, oldest first. Built without blocking
-- writes to the table; one statement, outside a transaction.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_receipts_unstarted ON inbound_receipts (received_at)
    WHERE outcome = 'pending' AND run_id IS NULL;
