package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// QuoteFilter narrows a quote list.
type QuoteFilter struct{ Status domain.QuoteStatus }

// quoteRecords reads a quote's row for the quote list and a quote's
// detail.
var quoteRecords = records[domain.Quote]{
	table: "quotes", alias: "q",
	columns: `q.id, q.number, q.status, q.currency, q.total_minor, q.customer_id, q.valid_until, q.sent_at, q.created_at, q.updated_at`,
	fields: func(q *domain.Quote) []any {
		return []any{&q.ID, &q.Number, &q.Status, &q.Currency, &q.TotalMinor, &q.CustomerID, &q.ValidUntil, &q.SentAt, &q.CreatedAt, &q.UpdatedAt}
	},
}

// ListQuotes lists the organisation's quotes, newest first.
func (d *DB) ListQuotes(ctx context.Context, orgID uuid.UUID, f QuoteFilter, p Page) ([]domain.Quote, error) {
	c := newConds()
	c.add("q.org_id = ?", orgID)
	c.addIf(f.Status != "", "q.status = ?", f.Status)
	return quoteRecords.list(ctx, d.pool, c, p)
}

// Quote returns one of the organisation's quotes with its lines.
func (d *DB) Quote(ctx context.Context, orgID, id uuid.UUID) (domain.QuoteDetail, error) {
	var q domain.QuoteDetail
	err := d.detail(ctx, "quote", quoteRecords.into(&q.Quote, &q.SubtotalMinor, &q.DiscountMinor, &q.VATMinor),
		[]string{
			quoteRecords.byID(`q.subtotal_minor, q.discount_minor, q.vat_minor`),
			`SELECT position, line_type, description, qty, uom, unit_price_minor, discount_pct, lead_time_days, amount_minor
			 FROM quote_lines WHERE org_id = $1 AND quote_id = $2 ORDER BY position`,
		}, []any{orgID, id},
		collect(&q.Lines, func(r pgx.Row) (domain.QuoteLine, error) {
			var l domain.QuoteLine
			err := r.Scan(&l.Position, &l.LineType, &l.Description, &l.Qty, &l.UOM, &l.UnitPriceMinor, &l.DiscountPct, &l.LeadTimeDays, &l.AmountMinor)
			return l, err
		}))
	return q, err
}

// QuotesAwaitingExpiryTimer lists draft and sent quotes with a valid_until
// whose expiry timer has not been started, oldest first, across every
// organisation (the worker's sweep).
func (d *DB) QuotesAwaitingExpiryTimer(ctx context.Context, limit int) ([]domain.QuoteExpiryInput, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT org_id, id, valid_until FROM quotes
		WHERE expiry_scheduled_at IS NULL AND valid_until IS NOT NULL AND status IN ('draft', 'sent')
		ORDER BY created_at, id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[domain.QuoteExpiryInput])
}

// MarkExpiryTimerStarted records that the quote's expiry timer runs.
func (d *DB) MarkExpiryTimerStarted(ctx context.Context, orgID, quoteID uuid.UUID) error {
	_, err := d.pool.Exec(ctx, `UPDATE quotes SET expiry_scheduled_at = now() WHERE org_id = $1 AND id = $2`, orgID, quoteID)
	return err
}

// ExpireQuote moves a draft or sent quote to expired when its valid_until
// has passed by now (a quote is valid through its valid_until date, UTC).
// A quote already in another state, or still valid, is left as it is; the
// answer says which, so the call is safe to repeat.
func (d *DB) ExpireQuote(ctx context.Context, orgID, quoteID uuid.UUID, now time.Time) (domain.ExpireQuoteResult, error) {
	var res domain.ExpireQuoteResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var status domain.QuoteStatus
		if err := tx.QueryRow(ctx, `SELECT status, valid_until FROM quotes WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			orgID, quoteID).Scan(&status, &res.ValidUntil); err != nil {
			return notFound(err, "quote")
		}
		res.Status = status
		if res.ValidUntil == nil || now.Before(domain.QuoteExpiresAt(*res.ValidUntil)) {
			return nil
		}
		if changed, err := domain.QuoteMachine.Move(status, domain.QuoteExpired); err != nil || !changed {
			return nil // accepted, declined or already expired: nothing to do
		}
		if _, err := tx.Exec(ctx, `UPDATE quotes SET status = 'expired', updated_at = now() WHERE org_id = $1 AND id = $2`,
			orgID, quoteID); err != nil {
			return err
		}
		res.Expired, res.Status = true, domain.QuoteExpired
		return nil
	})
	return res, err
}
