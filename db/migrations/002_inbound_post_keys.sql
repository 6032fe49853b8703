-- Sender retries (docs/design.md#sender-retries): a post's Idempotency-Key, and on a
-- signed endpoint the v1 signature value that verified it, each name the
-- first post that carried them on the endpoint for 24 hours. A repeat is
-- answered with that post's stored answer instead of running again. A row
-- is written in the same transaction as its receipt, so of two identical
-- posts at once only one is stored.
CREATE TABLE inbound_post_keys (
    org_id       uuid NOT NULL,
    endpoint_id  uuid NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('idempotency_key', 'signature')),
    key          text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    -- SHA-256 of the first post's body: the same key with another body is refused
    body_sha256  bytea NOT NULL CHECK (length(body_sha256) = 32),
    receipt_id   uuid NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, endpoint_id, kind, key),
    FOREIGN KEY (org_id, endpoint_id) REFERENCES inbound_endpoints (org_id, id) ON DELETE CASCADE,
    FOREIGN KEY (org_id, receipt_id) REFERENCES inbound_receipts (org_id, id) ON DELETE CASCADE
);
-- Keys older than 24 hours are dropped, per endpoint, as posts arrive.
CREATE INDEX inbound_post_keys_age ON inbound_post_keys (org_id, endpoint_id, created_at);
