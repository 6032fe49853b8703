package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Wake kinds (record_wakes.kind).
const (
	WakeInbound = "inbound" // a parked inbound post
	WakeMatch   = "match"   // a three-way match waiting for goods
)

// RecordWake is a signal to send to one waiting workflow: a parked post
// (ReceiptID, and the created keys it waits for) or a three-way match
// waiting for goods (POID, InvoiceRef).
type RecordWake struct {
	ID         int64
	OrgID      uuid.UUID
	Kind       string
	ReceiptID  *uuid.UUID
	POID       *uuid.UUID
	InvoiceRef *string
	Keys       []string
}

// anyRecord is the wait key of a parked post that any load of its
// organisation wakes: one that names no key, or was parked before wait keys
// existed.
const anyRecord = "*"

// queueWakes writes, in the transaction that created records, a wake for
// each workflow those records concern: the parked posts of the
// organisation waiting for one of keys (or for anyRecord), with the keys
// they wait for among them, and the matches waiting for goods against a
// purchase order in received. It notifies recordsChannel when it
// wrote any, so the relay sends them once the transaction commits.
func queueWakes(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, keys []string, received []uuid.UUID) error {
	if len(keys) == 0 && len(received) == 0 {
		return nil
	}
	if keys == nil {
		keys = []string{}
	}
	if received == nil {
		received = []uuid.UUID{}
	}
	_, err := tx.Exec(ctx, `
		WITH parked AS (
			INSERT INTO record_wakes (org_id, kind, receipt_id, keys)
			SELECT w.org_id, 'inbound', w.receipt_id, coalesce(array_agg(w.key ORDER BY w.key) FILTER (WHERE w.key <> $4), '{}')
			FROM inbound_receipt_waits w
			JOIN inbound_receipts r ON r.org_id = w.org_id AND r.id = w.receipt_id AND r.outcome = 'parked'
			WHERE w.org_id = $1 AND w.key = ANY ($2::text[] || $4::text)
			GROUP BY w.org_id, w.receipt_id
			RETURNING 1
		), matches AS (
			INSERT INTO record_wakes (org_id, kind, po_id, invoice_ref)
			SELECT org_id, 'match', po_id, invoice_ref FROM supplier_invoices
			WHERE org_id = $1 AND match_status = 'awaiting_receipt' AND po_id = ANY ($3::uuid[])
			RETURNING 1
		)
		SELECT pg_notify('`+recordsChannel+`', $1::text)
		WHERE EXISTS (SELECT 1 FROM parked) OR EXISTS (SELECT 1 FROM matches)`, orgID, keys, received, anyRecord)
	return err
}

// SendRecordWakes takes up to limit waiting wakes, oldest first (rows
// another relay holds are skipped), and calls send with them; the wakes
// send reports sent are deleted, in the same transaction. It returns how
// many it took: fewer than limit means none were left. A relay that fails
// midway leaves the rest for its next round.
func (d *DB) SendRecordWakes(ctx context.Context, limit int, send func([]RecordWake) (sent []int64)) (int, error) {
	var taken int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id, org_id, kind, receipt_id, po_id, invoice_ref, keys FROM record_wakes
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		wakes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RecordWake, error) {
			var w RecordWake
			err := r.Scan(&w.ID, &w.OrgID, &w.Kind, &w.ReceiptID, &w.POID, &w.InvoiceRef, &w.Keys)
			return w, err
		})
		if err != nil || len(wakes) == 0 {
			return err
		}
		taken = len(wakes)
		sent := send(wakes)
		if len(sent) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM record_wakes WHERE id = ANY ($1)`, sent)
		return err
	})
	return taken, err
}
