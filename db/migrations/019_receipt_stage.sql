-- The intake stage a post reached (docs/design.md#the-inbound-pipeline):
-- the stage that refused it, or 'start' for a post handed to its workflow.
-- Replay reads it to tell whether a post got past the signature step.
--
-- A column with a constant default is added without rewriting the table;
-- only refused posts (those that name no workflow) are read again below.
ALTER TABLE inbound_receipts ADD COLUMN stage text NOT NULL DEFAULT 'start'
    CHECK (stage IN ('paused', 'size', 'signature', 'sender_retry', 'shape', 'start'));

-- The stage of a refused post stored by a release that did not record
-- stages, read off what that release stored: a body not kept whole was
-- refused for its size, a 401 for its signature, a 409 (or no answer) while
-- the endpoint was paused, a malformed Idempotency-Key by the sender-retry
-- step, anything else for its shape.
CREATE FUNCTION receipt_stage_before_stages(status_code integer, body_complete boolean, error text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN NOT body_complete THEN 'size'
        WHEN status_code = 401 THEN 'signature'
        WHEN status_code IS NULL OR status_code = 409 THEN 'paused'
        WHEN error LIKE 'Idempotency-Key must be%' THEN 'sender_retry'
        ELSE 'shape'
    END
$$;

UPDATE inbound_receipts SET stage = receipt_stage_before_stages(status_code, body_complete, error)
WHERE workflow_id IS NULL;

-- While replicas of the release before this one still run (a rolling
-- upgrade), their refused posts arrive without a stage and take the
-- default: read it off what they stored, as above. Releases that record
-- stages always name one, so this fires for none of their posts.
CREATE FUNCTION receipt_stage_of_earlier_release() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.stage := receipt_stage_before_stages(NEW.status_code, NEW.body_complete, NEW.error);
    RETURN NEW;
END
$$;

CREATE TRIGGER receipt_stage_of_earlier_release BEFORE INSERT ON inbound_receipts
FOR EACH ROW WHEN (NEW.workflow_id IS NULL AND NEW.stage = 'start')
EXECUTE FUNCTION receipt_stage_of_earlier_release();
