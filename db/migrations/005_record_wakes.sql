-- Waking the workflows that wait for records by what they wait for, not by
-- organisation.

-- What a parked post waits for, as wait keys ("order:SO-1",
-- "purchase_order:P-7": domain.WaitKey), one row per key while the post is
-- parked: a load of records wakes the parked posts whose keys it created.
-- The key '*' is woken by any load of the organisation: it stands for a
-- post that names no key, and for the posts parked before wait keys
-- existed (below).
CREATE TABLE inbound_receipt_waits (
    org_id      uuid NOT NULL,
    receipt_id  uuid NOT NULL,
    key         text NOT NULL,
    PRIMARY KEY (org_id, receipt_id, key),
    FOREIGN KEY (org_id, receipt_id) REFERENCES inbound_receipts (org_id, id) ON DELETE CASCADE
);
CREATE INDEX inbound_receipt_waits_key ON inbound_receipt_waits (org_id, key);
INSERT INTO inbound_receipt_waits (org_id, receipt_id, key)
SELECT org_id, id, '*' FROM inbound_receipts WHERE outcome = 'parked';

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
