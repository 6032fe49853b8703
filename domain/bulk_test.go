package domain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestDecodeProductsBodyNamesEachRowProblem(t *testing.T) {
	body := "{\"products\": [" + strings.Join([]string{
		`{"sku": "OK", "title": "fine", "attrs": {"a": 1}}`,
		`{"sku": "A", "title": "t", "price_minor": 12.5}`,
		`{"sku": "B", "title": "t", "price_minor": 1e30}`,
		`{"sku": "C", "title": "t", "sku": "again"}`,
		`{"sku": "E", "title": "t", "attrs": [1]}`,
		`{"sku": "F", "title": "t", "SKU": "upper"}`,
		`{"sku": "G", "title": "t", "lead_time_days": "3"}`,
		`null`,
	}, ",") + "]}"
	b, err := DecodeProductsBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "price_minor: expected an integer", "price_minor: expected an integer, got a number that does not fit",
		"sku is given twice", "attrs: expected an object, got an array", `unknown field "SKU"`,
		"lead_time_days: expected an integer, got a string", "must be a JSON object, not null"}
	if len(b.Rows) != len(want) {
		t.Fatalf("%d rows", len(b.Rows))
	}
	for i, w := range want {
		got := ""
		if b.RowErrs[i] != nil {
			got = b.RowErrs[i].Error()
		}
		if (w == "") != (got == "") || !strings.Contains(got, w) {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
	batch := b.PrepareProducts(nil, "GBP")
	if len(batch.Products) != 1 || batch.Products[0].SKU != "OK" || string(batch.Products[0].Attrs) != `{"a": 1}` {
		t.Fatalf("valid rows %+v", batch.Products)
	}
}

func TestDecodeProductsBodyBothPathsAgree(t *testing.T) {
	rows := make([]string, 50)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"sku": "S-%02d", "title": "T %d", "price_minor": %d, "attrs": {"n": %d}, "status": "draft"}`, i, i, i, i)
	}
	good := "{\"products\": [" + strings.Join(rows, ",") + "], \"schema_id\": \"x\"}"
	// One bad row sends the whole body down the row-by-row path.
	withBad := "{\"products\": [" + strings.Join(append(rows, `{"sku": 1}`), ",") + "], \"schema_id\": \"x\"}"
	fast, err1 := DecodeProductsBody([]byte(good))
	slow, err2 := DecodeProductsBody([]byte(withBad))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if *fast.SchemaID != "x" || *slow.SchemaID != "x" || len(slow.Rows) != 51 || slow.RowErrs[50] == nil {
		t.Fatalf("fast %d rows, slow %d rows", len(fast.Rows), len(slow.Rows))
	}
	for i := range fast.Rows {
		f, s := fast.Rows[i], slow.Rows[i]
		if f.SKU != s.SKU || *f.PriceMinor != *s.PriceMinor || string(f.Attrs) != string(s.Attrs) || f.Status != s.Status || slow.RowErrs[i] != nil {
			t.Fatalf("row %d differs: %+v vs %+v", i, f, s)
		}
	}
}

func TestDecodeProductsBodyRefusesWhatIsNotABatch(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{}`, `{"products": {}}`, `{"products": "x"}`, `{"products": null}`, `{`} {
		if _, err := DecodeProductsBody([]byte(bad)); ErrorCode(err) != EINVALID {
			t.Errorf("%q: %v", bad, err)
		}
	}
	_, err := DecodeProductsBody([]byte("{\"products\": [{\"sku\": \"D\", \"title\": \"bad \xff\"}]}"))
	if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "not valid JSON") || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if b, err := DecodeProductsBody([]byte(`{"products": []}`)); err != nil || len(b.Rows) != 0 {
		t.Errorf("an empty batch: %v", err)
	}
}

func TestCatalogueCoercion(t *testing.T) {
	s := CatalogueSchema{Name: "s", Fields: []CatalogueField{
		{Key: "i", Type: AttrInteger}, {Key: "n", Type: AttrNumber}, {Key: "b", Type: AttrBoolean},
		{Key: "e", Type: AttrEnum, Options: []string{"Red", "Blue"}}, {Key: "s", Type: AttrString}, {Key: "r", Type: AttrInteger, Required: true},
	}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	attrs := map[string]any{"i": "12", "n": " 2.5 ", "b": "No", "e": "blue", "s": 3.0, "r": 1.0, "free": "kept"}
	if err := s.Coerce(attrs); err != nil {
		t.Fatal(err)
	}
	if attrs["i"] != int64(12) || attrs["n"] != 2.5 || attrs["b"] != false || attrs["e"] != "Blue" || attrs["s"] != "3" || attrs["free"] != "kept" {
		t.Fatalf("coerced %v", attrs)
	}
	for _, bad := range []map[string]any{{"r": 1.0, "i": "1.5"}, {"r": 1.0, "b": "perhaps"}, {"r": 1.0, "e": "Green"}, {"i": 1.0}, {"r": true}} {
		if err := s.Coerce(bad); ErrorCode(err) != EINVALID {
			t.Errorf("%v: %v", bad, err)
		}
	}
	for _, bad := range []CatalogueSchema{{Name: ""}, {Name: "x", Fields: []CatalogueField{{Key: "a", Type: "date"}}},
		{Name: "x", Fields: []CatalogueField{{Key: "a", Type: AttrEnum}}}, {Name: "x", Fields: []CatalogueField{{Key: "a", Type: AttrString}, {Key: "a", Type: AttrString}}}} {
		if err := bad.Validate(); ErrorCode(err) != EINVALID {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestNULCharactersAreRefusedWithAClearError(t *testing.T) {
	if !jsonHasNUL([]byte(`{"a": "x\u0000y"}`)) || !jsonHasNUL([]byte(`{"\u0000": 1}`)) || !jsonHasNUL([]byte(`{"a": "\\\u0000"}`)) {
		t.Fatal("a \\u0000 escape was missed")
	}
	if jsonHasNUL([]byte(`{"a": "\\u0000"}`)) || jsonHasNUL([]byte(`{"a": "u0000"}`)) {
		t.Fatal("an escaped backslash before u0000 was taken for a NUL")
	}
	nul := "a\x00b"
	p := ProductInput{SKU: "A", Title: nul}
	if err := p.Normalize("GBP"); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "title") {
		t.Errorf("product title: %v", err)
	}
	p = ProductInput{SKU: "A", Title: "t", Attrs: JSONObject(`{"k": "\u0000"}`)}
	if err := p.Normalize("GBP"); ErrorCode(err) != EINVALID {
		t.Errorf("product attrs: %v", err)
	}
	c := CustomerInput{Company: nul}
	if err := c.Normalize(); ErrorCode(err) != EINVALID {
		t.Errorf("customer: %v", err)
	}
	r := NewRequest{Text: nul}
	if err := r.Normalize(); ErrorCode(err) != EINVALID {
		t.Errorf("request: %v", err)
	}
	m := MovementInput{Kind: MoveReceipt, Qty: 1, ProductID: &uuid.UUID{}, Reference: &nul}
	if err := m.Normalize(); ErrorCode(err) != EINVALID {
		t.Errorf("movement: %v", err)
	}
}
