---- tern: disable-tx ----
-- The receipts whose refs the backfill has still to read: none once it is
-- done, so finding that there is nothing left is one index probe. Built
-- without blocking writes to the table; one statement, outside a
-- transaction.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_receipts_refs_missing ON inbound_receipts (id) WHERE refs IS NULL;
