-- Incremental sync (docs/decisions.md): the records a client mirrors carry
-- updated_at, stamped by one trigger on insert and on every update that
-- changes the row. The stamp is clock_timestamp(), the time the row is
-- written, so it is never before the start of the transaction writing it:
-- the updated_since walk stops short of the oldest transaction still
-- writing to the table (its sync horizon), so a row committed late with an
-- early stamp is not skipped. An update that leaves every other column as it
-- was keeps the stamp.
CREATE FUNCTION stamp_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := OLD.updated_at;
        IF NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
    END IF;
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END $$;

ALTER TABLE suppliers ADD COLUMN updated_at timestamptz NOT NULL DEFAULT clock_timestamp();

-- Each mirrored table: the stamp, and its index for the updated_since walk
-- (oldest change first, ties by id).
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['products', 'customers', 'quotes', 'orders', 'stock_lines', 'deliveries', 'suppliers',
                             'purchase_orders'] LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN updated_at SET DEFAULT clock_timestamp()', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION stamp_updated_at()',
                       t || '_updated_at', t);
        EXECUTE format('CREATE INDEX %I ON %I (org_id, updated_at, id)', t || '_updated', t);
    END LOOP;
END $$;

-- Client retries on the REST API (docs/decisions.md), as inbound posts have
-- them (002):
-- a POST's Idempotency-Key names, for 24 hours, the first request that
-- carried it from the same API key of the organisation. The row is claimed
-- (status_code null) before the request runs and holds its answer once it
-- has one; an answer of 5xx frees it. request_sha256 is SHA-256 of the
-- method, path and body: the same key with another request is refused.
CREATE TABLE api_idempotency_keys (
    org_id          uuid NOT NULL,
    api_key_id      uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    key             text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_sha256  bytea NOT NULL CHECK (length(request_sha256) = 32),
    created_at      timestamptz NOT NULL DEFAULT now(),
    status_code     int CHECK (status_code BETWEEN 100 AND 499),
    -- the answer's headers that matter (Content-Type, Location)
    headers         jsonb,
    -- null with a status when the answer was too large to keep
    response        bytea,
    PRIMARY KEY (org_id, api_key_id, key),
    FOREIGN KEY (org_id) REFERENCES organisations (id) ON DELETE CASCADE
);
-- Keys older than 24 hours are dropped, per organisation, as requests arrive.
CREATE INDEX api_idempotency_keys_age ON api_idempotency_keys (org_id, created_at);
