---- tern: disable-tx ----
-- References compare ignoring case (docs/decisions.md, "References ignore
-- case"): an inbound post finds a record by lower(reference), and a load
-- wakes the parked posts whose wait keys equal its own ignoring case. These
-- indexes serve those lookups; the unique indexes on the exact spelling
-- stay, so two records may still differ only by case. Built without
-- blocking writes to the tables.
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_number_ci ON orders (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_po_ref_ci ON orders (org_id, lower(customer_po_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS quotes_number_ci ON quotes (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_number_ci ON deliveries (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_consignment_ci ON deliveries (org_id, lower(consignment_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS purchase_orders_number_ci ON purchase_orders (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS request_threads_external_ref_ci ON request_threads (org_id, lower(external_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS order_invoices_ref_ci ON order_invoices (org_id, order_id, lower(invoice_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS supplier_invoices_ref_ci ON supplier_invoices (org_id, po_id, lower(invoice_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_receipt_waits_key_ci ON inbound_receipt_waits (org_id, lower(key));

-- A failed or parked post is resolved once a replay of it (of the same
-- original) applies or finds nothing to change, or once it is cancelled on
-- purpose: resolved_by says which ('replay', 'cancel'), resolved_receipt
-- the replay that did it, resolved_at when. Lists of failures leave
-- resolved ones out unless asked. The posts resolved before these columns
-- are filled in below from their replays and cancellations. The columns
-- are added without a default, and their checks NOT VALID, so neither
-- rewrites nor scans the table under its lock.
ALTER TABLE inbound_receipts
    ADD COLUMN IF NOT EXISTS resolved_by text,
    ADD COLUMN IF NOT EXISTS resolved_receipt uuid,
    ADD COLUMN IF NOT EXISTS resolved_at timestamptz;
ALTER TABLE inbound_receipts DROP CONSTRAINT IF EXISTS inbound_receipts_resolved_by;
ALTER TABLE inbound_receipts ADD CONSTRAINT inbound_receipts_resolved_by CHECK (resolved_by IN ('replay', 'cancel')) NOT VALID;
UPDATE inbound_receipts SET resolved_by = 'cancel', resolved_at = coalesce(completed_at, received_at)
 WHERE outcome = 'cancelled' AND resolved_by IS NULL;
WITH first AS (
    SELECT DISTINCT ON (r.org_id, r.id) r.org_id, r.id, y.id AS replay, coalesce(y.completed_at, y.received_at) AS at
      FROM inbound_receipts r
      JOIN inbound_receipts y ON y.org_id = r.org_id AND y.replay_of = coalesce(r.replay_of, r.id) AND y.id <> r.id
                             AND y.outcome IN ('applied', 'unchanged') AND y.received_at >= r.received_at
     WHERE r.outcome IN ('failed', 'error', 'unmatched', 'parked') AND r.resolved_by IS NULL
     ORDER BY r.org_id, r.id, y.received_at, y.id)
UPDATE inbound_receipts r SET resolved_by = 'replay', resolved_receipt = f.replay, resolved_at = f.at
  FROM first f WHERE r.org_id = f.org_id AND r.id = f.id;

-- A failed or exhausted delivery is resolved once a resend, a recover or a
-- bulk resend of it succeeds: resent_by records which asked for the attempt
-- (and resend_batch the bulk resend), resolved_by and resolved_at are set
-- when it then succeeds.
ALTER TABLE webhook_deliveries
    ADD COLUMN IF NOT EXISTS resent_by text,
    ADD COLUMN IF NOT EXISTS resend_batch uuid,
    ADD COLUMN IF NOT EXISTS resolved_by text,
    ADD COLUMN IF NOT EXISTS resolved_at timestamptz;
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_resent_by;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_resent_by
    CHECK (resent_by IN ('resend', 'recover', 'bulk_resend') AND resolved_by IN ('resend', 'recover', 'bulk_resend')) NOT VALID;

-- A bulk resend: every failed or exhausted delivery its filters selected,
-- resent once each, with the report of what each resend did.
CREATE TABLE IF NOT EXISTS resend_batches (
    id              uuid PRIMARY KEY,
    org_id          uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    subscription_id uuid,
    statuses        text[] NOT NULL,
    event_type      text,
    created_after   timestamptz,
    created_before  timestamptz,
    created_by      text NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (org_id, id)
);
CREATE INDEX IF NOT EXISTS resend_batches_org ON resend_batches (org_id, started_at DESC, id DESC);
-- The deliveries of a bulk resend, in the order they are resent: resent_at
-- once asked for, or error (why it was not: it was no longer failed, or
-- starting its attempt failed).
CREATE TABLE IF NOT EXISTS resend_batch_items (
    org_id      uuid NOT NULL,
    batch_id    uuid NOT NULL,
    position    integer NOT NULL,
    delivery_id uuid NOT NULL,
    resent_at   timestamptz,
    error       text,
    PRIMARY KEY (org_id, batch_id, position),
    FOREIGN KEY (org_id, batch_id) REFERENCES resend_batches (org_id, id) ON DELETE CASCADE
);
