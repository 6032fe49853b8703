package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/examples"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func seedOrg(t *testing.T, d *testdb.DB) domain.Organisation {
	t.Helper()
	org, _, err := d.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Demo Trading Ltd", OwnerEmail: "owner@demo.example"})
	if err != nil {
		t.Fatal(err)
	}
	return org
}

func TestExampleSeedFileLoadsCompletely(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org := seedOrg(t, d)
	f, err := domain.ParseSeed(examples.Seed)
	if err != nil {
		t.Fatalf("example file does not parse: %v", err)
	}
	res, err := d.Seed(ctx, org.ID, f)
	if err != nil {
		t.Fatalf("example file rejected: %v", err)
	}
	want := db.SeedResult{Locations: len(f.Locations), Customers: len(f.Customers), Products: len(f.Products),
		Quotes: len(f.Quotes), Orders: len(f.Orders), Suppliers: len(f.Suppliers), PurchaseOrders: len(f.PurchaseOrders),
		Deliveries: len(f.Deliveries), Stock: len(f.Stock)}
	want.Receipts = res.Receipts
	if res != want || res.Products == 0 || res.Quotes == 0 || res.Receipts == 0 {
		t.Fatalf("seeded %+v, want %+v", res, want)
	}
	// Stored quote totals obey the rule, and each line's amount is the
	// domain's computation.
	var bad int
	if err := d.Pool().QueryRow(ctx, `
		SELECT count(*) FROM quotes q
		WHERE q.org_id = $1 AND q.subtotal_minor <> (SELECT coalesce(sum(amount_minor), 0) FROM quote_lines l
		                                             WHERE l.org_id = q.org_id AND l.quote_id = q.id)`, org.ID).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d quotes whose subtotal is not the sum of their line amounts", bad)
	}
	// Every stock balance is explained by its movements.
	if err := d.Pool().QueryRow(ctx, `
		SELECT count(*) FROM stock_lines s
		WHERE s.org_id = $1 AND s.qty_on_hand <> (SELECT coalesce(sum(qty), 0) FROM stock_movements m
		                                          WHERE m.org_id = s.org_id AND m.line_id = s.id)`, org.ID).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d stock lines not explained by their movements", bad)
	}
	// Loading the same file again collides on natural keys and writes nothing.
	before := countRows(t, d)
	if _, err := d.Seed(ctx, org.ID, f); domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), "already") {
		t.Fatalf("second load: %v, want EINVALID naming an existing record", err)
	}
	if after := countRows(t, d); after != before {
		t.Fatalf("a rejected second load changed row counts: %d → %d", before, after)
	}
}

