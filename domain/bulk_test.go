package domain

import (
	"bytes"
	"fmt"
	"reflect"
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
	b, err := DecodeProductsBody([]byte(body), 10000)
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
	fast, err1 := DecodeProductsBody([]byte(good), 10000)
	slow, err2 := DecodeProductsBody([]byte(withBad), 10000)
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
	// A single unknown or repeated field, alone in a batch, is still that
	// row's error.
	for body, want := range map[string]string{
		`{"products": [{"sku": "A", "title": "t", "SKU": "B"}]}`:  `unknown field "SKU"`,
		`{"products": [{"sku": "A", "title": "t", "sku": "B"}]}`:  "sku is given twice",
		`{"products": [{"sku": "A", "title": "t", "size": 3}]}`:   `unknown field "size"`,
		`{"schema_id": null, "products": [{"sku": "A"}], "x": 1}`: "",
	} {
		b, err := DecodeProductsBody([]byte(body), 10000)
		if err != nil || len(b.Rows) != 1 {
			t.Fatalf("%s: %v", body, err)
		}
		got := ""
		if b.RowErrs[0] != nil {
			got = b.RowErrs[0].Error()
		}
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// The row after the limit is refused as too large before the rest of the
// body is read: what follows it is never looked at, on either path.
func TestDecodeProductsBodyStopsAtTheRowAfterItsLimit(t *testing.T) {
	rows := strings.Repeat(`{"sku": "A", "title": "t"},`, 5)
	for name, body := range map[string]string{
		"well-formed rows":     `{"products": [` + rows + `{"sku": "A", "title": "t"}, not json at all`,
		"with a malformed row": `{"products": [{"sku": 1},` + rows + ` not json at all`,
	} {
		if _, err := DecodeProductsBody([]byte(body), 5); ErrorCode(err) != ETOOLARGE {
			t.Errorf("%s: %v, want too large", name, err)
		}
	}
	if b, err := DecodeProductsBody([]byte(`{"products": [`+strings.TrimSuffix(rows, ",")+`]}`), 5); err != nil || len(b.Rows) != 5 {
		t.Errorf("exactly the limit: %v", err)
	}
	for _, bad := range []string{`{"products": [], "products": []}`, `{"products": []} x`, `{"products": [] `} {
		if _, err := DecodeProductsBody([]byte(bad), 5); ErrorCode(err) != EINVALID {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestDecodeProductsBodyRefusesWhatIsNotABatch(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{}`, `{"products": {}}`, `{"products": "x"}`, `{"products": null}`, `{`} {
		if _, err := DecodeProductsBody([]byte(bad), 10000); ErrorCode(err) != EINVALID {
			t.Errorf("%q: %v", bad, err)
		}
	}
	_, err := DecodeProductsBody([]byte("{\"products\": [{\"sku\": \"D\", \"title\": \"bad \xff\"}]}"), 10000)
	if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "not valid JSON") || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if b, err := DecodeProductsBody([]byte(`{"products": []}`), 10000); err != nil || len(b.Rows) != 0 {
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

// benchBody is a 10,000-product batch like the bulk benchmark's.
func benchBody(n int) []byte {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"sku": "FST-%05d", "title": "Hex bolt M%d x %dmm A2 stainless (v1)", "category": "Fasteners", "uom": "box",
			"price_minor": %d, "currency": "GBP", "stock_qty": %d, "lead_time_days": %d, "status": "active", "external_id": "ERP-%d",
			"attrs": {"thread": "M%d", "length_mm": %d, "material": "A2 stainless"}}`, i, 4+i%8, 10+i%90, 100+i, i%500, i%14, i, 4+i%8, 10+i%90)
	}
	return []byte(`{"products": [` + strings.Join(rows, ",") + `]}`)
}

func BenchmarkDecodeAndPrepare10000Products(b *testing.B) {
	body := benchBody(10000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		pb, err := DecodeProductsBody(body, 10000)
		if err != nil {
			b.Fatal(err)
		}
		if batch := pb.PrepareProducts(nil, "GBP"); len(batch.Products) != 10000 {
			b.Fatal(len(batch.Products))
		}
	}
}

// The REST import reads its body as it arrives, a row at a time: compare
// with BenchmarkDecodeAndPrepare10000Products, which has the body whole.
func BenchmarkReadAndPrepare10000Products(b *testing.B) {
	body := benchBody(10000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		pb, err := ReadProductsBody(bytes.NewReader(body), 10000)
		if err != nil {
			b.Fatal(err)
		}
		if batch := pb.PrepareProducts(nil, "GBP"); len(batch.Products) != 10000 {
			b.Fatal(len(batch.Products))
		}
	}
}

// What the storage cannot hold is the row's own error, not a failed batch.
func TestProductValuesBeyondStorageAreRowErrors(t *testing.T) {
	body := `{"products": [
		{"sku": "A", "title": "t", "lead_time_days": 2147483648},
		{"sku": "B", "title": "t", "attrs": {"x": 1e200000}},
		{"sku": "C", "title": "t", "attrs": {"x": {"y": [1, -2.5e-400]}}},
		{"sku": "D", "title": "t", "attrs": {"x": "1e200000", "y": 1.5e300, "z": 123456789012345678901234567890}, "lead_time_days": 2147483647}]}`
	b, err := DecodeProductsBody([]byte(body), 10000)
	if err != nil {
		t.Fatal(err)
	}
	batch := b.PrepareProducts(nil, "GBP")
	if len(batch.Products) != 1 || batch.Products[0].SKU != "D" || len(batch.Errors) != 3 {
		t.Fatalf("products %+v, errors %+v", batch.Products, batch.Errors)
	}
	for i, want := range []string{"lead_time_days must be between 0 and 2147483647", "number 1e200000", "number -2.5e-400"} {
		if e := batch.Errors[i]; e.Index != i || !strings.Contains(e.Reason, want) {
			t.Errorf("error %d: %+v, want %q", i, e, want)
		}
	}
	if got := jsonNumberOutOfRange([]byte(`{"a": "\"1e999", "b": [0e5, -0.0e-999, 1E308]}`)); got != "" {
		t.Errorf("in range, or inside a string: %q", got)
	}
	if got := jsonNumberOutOfRange([]byte(`{"a": 1` + strings.Repeat("0", 400) + `}`)); got == "" {
		t.Error("a 401-digit integer was taken as in range")
	}
}

// Coercing through a schema changes the attributes it declares and keeps
// every other one exactly as sent.
func TestCatalogueCoercionKeepsUndeclaredAttributesAsSent(t *testing.T) {
	s := CatalogueSchema{Name: "s", Fields: []CatalogueField{{Key: "i", Type: AttrInteger}, {Key: "n", Type: AttrNumber}}}
	p := ProductInput{SKU: "A", Title: "t", Attrs: JSONObject(`{"i": 9007199254740993, "n": "2.5", "big": 12345678901234567890, "exact": 9007199254740993, "s": "x"}`)}
	if err := p.coerceAttrs(&s); err != nil {
		t.Fatal(err)
	}
	want := `{"big":12345678901234567890,"exact":9007199254740993,"i":9007199254740993,"n":2.5,"s":"x"}`
	if string(p.Attrs) != want {
		t.Fatalf("attrs %s, want %s", p.Attrs, want)
	}
	p = ProductInput{SKU: "A", Title: "t", Attrs: JSONObject(`{"i": 1e400}`)}
	if err := p.coerceAttrs(&s); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "attrs.i") {
		t.Fatalf("an integer attribute out of range: %v", err)
	}
}

func TestDecodeProductsBodyRefusesASecondValueAfterTheObject(t *testing.T) {
	for _, bad := range []string{`{} {}`, `{"products": []} {"products": []}`, `{"products": [{"sku": 1}]} []`} {
		if _, err := DecodeProductsBody([]byte(bad), 10000); ErrorCode(err) != EINVALID {
			t.Errorf("%q: %v, want EINVALID", bad, err)
		}
	}
}

// Read as it arrives or whole, a products body decodes to the same rows,
// the same row errors and the same refusal.
func FuzzProductsBodyReadMatchesDecode(f *testing.F) {
	for _, seed := range []string{
		`{"products": [{"sku": "A", "title": "Washer", "price_minor": 12, "attrs": {"m": 8}}], "schema_id": "x"}`,
		`{"products": [{"sku": "A"}, {"sku": "A", "title": "x"}, "x", 1, null, [], {}, {"sku": "B", "sku": "C"}]}`,
		`{"products": [{"sku": 1e30, "title": true, "price_minor": 1.5, "lead_time_days": 2147483648}], "other": 1}`,
		`{"products": [{"sku": "A", "title": "t", "colour": "red"}]} {}`,
		`{"products": [{}, {}, {}]}`,
		`{"products": null}`, `[]`, `{`, `{"products": [`, "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		whole, wholeErr := DecodeProductsBody(body, 2)
		read, readErr := ReadProductsBody(bytes.NewReader(body), 2)
		if fmt.Sprint(wholeErr) != fmt.Sprint(readErr) {
			t.Fatalf("whole: %v; read: %v", wholeErr, readErr)
		}
		if !reflect.DeepEqual(whole.Rows, read.Rows) || !reflect.DeepEqual(whole.SchemaID, read.SchemaID) ||
			fmt.Sprint(whole.RowErrs) != fmt.Sprint(read.RowErrs) {
			t.Fatalf("whole: %+v %v; read: %+v %v", whole.Rows, whole.RowErrs, read.Rows, read.RowErrs)
		}
	})
}
