package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// MatchSupplierInvoice runs the three-way match of an invoice against its
// purchase order and the goods received: without a receipt yet it stays
// awaiting_receipt; otherwise its variances are recorded (none: matched) and
// supplier_invoice.matched or supplier_invoice.variance_raised is emitted.
// Matching again gives the same answer and emits nothing new.
func (d *DB) MatchSupplierInvoice(ctx context.Context, orgID, invoiceID uuid.UUID) (domain.MatchResult, error) {
	var res domain.MatchResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var poID uuid.UUID
		var amount *int64
		var qtyJSON []byte
		var tol domain.Tolerances
		err := tx.QueryRow(ctx, `
			SELECT i.id, i.invoice_ref, i.match_status, i.po_id, i.amount_minor, i.invoiced_qty,
			       o.match_qty_tolerance, o.match_amount_tolerance_pct, o.match_amount_tolerance_minor
			FROM supplier_invoices i JOIN organisations o ON o.id = i.org_id
			WHERE i.org_id = $1 AND i.id = $2 FOR UPDATE OF i`, orgID, invoiceID).
			Scan(&res.InvoiceID, &res.InvoiceRef, &res.Status, &poID, &amount, &qtyJSON, &tol.Qty, &tol.AmountPct, &tol.AmountMinor)
		if err != nil {
			return notFound(err, "supplier invoice")
		}
		if res.Status != domain.MatchAwaitingReceipt {
			res.Variances, err = invoiceVariances(ctx, tx, orgID, invoiceID)
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT l.position, l.unit_price_minor,
			       coalesce((SELECT sum(rl.qty) FROM po_receipt_lines rl
			                 WHERE rl.org_id = l.org_id AND rl.po_id = l.po_id AND rl.position = l.position), 0)
			FROM purchase_order_lines l WHERE l.org_id = $1 AND l.po_id = $2 ORDER BY l.position`, orgID, poID)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.MatchLine, error) {
			var l domain.MatchLine
			err := r.Scan(&l.Position, &l.UnitPriceMinor, &l.QtyReceived)
			return l, err
		})
		if err != nil {
			return err
		}
		qty, err := domain.ParseInvoicedQty(qtyJSON)
		if err != nil {
			return err
		}
		variances, received := domain.MatchInvoice(lines, amount, qty, tol)
		if !received {
			res.Variances = []domain.Variance{}
			return nil
		}
		res.Variances = variances
		return recordMatch(ctx, tx, orgID, invoiceID, &res)
	})
	return res, err
}

// RaiseNoReceipt records that nothing was received for an invoice within
// the time the match waits: a no_receipt variance.
func (d *DB) RaiseNoReceipt(ctx context.Context, orgID, invoiceID uuid.UUID) (domain.MatchResult, error) {
	var res domain.MatchResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id, invoice_ref, match_status FROM supplier_invoices WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			orgID, invoiceID).Scan(&res.InvoiceID, &res.InvoiceRef, &res.Status)
		if err != nil {
			return notFound(err, "supplier invoice")
		}
		if res.Status != domain.MatchAwaitingReceipt {
			res.Variances, err = invoiceVariances(ctx, tx, orgID, invoiceID)
			return err
		}
		res.Variances = []domain.Variance{{Kind: domain.VarianceNoReceipt}}
		return recordMatch(ctx, tx, orgID, invoiceID, &res)
	})
	return res, err
}

// recordMatch stores a match's variances and status (matched when there are
// none), sets that status on res, and emits the match's event.
func recordMatch(ctx context.Context, tx pgx.Tx, orgID, invoiceID uuid.UUID, res *domain.MatchResult) error {
	status := domain.MatchMatched
	for _, v := range res.Variances {
		if _, err := tx.Exec(ctx, `
			INSERT INTO supplier_invoice_variances (id, org_id, invoice_id, kind, position, expected, actual)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, NewID(), orgID, invoiceID, v.Kind, v.Position, v.Expected, v.Actual); err != nil {
			return err
		}
		status = domain.MatchVariance
	}
	if _, err := tx.Exec(ctx, `UPDATE supplier_invoices SET match_status = $3, matched_at = now() WHERE org_id = $1 AND id = $2`,
		orgID, invoiceID, status); err != nil {
		return err
	}
	res.Status = status
	kind := domain.InvoiceMatched
	if status == domain.MatchVariance {
		kind = domain.VarianceRaised
	}
	return emit(ctx, tx, orgID, kind.New(domain.SupplierInvoiceMatchData{
		InvoiceID: invoiceID, InvoiceRef: res.InvoiceRef, MatchStatus: status, Variances: res.Variances,
	}))
}

func invoiceVariances(ctx context.Context, tx pgx.Tx, orgID, invoiceID uuid.UUID) ([]domain.Variance, error) {
	rows, err := tx.Query(ctx, `SELECT kind, position, expected, actual FROM supplier_invoice_variances
		WHERE org_id = $1 AND invoice_id = $2 ORDER BY created_at, id`, orgID, invoiceID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Variance, error) {
		var v domain.Variance
		err := r.Scan(&v.Kind, &v.Position, &v.Expected, &v.Actual)
		return v, err
	})
}

// MatchKey names a supplier invoice's three-way match.
type MatchKey struct {
	OrgID      uuid.UUID
	POID       uuid.UUID
	InvoiceRef string
}
