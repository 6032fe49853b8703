-- References (docs/design.md#references): the business references a post's
-- body names, kept on its receipt as sent (refs) and, in lower case, in
-- inbound_receipt_refs, whose index serves a search by a whole reference or
-- by a prefix of one. refs is NULL on the receipts stored before this
-- migration until the backfill (db.BackfillReceiptRefs) has read their
-- bodies; adding a column without a default rewrites nothing.
ALTER TABLE inbound_receipts ADD COLUMN refs text[];

CREATE TABLE inbound_receipt_refs (
    org_id      uuid NOT NULL,
    -- byte order ("C"), so that a prefix is a range of the index
    ref         text COLLATE "C" NOT NULL,
    receipt_id  uuid NOT NULL,
    PRIMARY KEY (org_id, ref, receipt_id),
    FOREIGN KEY (org_id, receipt_id) REFERENCES inbound_receipts (org_id, id) ON DELETE CASCADE
);
-- For the cascade when receipts are pruned.
CREATE INDEX inbound_receipt_refs_receipt ON inbound_receipt_refs (org_id, receipt_id);

-- A bulk replay selects by reference too, as the list it was started from.
ALTER TABLE replay_batches ADD COLUMN ref text;
