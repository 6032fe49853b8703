-- Each delivery carries its event's time (event_at), so that under
-- per-entity ordering an admission finds whether an earlier delivery of the
-- same entity is still open with one probe of an index in event order
-- (webhook_deliveries_entity_order, migration 030), instead of joining
-- every open delivery of the entity to its event for each delivery it
-- looks at. A nullable column without a default rewrites nothing.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS event_at timestamptz;

-- A delivery written without it (as the previous release writes them while
-- its replicas run on this schema) takes it from its event, and so does one
-- written before this migration that opens again (a resend).
CREATE OR REPLACE FUNCTION commerce_delivery_event_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT e.created_at INTO NEW.event_at FROM events e WHERE e.org_id = NEW.org_id AND e.id = NEW.event_id;
    RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS webhook_deliveries_event_at ON webhook_deliveries;
CREATE TRIGGER webhook_deliveries_event_at BEFORE INSERT OR UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (NEW.event_at IS NULL) EXECUTE FUNCTION commerce_delivery_event_at();

-- The open deliveries, the only ones the admission's check reads, take
-- theirs now.
UPDATE webhook_deliveries w SET event_at = e.created_at FROM events e
WHERE e.org_id = w.org_id AND e.id = w.event_id AND w.event_at IS NULL AND w.status IN ('pending', 'failed', 'held');
