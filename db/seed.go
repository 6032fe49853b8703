package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// SeedResult counts what a seed file created.
type SeedResult struct {
	Locations      int `json:"locations"`
	Customers      int `json:"customers"`
	Products       int `json:"products"`
	Quotes         int `json:"quotes"`
	Orders         int `json:"orders"`
	Suppliers      int `json:"suppliers"`
	PurchaseOrders int `json:"purchase_orders"`
	Receipts       int `json:"receipts"`
	Deliveries     int `json:"deliveries"`
	Stock          int `json:"stock"`
	GoodsReceipts  int `json:"goods_receipts"`
}

// Seed loads a validated seed file into an organisation in one transaction:
// either every record is written or none is. References (a quote's
// customer, an order's quote, a delivery's order, a purchase order's
// supplier, stock's product and location) resolve against the file first and
// then the organisation's existing records. A record whose natural key
// already exists, or a reference that resolves to nothing, rejects the file
// with its section and index.
func (d *DB) Seed(ctx context.Context, orgID uuid.UUID, f *domain.SeedFile) (SeedResult, error) {
	org, err := d.Organisation(ctx, orgID)
	if err != nil {
		return SeedResult{}, err
	}
	if err := f.Validate(org.Currency); err != nil {
		return SeedResult{}, err
	}
	var res SeedResult
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		s := &seeder{ctx: ctx, tx: tx, org: org, now: time.Now(), ids: map[string]uuid.UUID{}}
		steps := []func() error{s.locations, s.customers, s.products, s.quotes, s.orders, s.suppliers,
			s.purchaseOrders, s.deliveries, s.stock, s.goodsReceipts}
		s.f = f
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		res = s.res
		// Wake the inbound posts parked waiting for the records this load
		// created, and the matches waiting for goods it received.
		return queueWakes(ctx, tx, orgID, s.keys, s.received)
	})
	return res, err
}

type seeder struct {
	ctx context.Context
	tx  pgx.Tx
	org domain.Organisation
	f   *domain.SeedFile
	now time.Time
	res SeedResult
	// ids caches natural key → id, keyed "kind\x00key".
	ids map[string]uuid.UUID
	// keys are the wait keys (domain.WaitKey) of the records created;
	// received the purchase orders goods were received against.
	keys     []string
	received []uuid.UUID
}

// waitable records the wait keys of a record the load created (a nil
// reference has none).
func (s *seeder) waitable(kind string, refs ...*string) {
	for _, r := range refs {
		if r != nil && *r != "" {
			s.keys = append(s.keys, domain.WaitKey(kind, *r))
		}
	}
}

// seedErr names the record a write failed on.
func seedErr(section string, i int, format string, args ...any) error {
	return domain.Errorf(domain.EINVALID, "seed file rejected: %s[%d]: %s", section, i, fmt.Sprintf(format, args...))
}

// created reports a natural key collision as a seed error, and passes other
// errors through.
func created(err error, section string, i int, what string) error {
	if isUniqueViolation(err, "") {
		return seedErr(section, i, "%s already exists", what)
	}
	return err
}

func at(t *domain.Timestamp, fallback time.Time) time.Time {
	if t == nil {
		return fallback
	}
	return t.Time
}

// resolve finds the id of a record by natural key: one created from the file,
// else an existing one of the organisation (query must select id given
// org_id $1 and key $2; more than one match is ambiguous).
func (s *seeder) resolve(kind, key, query string) (uuid.UUID, bool, error) {
	if id, ok := s.ids[kind+"\x00"+key]; ok {
		return id, true, nil
	}
	rows, err := s.tx.Query(s.ctx, query, s.org.ID, key)
	if err != nil {
		return uuid.Nil, false, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return uuid.Nil, false, err
	}
	switch len(ids) {
	case 0:
		return uuid.Nil, false, nil
	case 1:
		s.ids[kind+"\x00"+key] = ids[0]
		return ids[0], true, nil
	}
	return uuid.Nil, false, fmt.Errorf("%d records match", len(ids))
}

// reference resolves a record the file refers to by natural key; one that
// is neither in the file nor in the organisation rejects the file, naming
// the referring record by section and index.
func (s *seeder) reference(section string, i int, kind, key, query string) (uuid.UUID, error) {
	id, found, err := s.resolve(kind, key, query)
	if err != nil {
		return uuid.Nil, err
	}
	if !found {
		return uuid.Nil, seedErr(section, i, "%s %q is neither in the file nor in the organisation", kind, key)
	}
	return id, nil
}

func (s *seeder) remember(kind, key string, id uuid.UUID) { s.ids[kind+"\x00"+key] = id }
