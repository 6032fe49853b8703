package db

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// StockLocations lists every stock location, the default first, then by code.
func (d *DB) StockLocations(ctx context.Context, orgID uuid.UUID) ([]domain.StockLocation, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT id, code, name, is_default, created_at FROM stock_locations
		WHERE org_id = $1 ORDER BY is_default DESC, code`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.StockLocation, error) {
		var l domain.StockLocation
		err := r.Scan(&l.ID, &l.Code, &l.Name, &l.IsDefault, &l.CreatedAt)
		return l, err
	})
}

// ensureDefaultLocation returns the organisation's default stock location,
// creating it ("Main warehouse") when there is none, with the code MAIN, or
// the first of MAIN-2, MAIN-3, ... that no location of the organisation
// holds (one of the first count+1 is always free).
func ensureDefaultLocation(ctx context.Context, q querier, orgID uuid.UUID) (uuid.UUID, error) {
	var id uuid.UUID
	var err error
	// A default, or a location with the chosen code, made at the same time
	// by another transaction makes the insert do nothing and leaves this
	// statement's snapshot without a default; the next try sees it.
	for range 3 {
		err = q.QueryRow(ctx, `
			WITH free AS (
				SELECT x.code FROM (
					SELECT n, CASE WHEN n = 1 THEN 'MAIN' ELSE 'MAIN-' || n END AS code
					FROM generate_series(1, (SELECT count(*) + 1 FROM stock_locations WHERE org_id = $1)) n
				) x
				WHERE NOT EXISTS (SELECT 1 FROM stock_locations WHERE org_id = $1 AND code = x.code)
				ORDER BY x.n LIMIT 1
			), created AS (
				INSERT INTO stock_locations (id, org_id, code, name, is_default)
				SELECT $2, $1, free.code, 'Main warehouse', true FROM free
				WHERE NOT EXISTS (SELECT 1 FROM stock_locations WHERE org_id = $1 AND is_default)
				ON CONFLICT DO NOTHING
				RETURNING id
			)
			SELECT id FROM created
			UNION ALL
			SELECT id FROM stock_locations WHERE org_id = $1 AND is_default
			LIMIT 1`, orgID, NewID()).Scan(&id)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	return id, err
}

// StockLineFilter narrows a stock line list.
type StockLineFilter struct {
	ProductID  *uuid.UUID
	LocationID *uuid.UUID
	SKU        string
}

// stockLineRecords reads a stock line's row, with its product's SKU, for
// the stock line list, a stock line's detail and a movement's answer.
var stockLineRecords = records[domain.StockLine]{
	table: "stock_lines", alias: "s", join: " JOIN products p ON p.org_id = s.org_id AND p.id = s.product_id",
	columns: `s.id, s.product_id, p.sku, s.location_id, s.qty_on_hand, s.unit_cost_minor, s.currency,
	s.created_at, s.updated_at`,
	fields: func(s *domain.StockLine) []any {
		return []any{&s.ID, &s.ProductID, &s.SKU, &s.LocationID, &s.QtyOnHand, &s.UnitCostMinor, &s.Currency, &s.CreatedAt, &s.UpdatedAt}
	},
}

// ListStockLines lists the organisation's stock lines, newest first.
func (d *DB) ListStockLines(ctx context.Context, orgID uuid.UUID, f StockLineFilter, p Page) ([]domain.StockLine, error) {
	c := newConds()
	c.add("s.org_id = ?", orgID)
	c.addIf(f.ProductID != nil, "s.product_id = ?", f.ProductID)
	c.addIf(f.LocationID != nil, "s.location_id = ?", f.LocationID)
	c.addIf(f.SKU != "", "p.sku = ?", f.SKU)
	return stockLineRecords.list(ctx, d.pool, c, p)
}

// movementsPerLine is how many of a stock line's newest movements its
// detail carries.
const movementsPerLine = 100

const movementColumns = `m.id, m.line_id, m.product_id, m.location_id, m.to_location_id, m.kind, m.qty, m.unit_cost_minor,
	m.balance_after, m.idempotency_key, m.reference, m.created_at`

func scanMovement(r pgx.Row) (domain.StockMovement, error) {
	var m domain.StockMovement
	err := r.Scan(&m.ID, &m.LineID, &m.ProductID, &m.LocationID, &m.ToLocationID, &m.Kind, &m.Qty, &m.UnitCostMinor,
		&m.BalanceAfter, &m.IdempotencyKey, &m.Reference, &m.CreatedAt)
	return m, err
}

// StockLine returns one of the organisation's stock lines with its newest
// movements (at most 100), including transfers into it.
func (d *DB) StockLine(ctx context.Context, orgID, id uuid.UUID) (domain.StockLineDetail, error) {
	var s domain.StockLineDetail
	err := d.detail(ctx, "stock line", stockLineRecords.into(&s.StockLine),
		[]string{
			stockLineRecords.byID(""),
			`SELECT ` + movementColumns + ` FROM stock_movements m
			 WHERE m.org_id = $1 AND (m.line_id = $2 OR m.to_line_id = $2)
			 ORDER BY m.created_at DESC, m.id DESC LIMIT ` + strconv.Itoa(movementsPerLine),
		}, []any{orgID, id},
		collect(&s.Movements, scanMovement))
	return s, err
}

// MovementFilter narrows a stock movement list. LineID matches movements
// out of and (transfers) into the line.
type MovementFilter struct {
	LineID    *uuid.UUID
	ProductID *uuid.UUID
	Kind      domain.MovementKind
}

// ListMovements lists the organisation's stock movements, newest first.
func (d *DB) ListMovements(ctx context.Context, orgID uuid.UUID, f MovementFilter, p Page) ([]domain.StockMovement, error) {
	c := newConds()
	c.add("m.org_id = ?", orgID)
	c.addIf(f.LineID != nil, "(m.line_id = ? OR m.to_line_id = ?)", f.LineID)
	c.addIf(f.ProductID != nil, "m.product_id = ?", f.ProductID)
	c.addIf(f.Kind != "", "m.kind = ?", f.Kind)
	return listPage(ctx, d.pool, `SELECT `+movementColumns+` FROM stock_movements m`, "stock_movements", "m", c, p, scanMovement)
}

// MovementResult is what a stock movement did: the movement and the stock
// lines it changed, as they stood right after it. Its JSON is kept with the
// movement (stock_movements.response) and read back for a repeated
// idempotency key, so its json tags name the stored object's keys.
type MovementResult struct {
	Movement domain.StockMovement `json:"movement"`
	Lines    []domain.StockLine   `json:"lines"`
}

// stockRef names one stock line by product and location.
type stockRef struct {
	product, location uuid.UUID
}

func (r stockRef) lockKey(org uuid.UUID) string {
	return "stock:" + org.String() + ":" + r.product.String() + ":" + r.location.String()
}

// CreateMovement applies a stock movement in one transaction. The balance
// check and the write are one conditional statement, so concurrent
// movements can never take a balance below zero (ECONFLICT instead; the
// CHECK constraint backs it). A transfer changes both lines in the same
// transaction, locking them in a fixed order. A repeated idempotency key
// returns the first result with replayed true; the same key with another
// body is ECONFLICT. The movement emits stock.movement.created.
func (d *DB) CreateMovement(ctx context.Context, orgID uuid.UUID, m domain.MovementInput) (res MovementResult, replayed bool, err error) {
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		if m.IdempotencyKey != nil {
			done, err := replayMovement(ctx, tx, orgID, m, &res)
			if err != nil || done {
				replayed = done
				return err
			}
		}
		src, err := resolveStock(ctx, tx, orgID, m)
		if err != nil {
			return err
		}
		refs := []stockRef{src}
		var dst stockRef
		if m.Kind == domain.MoveTransfer {
			dst = stockRef{product: src.product, location: *m.ToLocationID}
			if dst.location == src.location {
				return domain.Errorf(domain.EINVALID, "to_location_id is the stock's own location")
			}
			if err := locationExists(ctx, tx, orgID, dst.location, "to_location_id"); err != nil {
				return err
			}
			refs = append(refs, dst)
		}
		// Lines are locked in key order, so two transfers in opposite
		// directions cannot deadlock.
		keys := make([]string, len(refs))
		for i, r := range refs {
			keys[i] = r.lockKey(orgID)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, k); err != nil {
				return err
			}
		}

		srcLine, balance, now, err := changeStock(ctx, tx, orgID, src, m.Delta(), m.UnitCostMinor)
		if err != nil {
			return err
		}
		mv := domain.StockMovement{
			ID: NewID(), LineID: srcLine, ProductID: src.product, LocationID: src.location, Kind: m.Kind, Qty: m.Qty,
			UnitCostMinor: m.UnitCostMinor, BalanceAfter: balance, IdempotencyKey: m.IdempotencyKey, Reference: m.Reference,
			CreatedAt: domain.NewTimestamp(now),
		}
		lineIDs := []uuid.UUID{srcLine}
		var toLine *uuid.UUID
		var toBalance *float64
		if m.Kind == domain.MoveTransfer {
			id, b, _, err := changeStock(ctx, tx, orgID, dst, m.Qty, nil)
			if err != nil {
				return err
			}
			toLine, toBalance, mv.ToLocationID = &id, &b, &dst.location
			lineIDs = append(lineIDs, id)
		}
		rows, err := tx.Query(ctx, stockLineRecords.selectSQL("")+` WHERE s.org_id = $1 AND s.id = ANY($2) ORDER BY s.created_at, s.id`, orgID, lineIDs)
		if err != nil {
			return err
		}
		res.Lines, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.StockLine, error) { return stockLineRecords.scan(r) })
		if err != nil {
			return err
		}
		res.Movement = mv
		response, err := json.Marshal(res)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO stock_movements (id, org_id, line_id, product_id, location_id, to_location_id, to_line_id, kind, qty,
			                             unit_cost_minor, balance_after, to_balance_after, idempotency_key, request_hash,
			                             response, reference, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
			mv.ID, orgID, mv.LineID, mv.ProductID, mv.LocationID, mv.ToLocationID, toLine, mv.Kind, mv.Qty,
			mv.UnitCostMinor, mv.BalanceAfter, toBalance, mv.IdempotencyKey, m.Fingerprint(), response, mv.Reference, now); err != nil {
			return err
		}
		return emit(ctx, tx, orgID, domain.StockMovementCreated.New(mv))
	})
	if pe := pgError(err); pe != nil && pe.Code == codeCheckViolation {
		return res, false, domain.Errorf(domain.ECONFLICT, "the movement would take a stock balance below zero")
	}
	return res, replayed, err
}

// replayMovement answers a movement whose idempotency key was seen before.
// It takes a lock on the key first, so a concurrent first use finishes
// before this one looks.
func replayMovement(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, m domain.MovementInput, res *MovementResult) (bool, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('movement:' || $1::text || ':' || $2, 0))`,
		orgID, *m.IdempotencyKey); err != nil {
		return false, err
	}
	var hash, response []byte
	err := tx.QueryRow(ctx, `SELECT request_hash, response FROM stock_movements WHERE org_id = $1 AND idempotency_key = $2`,
		orgID, *m.IdempotencyKey).Scan(&hash, &response)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !bytes.Equal(hash, m.Fingerprint()) {
		return false, domain.Errorf(domain.ECONFLICT, "idempotency_key %q was used for a different movement", *m.IdempotencyKey)
	}
	return true, json.Unmarshal(response, res)
}

