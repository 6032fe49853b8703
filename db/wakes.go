package db

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
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
	// Keys compare ignoring case, as references do (refcase.go).
	lowered := make([]string, len(keys))
	for i, k := range keys {
		lowered[i] = strings.ToLower(k)
	}
	keys = lowered
	if received == nil {
		received = []uuid.UUID{}
	}
	_, err := tx.Exec(ctx, `
		WITH parked AS (
			INSERT INTO record_wakes (org_id, kind, receipt_id, keys)
			SELECT w.org_id, 'inbound', w.receipt_id, coalesce(array_agg(w.key ORDER BY w.key) FILTER (WHERE w.key <> $4), '{}')
			FROM inbound_receipt_waits w
			JOIN inbound_receipts r ON r.org_id = w.org_id AND r.id = w.receipt_id AND r.outcome = 'parked'
			WHERE w.org_id = $1 AND lower(w.key) = ANY ($2::text[] || $4::text)
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

// ClaimRecordWakes claims up to limit waiting wakes, oldest first, that no
// relay's claim holds, for domain.ClaimLease, in a transaction that commits
// before it returns: the caller sends them, deletes those it sent
// (DeleteRecordWakes) and releases the rest (ReleaseRecordWakes). Fewer
// than limit means none were left.
func (d *DB) ClaimRecordWakes(ctx context.Context, limit int) ([]RecordWake, error) {
	rows, err := d.pool.Query(ctx, `
		WITH c AS (
			SELECT id FROM record_wakes WHERE claimed_until IS NULL OR claimed_until < now()
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
		)
		UPDATE record_wakes w SET claimed_until = now() + make_interval(secs => $2) FROM c WHERE w.id = c.id
		RETURNING w.id, w.org_id, w.kind, w.receipt_id, w.po_id, w.invoice_ref, w.keys`, limit, domain.ClaimLease.Seconds())
	if err != nil {
		return nil, err
	}
	wakes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RecordWake, error) {
		var w RecordWake
		err := r.Scan(&w.ID, &w.OrgID, &w.Kind, &w.ReceiptID, &w.POID, &w.InvoiceRef, &w.Keys)
		return w, err
	})
	slices.SortFunc(wakes, func(a, b RecordWake) int { return cmp.Compare(a.ID, b.ID) })
	return wakes, err
}

// DeleteRecordWakes deletes wakes that were sent.
func (d *DB) DeleteRecordWakes(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `DELETE FROM record_wakes WHERE id = ANY ($1)`, ids)
	return err
}

// ReleaseRecordWakes ends a relay's claim on wakes it could not send, so
// that the next round takes them again.
func (d *DB) ReleaseRecordWakes(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `UPDATE record_wakes SET claimed_until = NULL WHERE id = ANY ($1)`, ids)
	return err
}
