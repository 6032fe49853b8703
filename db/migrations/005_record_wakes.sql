-- Waking the workflows that wait for records by what they wait for, not by
-- organisation.

-- What a parked post waits for, as wait keys ("order:SO-1",
-- "purchase_order:P-7": domain.WaitKey): a load of records wakes the parked
-- posts whose keys it created. NULL on a post parked before this column
-- (any load of its organisation wakes it) and on a post no longer parked.
ALTER TABLE inbound_receipts ADD COLUMN waiting_keys text[];
CREATE INDEX inbound_receipts_waiting ON inbound_receipts USING gin (waiting_keys) WHERE outcome = 'parked';
CREATE INDEX inbound_receipts_parked_unkeyed ON inbound_receipts (org_id) WHERE outcome = 'parked' AND waiting_keys IS NULL;

-- The supplier invoices waiting for goods, by purchase order: a goods
-- receipt wakes the matches of its purchase order.
CREATE INDEX supplier_invoices_awaiting ON supplier_invoices (org_id, po_id) WHERE match_status = 'awaiting_receipt';

-- Wakes to send: the load that created the records writes one row per
-- waiting workflow they concern, in its transaction, and notifies
-- commerce_records; the waiters relay sends the signals in batches and
-- deletes the rows it sent, so a wake outlives a relay that was not
-- listening. kind 'inbound' names a parked post (receipt_id; keys: the
-- created keys it waits for), kind 'match' a three-way match waiting for
-- goods (po_id, invoice_ref).
CREATE TABLE record_wakes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id      uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('inbound', 'match')),
    receipt_id  uuid,
    po_id       uuid,
    invoice_ref text,
    keys        text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'inbound' AND receipt_id IS NOT NULL) OR (kind = 'match' AND po_id IS NOT NULL AND invoice_ref IS NOT NULL))
);