// resolveStock finds the product and location a movement names (the default
// location when only a product is named).
func resolveStock(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, m domain.MovementInput) (stockRef, error) {
	var ref stockRef
	if m.LineID != nil {
		err := tx.QueryRow(ctx, `SELECT product_id, location_id FROM stock_lines WHERE org_id = $1 AND id = $2`,
			orgID, *m.LineID).Scan(&ref.product, &ref.location)
		return ref, notFound(err, "stock line")
	}
	var productFound bool
	var location *uuid.UUID
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM products WHERE org_id = $1 AND id = $2),
		       CASE WHEN $3::uuid IS NULL THEN (SELECT id FROM stock_locations WHERE org_id = $1 AND is_default)
		            ELSE (SELECT id FROM stock_locations WHERE org_id = $1 AND id = $3) END`,
		orgID, *m.ProductID, m.LocationID).Scan(&productFound, &location)
	if err != nil {
		return ref, err
	}
	if !productFound {
		return ref, domain.Errorf(domain.ENOTFOUND, "product %s not found", *m.ProductID)
	}
	if location == nil {
		if m.LocationID != nil {
			return ref, domain.Errorf(domain.ENOTFOUND, "location_id %s not found", *m.LocationID)
		}
		id, err := ensureDefaultLocation(ctx, tx, orgID)
		if err != nil {
			return ref, err
		}
		location = &id
	}
	return stockRef{product: *m.ProductID, location: *location}, nil
}

func locationExists(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, field string) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stock_locations WHERE org_id = $1 AND id = $2)`, orgID, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return domain.Errorf(domain.ENOTFOUND, "%s %s not found", field, id)
	}
	return nil
}

