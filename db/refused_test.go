package db_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// Values the storage refuses for good, written past the domain's checks:
// each is EINVALID (never retried, the caller's 400) with a generic
// message, the database's error kept as the cause for the log, and nothing
// written.
func TestValuesTheStorageRefusesAreInvalidInput(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	// No column is a varchar today; this test's schema gets one, so that a
	// value too long for it is met for real.
	if _, err := d.Pool().Exec(ctx, `ALTER TABLE products ALTER COLUMN uom TYPE varchar(8)`); err != nil {
		t.Fatal(err)
	}
	// Random CJK characters do not compress: 3,000 of them are far over
	// what one index row can hold.
	var incompressible strings.Builder
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		incompressible.WriteRune(rune(0x4E00 + r.IntN(0x5000)))
	}
	category := incompressible.String()
	product := func(p domain.ProductInput) func() error {
		return func() error {
			if p.Attrs == nil {
				p.Attrs = domain.JSONObject("{}")
			}
			p.SKU, p.Currency, p.Status = "A-1", "GBP", domain.ProductActive
			if p.Title == "" {
				p.Title = "Washer"
			}
			if p.UOM == "" {
				p.UOM = "each"
			}
			_, err := d.UpsertProducts(ctx, org.ID, []domain.ProductInput{p})
			return err
		}
	}
	for _, c := range []struct {
		name, code string
		write      func() error
	}{
		{"value too long", "22001", product(domain.ProductInput{UOM: "kilograms by the pallet"})},
		{"bytes that are not UTF-8", "22021", func() error {
			_, err := d.UpsertCustomers(ctx, org.ID, []domain.CustomerInput{{Company: "Acme \xff Ltd"}})
			return err
		}},
		{"a character jsonb cannot hold", "22P05", product(domain.ProductInput{Attrs: domain.JSONObject(`{"a": "\u0000"}`)})},
		{"a check violation", "23514", product(domain.ProductInput{Title: strings.Repeat("t", 501)})},
		{"an index row too large", "54000", product(domain.ProductInput{Category: &category})},
	} {
		err := c.write()
		var pe *pgconn.PgError
		if domain.ErrorCode(err) != domain.EINVALID || !errors.As(domain.ErrorCause(err), &pe) || pe.Code != c.code {
			t.Errorf("%s: %v (%s), want EINVALID caused by %s", c.name, err, domain.ErrorCode(err), c.code)
			continue
		}
		msg := domain.ErrorMessage(err)
		for _, leak := range []string{"products", "customers", "constraint", "violates", "index", "varchar", "UTF8", c.code} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: the message %q shows %q", c.name, msg, leak)
			}
		}
	}
	var n int
	if err := d.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM products) + (SELECT count(*) FROM customers) + (SELECT count(*) FROM events)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows written by refused writes (%v)", n, err)
	}
}
