package db_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// What the upsert copies is what is read back, every field, set or null,
// and the ids it makes are distinct version 7 UUIDs.
func TestUpsertProductsStoresEveryFieldAsGiven(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	category, external := "Fasteners", "ERP-7"
	price, lead, stock := int64(123456789012), 2147483647, 2.125
	in := []domain.ProductInput{
		{SKU: "A-1", Title: "Hex bolt ünïcode", Category: &category, UOM: "box", PriceMinor: &price, Currency: "EUR",
			StockQty: &stock, LeadTimeDays: &lead, Attrs: domain.JSONObject(`{"m": [1, 2.5, "x"], "n": null}`),
			Status: domain.ProductDraft, ExternalID: &external},
		{SKU: "B-2", Title: "Washer", UOM: "each", Currency: "GBP", Status: domain.ProductActive},
	}
	res, err := d.UpsertProducts(ctx, org.ID, in)
	if err != nil || res.Created != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	out, err := d.ListProducts(ctx, org.ID, db.ProductFilter{}, "", 10)
	if err != nil || len(out) != 2 {
		t.Fatalf("%d products, %v", len(out), err)
	}
	for i, p := range out {
		want := in[i]
		if want.Attrs == nil {
			want.Attrs = domain.JSONObject("{}")
		}
		got := domain.ProductInput{SKU: p.SKU, Title: p.Title, Category: p.Category, UOM: p.UOM, PriceMinor: p.PriceMinor,
			Currency: p.Currency, StockQty: p.StockQty, LeadTimeDays: p.LeadTimeDays, Status: p.Status, ExternalID: p.ExternalID}
		want.Attrs, got.Attrs = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("product %d: got %+v, want %+v", i, got, want)
		}
		if p.ID.Version() != 7 {
			t.Errorf("product %d: id %s is not a version 7 UUID", i, p.ID)
		}
	}
	if string(out[0].Attrs) != `{"m": [1, 2.5, "x"], "n": null}` || string(out[1].Attrs) != `{}` {
		t.Errorf("attrs %s and %s", out[0].Attrs, out[1].Attrs)
	}
	if out[0].ID == out[1].ID {
		t.Error("two products with one id")
	}
}
