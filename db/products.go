package db

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/commerce-integration/commerce/domain"
)

// ProductFilter narrows a product list. Search matches title, SKU and
// category (case-insensitive substring); SKU and Category match exactly.
type ProductFilter struct {
	Search   string
	SKU      string
	Category string
}

const productColumns = `id, sku, title, category, uom, price_minor, currency, stock_qty, lead_time_days, attrs, status, external_id, updated_at`

func scanProduct(row pgx.Row) (domain.Product, error) {
	var p domain.Product
	err := row.Scan(&p.ID, &p.SKU, &p.Title, &p.Category, &p.UOM, &p.PriceMinor, &p.Currency, &p.StockQty,
		&p.LeadTimeDays, &p.Attrs, &p.Status, &p.ExternalID, &p.UpdatedAt)
	return p, err
}

// ListProducts returns up to limit+1 of the organisation's products in SKU
// order, after the SKU afterSKU when it is not empty. The extra row tells the
// caller whether another page follows.
func (d *DB) ListProducts(ctx context.Context, orgID uuid.UUID, f ProductFilter, afterSKU string, limit int) ([]domain.Product, error) {
	c := productConds(orgID, f)
	c.addIf(afterSKU != "", "sku > ?", afterSKU)
	rows, err := d.pool.Query(ctx, `SELECT `+productColumns+` FROM products WHERE `+c.where()+
		` ORDER BY sku LIMIT `+c.param(limit+1), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Product, error) { return scanProduct(r) })
}

// ListChangedProducts walks the organisation's products changed at or after
// p.Since, oldest change first (see listPage).
func (d *DB) ListChangedProducts(ctx context.Context, orgID uuid.UUID, f ProductFilter, p Page) ([]domain.Product, error) {
	return listPage(ctx, d.pool, `SELECT `+productColumns+` FROM products p`, "products", "p", productConds(orgID, f), p, scanProduct)
}

func productConds(orgID uuid.UUID, f ProductFilter) *conds {
	c := newConds()
	c.add("org_id = ?", orgID)
	c.addIf(f.SKU != "", "sku = ?", f.SKU)
	c.addIf(f.Category != "", "category = ?", f.Category)
	c.addIf(f.Search != "", "(title || chr(31) || sku || chr(31) || coalesce(category, '')) ILIKE ?", searchPattern(f.Search))
	return c
}

// UpsertResult counts what a products upsert did.
type UpsertResult struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

// lockProducts serialises product writes of one organisation for the rest of
// the transaction, so the plan-cap check and the write see the same catalogue.
func lockProducts(ctx context.Context, tx pgx.Tx, orgID uuid.UUID) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('products:' || $1::text, 0))`, orgID)
	return err
}

// incomingProducts receives a batch by COPY, for one upsert statement.
const incomingProducts = `
CREATE TEMP TABLE incoming_products (
	id uuid, sku text COLLATE "C", title text, category text, uom text, price_minor bigint, currency text,
	stock_qty numeric, lead_time_days int, attrs jsonb, status text, external_id text
) ON COMMIT DROP`

var incomingColumns = []string{"id", "sku", "title", "category", "uom", "price_minor", "currency", "stock_qty",
	"lead_time_days", "attrs", "status", "external_id"}

// copyIncoming copies productCopy's stream into incoming_products.
var copyIncoming = "COPY incoming_products (" + strings.Join(incomingColumns, ", ") + ") FROM STDIN BINARY"

// upsertProductsSQL writes the whole batch in one statement: existing SKUs
// are updated, and a row whose values did not change is not rewritten (and
// not returned).
const upsertProductsSQL = `
INSERT INTO products AS p (id, org_id, sku, title, category, uom, price_minor, currency, stock_qty,
                           lead_time_days, attrs, status, external_id)
SELECT id, $1, sku, title, category, uom, price_minor, currency, stock_qty, lead_time_days, attrs, status, external_id
FROM incoming_products
ON CONFLICT (org_id, sku) DO UPDATE SET
	title = excluded.title, category = excluded.category, uom = excluded.uom, price_minor = excluded.price_minor,
	currency = excluded.currency, stock_qty = excluded.stock_qty, lead_time_days = excluded.lead_time_days,
	attrs = excluded.attrs, status = excluded.status, external_id = excluded.external_id, updated_at = now()
WHERE (p.title, p.category, p.uom, p.price_minor, p.currency, p.stock_qty, p.lead_time_days, p.attrs, p.status, p.external_id)
      IS DISTINCT FROM
      (excluded.title, excluded.category, excluded.uom, excluded.price_minor, excluded.currency, excluded.stock_qty,
       excluded.lead_time_days, excluded.attrs, excluded.status, excluded.external_id)
