-- Mappings (docs/mappings.md): the JavaScript that reshapes an inbound
-- endpoint's posts into its action's body, or a subscription's events into
-- its receiver's format. Each change is a new, immutable version; a version
-- without source ends mapping. The current mapping is the highest version.
CREATE TABLE mapping_versions (
    org_id     uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    owner_kind text NOT NULL CHECK (owner_kind IN ('endpoint', 'subscription')),
    owner_id   uuid NOT NULL,
    version    integer NOT NULL CHECK (version > 0),
    source     text CHECK (octet_length(source) <= 65536),
    sha256     text CHECK ((source IS NULL) = (sha256 IS NULL)),
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL,
    PRIMARY KEY (org_id, owner_kind, owner_id, version)
);

-- A receipt keeps the body as sent, and beside it the mapping version that
-- ran and the body it made, which the workflow applies.
ALTER TABLE inbound_receipts
    ADD COLUMN mapping_version integer,
    ADD COLUMN mapped_body bytea;

-- A post may now be refused by its mapping (a throw, a limit, or null).
ALTER TABLE inbound_receipts DROP CONSTRAINT inbound_receipts_stage_check;
ALTER TABLE inbound_receipts ADD CONSTRAINT inbound_receipts_stage_check
    CHECK (stage IN ('paused', 'size', 'signature', 'sender_retry', 'mapping', 'shape', 'start')) NOT VALID;
ALTER TABLE inbound_receipts VALIDATE CONSTRAINT inbound_receipts_stage_check;

-- A post whose mapping answered null is kept, ignored.
ALTER TABLE inbound_receipts DROP CONSTRAINT inbound_receipts_outcome_check;
ALTER TABLE inbound_receipts ADD CONSTRAINT inbound_receipts_outcome_check
    CHECK (outcome IN ('pending', 'applied', 'unchanged', 'parked', 'unmatched', 'cancelled', 'failed', 'error', 'ignored')) NOT VALID;
ALTER TABLE inbound_receipts VALIDATE CONSTRAINT inbound_receipts_outcome_check;

-- A subscription is deleted outright; its transformation's versions go
-- with it. (An endpoint is only ever marked deleted.)
CREATE FUNCTION delete_subscription_mappings() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM mapping_versions WHERE org_id = OLD.org_id AND owner_kind = 'subscription' AND owner_id = OLD.id;
    RETURN OLD;
END
$$;

CREATE TRIGGER delete_subscription_mappings AFTER DELETE ON webhook_subscriptions
FOR EACH ROW EXECUTE FUNCTION delete_subscription_mappings();

-- The mapping a bulk replay maps each receipt's body with again: current,
-- original, or a version number.
ALTER TABLE replay_batches ADD COLUMN mapping_version text NOT NULL DEFAULT 'current';