// schemaTables lists the tables of the test's schema.
func schemaTables(t *testing.T, d *testdb.DB) []string {
	t.Helper()
	rows, err := d.Pool().Query(context.Background(),
		`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, d.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// countRows totals the rows of every table of the test schema.
func countRows(t *testing.T, d *testdb.DB) int {
	t.Helper()
	ctx := context.Background()
	total := 0
	for _, table := range schemaTables(t, d) {
		var n int
		if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

func TestBrokenSeedFileWritesNothing(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		file string
		want string
	}{
		"unknown section": {`{"prodcuts": []}`, `unknown section "prodcuts"`},
		"not an object":   {`[1,2]`, "not a JSON object"},
		"type error":      {`{"products": [{"sku": "A", "title": "A", "price_minor": "12"}]}`, "products[0]: price_minor: expected an integer, got a string"},
		"unknown field":   {`{"products": [{"sku": "A", "title": "A", "colour": "red"}]}`, `products[0]: unknown field "colour"`},
		"rule broken late": {`{"customers": [{"company": "Acme"}], "products": [{"sku": "A", "title": "A"}, {"sku": "", "title": "B"}]}`,
			"products[1]: sku is required"},
		"duplicate sku":    {`{"products": [{"sku": "A", "title": "A"}, {"sku": "A", "title": "B"}]}`, `products[1]: sku "A" repeats products[0]`},
		"bad status":       {`{"quotes": [{"number": "Q1", "status": "won"}]}`, `quotes[0]: status "won"`},
		"note line amount": {`{"quotes": [{"number": "Q1", "lines": [{"line_type": "note", "description": "n", "qty": 2}]}]}`, "note line"},
		"inconsistent totals": {`{"orders": [{"number": "O1", "subtotal_minor": 100, "vat_minor": 20, "total_minor": 130,
			"lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`, "orders[0]: total_minor 130"},
		"partial totals": {`{"orders": [{"number": "O1", "total_minor": 130}]}`, "together, or none"},
		"missing customer": {`{"customers": [{"company": "Acme"}], "quotes": [{"number": "Q1", "customer": "Nobody Ltd"}]}`,
			`quotes[0]: customer "Nobody Ltd" is neither in the file nor in the organisation`},
		"receipt on unknown line": {`{"suppliers": [{"name": "S"}], "purchase_orders": [{"number": "P1", "supplier": "S", "status": "received",
			"lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}], "receipts": [{"received_at": "2026-11-01T00:00:00Z", "lines": [{"position": 2, "qty": 1}]}]}]}`,
			"position 2 is not a line"},
		"stock of unknown product": {`{"products": [{"sku": "A", "title": "A"}], "stock": [{"sku": "B", "qty_on_hand": 1}]}`,
			`stock[0]: product "B"`},
		"negative stock": {`{"stock": [{"sku": "A", "qty_on_hand": -1}]}`, "stock[0]: qty_on_hand must be zero or more"},
		"totals past an int64": {`{"quotes": [{"number": "Q1", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 9223372036854775807},
			{"description": "y", "qty": 1, "unit_price_minor": 9223372036854775807}]}]}`, "quotes[0]: the totals pass 1000000000000000"},
		"huge qty": {`{"orders": [{"number": "O1", "lines": [{"description": "x", "qty": 1e30, "unit_price_minor": 100}]}]}`,
			"orders[0]: the totals pass"},
		"discount over the subtotal": {`{"quotes": [{"number": "Q1", "discount_minor": 5000, "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`,
			"quotes[0]: discount_minor 5000 is more than the subtotal 100"},
		"negative override": {`{"quotes": [{"number": "Q1", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100, "amount_override_minor": -9000}]}]}`,
			"quotes[0]: lines[0]: amount_override_minor must be zero or more"},
		"negative given totals": {`{"orders": [{"number": "O1", "subtotal_minor": -10, "vat_minor": 0, "total_minor": -10,
			"lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`, "orders[0]: totals must be zero or more"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := testdb.New(t)
			org := seedOrg(t, d)
			before := countRows(t, d)
			f, err := domain.ParseSeed([]byte(tc.file))
			if err == nil {
				_, err = d.Seed(ctx, org.ID, f)
			}
			if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want EINVALID containing %q", err, tc.want)
			}
			if after := countRows(t, d); after != before {
				t.Fatalf("rejected file changed row counts: %d → %d", before, after)
			}
		})
	}
}

func TestSeedResolvesExistingRecordsAndEnforcesProductCap(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	cap := 2
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Small", ProductCap: &cap})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := domain.ParseSeed([]byte(`{"customers": [{"company": "Acme Ltd"}], "products": [{"sku": "A", "title": "A"}]}`))
	if _, err := d.Seed(ctx, org.ID, first); err != nil {
		t.Fatal(err)
	}
	// A later file may refer to records loaded earlier.
	second, _ := domain.ParseSeed([]byte(`{"quotes": [{"number": "Q1", "customer": "acme ltd", "status": "sent",
		"lines": [{"description": "A", "qty": 2, "unit_price_minor": 150}]}], "stock": [{"sku": "A", "qty_on_hand": 5}]}`))
	if _, err := d.Seed(ctx, org.ID, second); err != nil {
		t.Fatalf("second file: %v", err)
	}
	var total int64
	_ = d.Pool().QueryRow(ctx, `SELECT total_minor FROM quotes WHERE org_id = $1 AND number = 'Q1'`, org.ID).Scan(&total)
	if total != 360 { // 300 + 20% VAT
		t.Fatalf("quote total = %d, want 360", total)
	}
	over, _ := domain.ParseSeed([]byte(`{"products": [{"sku": "B", "title": "B"}, {"sku": "C", "title": "C"}]}`))
	if _, err := d.Seed(ctx, org.ID, over); domain.ErrorCode(err) != domain.EPAYMENT {
		t.Fatalf("over the cap: %v, want EPAYMENT", err)
	}
	var products int
	_ = d.Pool().QueryRow(ctx, `SELECT count(*) FROM products WHERE org_id = $1`, org.ID).Scan(&products)
	if products != 1 {
		t.Fatalf("%d products after a refused load, want 1", products)
	}
}

func TestGoodsReceiptsMovePurchaseOrders(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org := seedOrg(t, d)
	f, _ := domain.ParseSeed([]byte(`{"suppliers": [{"name": "S"}], "purchase_orders": [
		{"number": "P1", "supplier": "S", "status": "acknowledged", "lines": [{"description": "a", "qty": 10, "unit_price_minor": 5}, {"description": "b", "qty": 2, "unit_price_minor": 7}]},
		{"number": "P2", "supplier": "S", "status": "draft", "lines": [{"description": "a", "qty": 1, "unit_price_minor": 5}]}]}`))
	if _, err := d.Seed(ctx, org.ID, f); err != nil {
		t.Fatal(err)
	}
	status := func(n string) string {
		var s string
		_ = d.Pool().QueryRow(ctx, `SELECT status FROM purchase_orders WHERE number = $1`, n).Scan(&s)
		return s
	}
	load := func(file string) error {
		f, err := domain.ParseSeed([]byte(file))
		if err != nil {
			return err
		}
		_, err = d.Seed(ctx, org.ID, f)
		return err
	}
	if err := load(`{"goods_receipts": [{"po_number": "P1", "received_at": "2026-11-20T10:00:00Z", "lines": [{"position": 1, "qty": 4}]}]}`); err != nil {
		t.Fatal(err)
	}
	if status("P1") != "partially_received" {
		t.Fatalf("after a part: %s", status("P1"))
	}
	if err := load(`{"goods_receipts": [{"po_number": "P1", "received_at": "2026-11-21T10:00:00Z", "lines": [{"position": 1, "qty": 6}, {"position": 2, "qty": 2}]}]}`); err != nil {
		t.Fatal(err)
	}
	if status("P1") != "received" {
		t.Fatalf("after the rest: %s", status("P1"))
	}
	for file, want := range map[string]string{
		`{"goods_receipts": [{"po_number": "P2", "received_at": "2026-11-21T10:00:00Z", "lines": [{"position": 1, "qty": 1}]}]}`: "cannot move",
		`{"goods_receipts": [{"po_number": "P9", "received_at": "2026-11-21T10:00:00Z", "lines": [{"position": 1, "qty": 1}]}]}`: "neither in the file",
		`{"goods_receipts": [{"po_number": "P1", "received_at": "2026-11-21T10:00:00Z", "lines": [{"position": 3, "qty": 1}]}]}`: "no line 3",
		`{"goods_receipts": [{"po_number": "P1", "lines": []}]}`:                                                                 "received_at is required",
	} {
		if err := load(file); domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}