// changeStock adds delta to the stock of ref and returns its line, the
// balance after and the moment it changed (taken under the line's lock, so
// the movements of a line are ordered as they were applied). A removal is
// one conditional update that refuses to go below zero; an addition creates
// the line when there is none. A receipt's unit cost becomes the line's.
func changeStock(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, ref stockRef, delta float64, unitCost *int64) (uuid.UUID, float64, time.Time, error) {
	var line uuid.UUID
	var balance float64
	var at time.Time
	if delta < 0 {
		err := tx.QueryRow(ctx, `
			UPDATE stock_lines SET qty_on_hand = qty_on_hand + $4, updated_at = clock_timestamp()
			WHERE org_id = $1 AND product_id = $2 AND location_id = $3 AND qty_on_hand + $4 >= 0
			RETURNING id, qty_on_hand, updated_at`, orgID, ref.product, ref.location, delta).Scan(&line, &balance, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			var onHand float64
			_ = tx.QueryRow(ctx, `SELECT qty_on_hand FROM stock_lines WHERE org_id = $1 AND product_id = $2 AND location_id = $3`,
				orgID, ref.product, ref.location).Scan(&onHand)
			return line, 0, at, domain.Errorf(domain.ECONFLICT, "the movement would take the balance below zero: %v on hand, %v asked",
				onHand, -delta)
		}
		return line, balance, at, err
	}
	err := tx.QueryRow(ctx, `
		INSERT INTO stock_lines AS s (id, org_id, product_id, location_id, qty_on_hand, unit_cost_minor, currency)
		SELECT $1, $2, $3, $4, $5, $6, currency FROM organisations WHERE id = $2
		ON CONFLICT (org_id, product_id, location_id) DO UPDATE SET
			qty_on_hand = s.qty_on_hand + excluded.qty_on_hand,
			unit_cost_minor = coalesce(excluded.unit_cost_minor, s.unit_cost_minor),
			updated_at = clock_timestamp()
		RETURNING id, qty_on_hand, clock_timestamp()`, NewID(), orgID, ref.product, ref.location, delta, unitCost).Scan(&line, &balance, &at)
	return line, balance, at, err
}