RETURNING p.sku, (p.xmax = 0) AS inserted`

// UpsertProducts creates or updates products by SKU in one set-based
// statement and emits one products.upserted event for the batch, in the same
// transaction. When the organisation's products would then pass its plan
// cap, the transaction is rolled back and nothing is written (EPAYMENT): the
// cap is checked from what the statement inserted, so a batch that adds no
// SKU never counts the catalogue.
func (d *DB) UpsertProducts(ctx context.Context, orgID uuid.UUID, products []domain.ProductInput) (UpsertResult, error) {
	var res UpsertResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = upsertProducts(ctx, tx, orgID, products)
		return err
	})
	return res, err
}

// upsertProducts is UpsertProducts within the caller's transaction.
func upsertProducts(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, products []domain.ProductInput) (UpsertResult, error) {
	var res UpsertResult
	ids, err := newIDs(len(products))
	if err != nil {
		return res, err
	}
	if err := lockProducts(ctx, tx, orgID); err != nil {
		return res, err
	}
	if _, err := tx.Exec(ctx, incomingProducts); err != nil {
		return res, err
	}
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, newProductCopy(products, ids), copyIncoming); err != nil {
		return res, err
	}
	written, err := tx.Query(ctx, upsertProductsSQL, orgID)
	if err != nil {
		return res, err
	}
	changed := []string{}
	for written.Next() {
		var sku string
		var inserted bool
		if err := written.Scan(&sku, &inserted); err != nil {
			written.Close()
			return res, err
		}
		changed = append(changed, sku)
		if inserted {
			res.Created++
		} else {
			res.Updated++
		}
	}
	if err := written.Err(); err != nil {
		return res, err
	}
	res.Unchanged = len(products) - res.Created - res.Updated
	if res.Created > 0 {
		var total, productCap int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM products WHERE org_id = $1), product_cap FROM organisations WHERE id = $1`,
			orgID).Scan(&total, &productCap); err != nil {
			return res, err
		}
		if total > productCap {
			return UpsertResult{}, domain.Errorf(domain.EPAYMENT, "%d existing products and %d new ones would pass the plan's cap of %d products",
				total-res.Created, res.Created, productCap)
		}
	}
	return res, emit(ctx, tx, orgID, domain.ProductsUpserted.New(domain.ProductsUpsertedData{
		Created: res.Created, Updated: res.Updated, Unchanged: res.Unchanged, SKUs: changed,
	}))
}

// UpsertProducts carries out a upsert_products post (domain.ActionApplier).
func (a *actor) UpsertProducts(b domain.ProductsBody) (domain.InboundResult, error) {
	var currency string
	if err := a.tx.QueryRow(a.ctx, `SELECT currency FROM organisations WHERE id = $1`, a.org).Scan(&currency); err != nil {
		return domain.InboundResult{}, err
	}
	var schema *domain.CatalogueSchema
	if b.SchemaID != nil {
		id, err := uuid.Parse(*b.SchemaID)
		if err != nil {
			return domain.InboundResult{}, domain.Errorf(domain.EINVALID, "schema_id is not a UUID")
		}
		var s domain.CatalogueSchema
		err = a.tx.QueryRow(a.ctx, `SELECT id, name, fields FROM catalogue_schemas WHERE org_id = $1 AND id = $2`, a.org, id).
			Scan(&s.ID, &s.Name, &s.Fields)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.InboundResult{}, domain.Errorf(domain.EINVALID, "schema_id %s is not a catalogue schema of the organisation", id)
		}
		if err != nil {
			return domain.InboundResult{}, err
		}
		schema = &s
	}
	batch := b.PrepareProducts(schema, currency)
	var r UpsertResult
	if len(batch.Products) > 0 {
		var err error
		if r, err = upsertProducts(a.ctx, a.tx, a.org, batch.Products); err != nil {
			return domain.InboundResult{}, err
		}
	}
	res := applied(nil, domain.UpsertProductsAnswer{Upserted: len(batch.Products), Created: r.Created, Updated: r.Updated,
		Unchanged: r.Unchanged, Errors: nonNil(batch.Errors)})
	if r.Created+r.Updated > 0 {
		res.Outcome = domain.OutcomeApplied
	}
	return res, nil
}

// CatalogueSchema returns one of the organisation's catalogue schemas.
func (d *DB) CatalogueSchema(ctx context.Context, orgID, id uuid.UUID) (domain.CatalogueSchema, error) {
	var s domain.CatalogueSchema
	err := d.pool.QueryRow(ctx, `SELECT id, name, fields, created_at FROM catalogue_schemas WHERE org_id = $1 AND id = $2`,
		orgID, id).Scan(&s.ID, &s.Name, &s.Fields, &s.CreatedAt)
	return s, notFound(err, "catalogue schema")
}

// CreateCatalogueSchema stores a catalogue schema for the organisation.
func (d *DB) CreateCatalogueSchema(ctx context.Context, orgID uuid.UUID, s domain.CatalogueSchema) (domain.CatalogueSchema, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	err := d.pool.QueryRow(ctx, `
		INSERT INTO catalogue_schemas (id, org_id, name, fields) SELECT $1, id, $3, $4 FROM organisations WHERE id = $2
		RETURNING id, created_at`, NewID(), orgID, s.Name, s.Fields).Scan(&s.ID, &s.CreatedAt)
	switch {
	case isUniqueViolation(err, ""):
		return s, domain.Errorf(domain.ECONFLICT, "a catalogue schema named %q exists already", s.Name)
	case err != nil:
		return s, notFound(err, "organisation")
	}
	return s, nil
}

