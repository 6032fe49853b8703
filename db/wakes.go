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

// queueWakes writes, in the transaction that created records, a wake for
// each workflow those records concern: the parked posts of the
// organisation whose wait keys are among keys (and those parked before
// posts had keys, which any load wakes), and the matches waiting for goods
// against a purchase order in received. It notifies recordsChannel when it
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
			SELECT org_id, 'inbound', id, ARRAY(SELECT unnest(waiting_keys) INTERSECT SELECT unnest($2::text[]))
			FROM inbound_receipts WHERE org_id = $1 AND outcome = 'parked' AND waiting_keys && $2::text[]
			UNION ALL
			SELECT org_id, 'inbound', id, '{}'
			FROM inbound_receipts WHERE org_id = $1 AND outcome = 'parked' AND waiting_keys IS NULL
			RETURNING 1
		), matches AS (
			INSERT INTO record_wakes (org_id, kind, po_id, invoice_ref)
			SELECT org_id, 'match', po_id, invoice_ref FROM supplier_invoices
			WHERE org_id = $1 AND match_status = 'awaiting_receipt' AND po_id = ANY ($3::uuid[])
			RETURNING 1
		)
		SELECT pg_notify('`+recordsChannel+`', $1::text)
		WHERE EXISTS (SELECT 1 FROM parked) OR EXISTS (SELECT 1 FROM matches)`, orgID, keys, received)
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
