---- tern: disable-tx ----
-- The receipts list filtered by outcome (failed, parked, ...), newest
-- first, reads this index in order instead of sorting every receipt of
-- the outcome. Built without blocking writes to the table.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_receipts_outcome ON inbound_receipts (org_id, outcome, received_at DESC, id DESC);