// ListCatalogueSchemas lists the organisation's catalogue schemas by name.
func (d *DB) ListCatalogueSchemas(ctx context.Context, orgID uuid.UUID) ([]domain.CatalogueSchema, error) {
	rows, err := d.pool.Query(ctx, `SELECT id, name, fields, created_at FROM catalogue_schemas WHERE org_id = $1 ORDER BY name`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.CatalogueSchema, error) {
		var s domain.CatalogueSchema
		err := r.Scan(&s.ID, &s.Name, &s.Fields, &s.CreatedAt)
		return s, err
	})
}

// newIDs makes n ids as NewID does, reading their randomness in large
// pieces rather than in one small read each.
func newIDs(n int) ([]uuid.UUID, error) {
	random := bufio.NewReaderSize(rand.Reader, 16*min(max(n, 1), 4096))
	ids := make([]uuid.UUID, n)
	for i := range ids {
		id, err := uuid.NewV7FromReader(random)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// productCopy writes products as the binary COPY stream of
// incoming_products's columns (incomingColumns), a few rows at a time as
// COPY reads it. Written here rather than through pgx's per-value
// encoding, a row costs no allocation and no encoder lookup per field.
type productCopy struct {
	products []domain.ProductInput
	ids      []uuid.UUID
	next     int // the next product to write
	buf      []byte
	unread   []byte      // what buf holds that Read has not given yet
	numeric  *pgtype.Map // encodes stock_qty, made when first needed
}

// copyHeader starts a binary COPY stream: the signature, no flags, no
// header extension.
var copyHeader = []byte("PGCOPY\n\377\r\n\000\000\000\000\000\000\000\000\000")

func newProductCopy(products []domain.ProductInput, ids []uuid.UUID) *productCopy {
	return &productCopy{products: products, ids: ids, next: -1, buf: make([]byte, 0, 64<<10)}
}

// Read implements io.Reader for pgconn's CopyFrom.
func (c *productCopy) Read(p []byte) (int, error) {
	if len(c.unread) == 0 {
		if c.next > len(c.products) {
			return 0, io.EOF
		}
		c.buf = c.buf[:0]
		if c.next < 0 {
			c.buf = append(c.buf, copyHeader...)
			c.next = 0
		}
		for len(c.buf) < cap(c.buf)-4<<10 && c.next < len(c.products) {
			var err error
			if c.buf, err = c.appendRow(c.buf, &c.products[c.next], c.ids[c.next]); err != nil {
				return 0, err
			}
			c.next++
		}
		if c.next == len(c.products) {
			c.buf = binary.BigEndian.AppendUint16(c.buf, 0xffff) // the trailer, -1
			c.next++
		}
		c.unread = c.buf
	}
	n := copy(p, c.unread)
	c.unread = c.unread[n:]
	return n, nil
}

// appendRow appends one product as a row: a field count, then each field
// as its length (-1 for NULL) and its binary value.
func (c *productCopy) appendRow(b []byte, p *domain.ProductInput, id uuid.UUID) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, uint16(len(incomingColumns)))
	b = binary.BigEndian.AppendUint32(b, 16)
	b = append(b, id[:]...)
	b = appendText(b, &p.SKU)
	b = appendText(b, &p.Title)
	b = appendText(b, p.Category)
	b = appendText(b, &p.UOM)
	if p.PriceMinor == nil {
		b = appendNull(b)
	} else {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(*p.PriceMinor))
	}
	b = appendText(b, &p.Currency)
	if p.StockQty == nil {
		b = appendNull(b)
	} else {
		if c.numeric == nil {
			c.numeric = pgtype.NewMap()
		}
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var err error
		if b, err = c.numeric.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, *p.StockQty, b); err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	switch {
	case p.LeadTimeDays == nil:
		b = appendNull(b)
	case *p.LeadTimeDays < math.MinInt32 || *p.LeadTimeDays > math.MaxInt32:
		return nil, fmt.Errorf("lead_time_days %d is out of range", *p.LeadTimeDays)
	default:
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(int32(*p.LeadTimeDays)))
	}
	attrs := []byte(p.Attrs)
	if len(attrs) == 0 {
		attrs = []byte("{}")
	}
	b = binary.BigEndian.AppendUint32(b, uint32(1+len(attrs)))
	b = append(b, 1) // jsonb's binary format version
	b = append(b, attrs...)
	b = appendText(b, (*string)(&p.Status))
	return appendText(b, p.ExternalID), nil
}

// appendText appends a text field; nil is NULL.
func appendText(b []byte, s *string) []byte {
	if s == nil {
		return appendNull(b)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(*s)))
	return append(b, *s...)
}

func appendNull(b []byte) []byte { return binary.BigEndian.AppendUint32(b, 0xffffffff) }
