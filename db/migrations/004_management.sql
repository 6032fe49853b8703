-- The management API (docs/design.md#the-management-api): its audit log, webhook secret
-- rotation, bulk replays, the trace of a receipt and the retention sweeps.

-- Every management write: who (an API key, or an operator at the CLI),
-- what, on which record, and when.
CREATE TABLE audit_log (
    id           uuid PRIMARY KEY,
    org_id       uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    actor        text NOT NULL CHECK (length(actor) BETWEEN 1 AND 300),
    action       text NOT NULL CHECK (length(action) BETWEEN 1 AND 100),
    target_type  text NOT NULL,
    target_id    text NOT NULL,
    detail       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, id)
);
CREATE INDEX audit_log_org ON audit_log (org_id, created_at DESC, id DESC);

-- Rotation: the secret replaced keeps signing (a second v1) until
-- previous_secret_expires_at, sealed to the same row as the current one.
ALTER TABLE webhook_subscriptions
    ADD COLUMN previous_secret_sealed bytea,
    ADD COLUMN previous_secret_expires_at timestamptz;

-- The last four characters of an endpoint's token, so support can tell
-- endpoints apart without the token (stored only as a hash).
ALTER TABLE inbound_endpoints ADD COLUMN token_hint text;

-- The events an inbound post's effect emitted: the transaction that applies
-- a post sets commerce.receipt_id (the post whose effect it is), and every
-- event it writes carries it.
ALTER TABLE events ADD COLUMN receipt_id uuid
    DEFAULT nullif(current_setting('commerce.receipt_id', true), '')::uuid;
CREATE INDEX events_receipt ON events (org_id, receipt_id) WHERE receipt_id IS NOT NULL;
CREATE INDEX events_type ON events (org_id, type, created_at DESC, id DESC);
-- Retention sweeps delete by age across organisations.
CREATE INDEX events_age ON events (created_at);
CREATE INDEX inbound_receipts_age ON inbound_receipts (received_at);
CREATE INDEX webhook_attempts_age ON webhook_attempts (started_at);
-- Receipts of the whole organisation, newest first, and the replays of one.
CREATE INDEX inbound_receipts_org ON inbound_receipts (org_id, received_at DESC, id DESC);
CREATE INDEX inbound_receipts_replays ON inbound_receipts (org_id, replay_of) WHERE replay_of IS NOT NULL;
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (org_id, subscription_id, created_at DESC, id DESC);

-- A bulk replay, carried out by workflow replay-batch/<id>.
CREATE TABLE replay_batches (
    id              uuid PRIMARY KEY,
    org_id          uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    endpoint_id     uuid,
    outcomes        text[] NOT NULL,
    received_after  timestamptz,
    received_before timestamptz,
    dry_run         boolean NOT NULL DEFAULT false,
    status          text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'stopped')),
    created_by      text NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (org_id, id)
);
CREATE INDEX replay_batches_org ON replay_batches (org_id, started_at DESC, id DESC);

-- The receipts of a batch, each replayed at most once: the replay's receipt
-- is stored in the same transaction that sets replay_receipt_id here, and
-- only while it is null, so a worker that dies and is replaced never
-- replays a receipt of the batch twice.
CREATE TABLE replay_batch_items (
    org_id            uuid NOT NULL,
    batch_id          uuid NOT NULL,
    position          integer NOT NULL,
    receipt_id        uuid NOT NULL,
    replay_receipt_id uuid,
    -- applied, unchanged, parked, failed (the replay did not go through),
    -- skipped (the replay rules refused it)
    outcome           text CHECK (outcome IN ('applied', 'unchanged', 'parked', 'failed', 'skipped')),
    reason            text,
    done_at           timestamptz,
    PRIMARY KEY (org_id, batch_id, receipt_id),
    UNIQUE (org_id, batch_id, position),
    FOREIGN KEY (org_id, batch_id) REFERENCES replay_batches (org_id, id) ON DELETE CASCADE
);
CREATE INDEX replay_batch_items_todo ON replay_batch_items (org_id, batch_id, position) WHERE done_at IS NULL;
