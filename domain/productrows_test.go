package domain

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// typedRow reads one row with JSON v2's typed decoding into ProductInput:
// what the row reader is held to.
func typedRow(raw jsontext.Value) (ProductInput, error) {
	var p ProductInput
	if raw.Kind() != '{' {
		return p, Errorf(EINVALID, "a product must be a JSON object, not %s", kindName(raw.Kind()))
	}
	if err := jsonv2.Unmarshal(raw, &p, jsonv2.RejectUnknownMembers(true)); err != nil {
		msg := decodeProblem(err, "product", productFieldNames)
		// The typed decoding calls any number it cannot take "a number
		// that does not fit"; where an object was expected, the row reader
		// says plainly that it got a number.
		msg = strings.Replace(msg, "expected an object, got a number that does not fit", "expected an object, got a number", 1)
		return p, Errorf(EINVALID, "%s", msg)
	}
	return p, nil
}

// checkRowAgainstTypedDecoding reads row through the body's row reader and
// through typedRow, and fails when they disagree on the row's error or,
// when it has none, on any field.
func checkRowAgainstTypedDecoding(t *testing.T, row string) {
	t.Helper()
	body, err := DecodeProductsBody([]byte(`{"products": [`+row+`]}`), 10)
	if !jsontext.Value(row).IsValid(jsontext.AllowDuplicateNames(true)) {
		// Text that is not one JSON value may still be none, or several,
		// or close the array early: then there is nothing to compare.
		if err == nil && len(body.Rows) == 1 && !strings.ContainsAny(row, ",]") {
			t.Errorf("%q: not valid JSON, but read as a row", row)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", row, err)
		return
	}
	want, wantErr := typedRow(jsontext.Value(row))
	got, gotErr := body.Rows[0], body.RowErrs[0]
	if wrongKindOverRepeat(gotErr, wantErr) {
		return
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("%s:\n row reader: %v\n typed:      %v", row, gotErr, wantErr)
		return
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n row reader: %s\n typed:      %s", row, describe(got), describe(want))
	}
}

// wrongKindOverRepeat reports whether the two disagree only in this: a
// field that is not attrs was given an object or array with a name
// repeated inside, which the typed decoding reports as the repeat and the
// row reader, which never looks inside it, as a value of the wrong type.
func wrongKindOverRepeat(got, want error) bool {
	if got == nil || want == nil {
		return false
	}
	field, _, ok := strings.Cut(got.Error(), ": expected ")
	return ok && field != "attrs" && (strings.HasSuffix(got.Error(), "got an object") || strings.HasSuffix(got.Error(), "got an array")) &&
		strings.HasPrefix(want.Error(), "field "+field) && strings.HasSuffix(want.Error(), " is given twice")
}

func describe(p ProductInput) string {
	s := fmt.Sprintf("%+v", p)
	for _, v := range []any{p.Category, p.PriceMinor, p.StockQty, p.LeadTimeDays, p.ExternalID} {
		if rv := reflect.ValueOf(v); !rv.IsNil() {
			s += fmt.Sprintf(" %v", rv.Elem())
		}
	}
	return s
}

var rowCases = []string{
	`{}`,
	`{"sku": "A-1", "title": "Hex bolt", "category": "Fasteners", "uom": "box", "price_minor": 1250, "currency": "GBP",
	  "stock_qty": 12.5, "lead_time_days": 3, "attrs": {"a": [1, {"b": null}], "c": "d"}, "status": "draft", "external_id": "E-1"}`,
	`{"sku": "esc\"aped\\ \u00e9 \ud83d\ude00 \n", "\u0074itle": "named with an escape"}`,
	`{"sku": null, "title": null, "category": null, "uom": null, "price_minor": null, "currency": null, "stock_qty": null,
	  "lead_time_days": null, "attrs": null, "status": null, "external_id": null}`,
	`{"category": "", "external_id": "  "}`,
	`{"price_minor": 12.5}`, `{"price_minor": 1e2}`, `{"price_minor": 1.0}`, `{"price_minor": -0}`, `{"price_minor": -12}`,
	`{"price_minor": 999999999999999999}`, `{"price_minor": 9223372036854775807}`, `{"price_minor": 9223372036854775808}`,
	`{"price_minor": -9223372036854775808}`, `{"price_minor": -9223372036854775809}`, `{"price_minor": 99999999999999999999}`,
	`{"lead_time_days": 1.5}`, `{"lead_time_days": true}`, `{"lead_time_days": "3"}`, `{"lead_time_days": 2147483648}`,
	`{"stock_qty": 1e400}`, `{"stock_qty": -1e-400}`, `{"stock_qty": 1e-400}`, `{"stock_qty": "1"}`, `{"stock_qty": 0.1}`,
	`{"stock_qty": 123456789012345}`, `{"stock_qty": 1234567890123456789}`, `{"stock_qty": -0}`, `{"stock_qty": -0.0}`, `{"stock_qty": 1E3}`,
	`{"sku": 1}`, `{"sku": true}`, `{"sku": []}`, `{"sku": {}}`, `{"status": 3}`, `{"category": false}`, `{"external_id": 5}`,
	`{"attrs": 5}`, `{"attrs": []}`, `{"attrs": "x"}`, `{"attrs": true}`, `{"attrs": {}}`, `{"attrs": {"a\u0000": 1}}`,
	`{"attrs": {"a": 1, "a": 2}}`, `{"attrs": {"a": {"b": 1, "b": 2}}}`, `{"attrs": {"a": [{"x": 1}, {"x": 1, "x": 2}]}}`,
	`{"attrs": {"\u0061": 1, "a": 2}}`, `{"title": {"0": [], "0": "0"}}`, `{"title": [{"a": 1, "a": 2}]}`,
	`{"sku": "a", "sku": null}`, `{"price_minor": 1, "price_minor": 2}`, `{"sku": "a", "\u0073ku": "b"}`,
	`{"price_minor": "x", "sku": 1}`, `{"price_minor": "x", "sku": "a", "sku": "b"}`, `{"sku": "a", "sku": "b", "price_minor": "x"}`,
	`{"price_minor": "x", "zzz": 1}`, `{"zzz": 1, "price_minor": "x"}`, `{"SKU": "a"}`, `{"sku": "a", "SKU": 1, "sku": 2}`,
	`{"price_minor": "x", "attrs": {"a": 1, "a": 2}}`, `{"attrs": {"a": 1, "a": 2}, "price_minor": "x"}`,
	`{"` + strings.Repeat("long", 40) + `": 1}`, `{"sku": "` + strings.Repeat("é", 100) + `"}`,
	`null`, `1`, `"row"`, `[]`, `true`,
	`{"sku": "a"`, `{"sku": "a",}`, `{"sku": "\xff"}`, `{"sku": "\ud800"}`, `{sku: 1}`, `{"price_minor": 01}`,
}

func TestProductRowsReadEachRowAsTypedDecodingDoes(t *testing.T) {
	for _, row := range rowCases {
		checkRowAgainstTypedDecoding(t, row)
	}
}

func FuzzProductRowsReadEachRowAsTypedDecodingDoes(f *testing.F) {
	for _, row := range rowCases {
		f.Add(row)
	}
	f.Fuzz(checkRowAgainstTypedDecoding)
}

// The row reader's field numbers and the field names agree.
func TestProductFieldNumbersMatchTheirNames(t *testing.T) {
	if len(productFieldNames) != productFieldCount {
		t.Fatalf("%d names for %d fields", len(productFieldNames), productFieldCount)
	}
	for i, name := range productFieldNames {
		if got := productField([]byte(name)); got != i {
			t.Errorf("%s is field %d, want %d", name, got, i)
		}
	}
	if productField([]byte("Sku")) != -1 {
		t.Error("names match exactly")
	}
}

// Rows share blocks of memory, but a row's attrs cannot be grown into the
// next row's.
func TestProductRowsAttrsDoNotShareWhatAppendingReaches(t *testing.T) {
	b, err := DecodeProductsBody([]byte(`{"products": [{"sku": "A", "title": "t", "attrs": {"a": 1}}, {"sku": "B", "title": "t", "attrs": {"b": 2}}]}`), 10)
	if err != nil {
		t.Fatal(err)
	}
	first := append(b.Rows[0].Attrs, "XXXX"...)
	if string(b.Rows[1].Attrs) != `{"b": 2}` || string(first) != `{"a": 1}XXXX` {
		t.Fatalf("rows' attrs %q and %q", b.Rows[0].Attrs, b.Rows[1].Attrs)
	}
}

func TestMayRepeatNamesMissesNoRepeat(t *testing.T) {
	for _, v := range []string{`{"a": 1, "a": 2}`, `{"a": {"b": 1, "b": 2}}`, `{"a": [{"x": 1}, {"x": 1, "x": 2}]}`,
		`{"\u0061": 1, "a": 2}`, `{"a": {"x": 1}, "b": {"y": 1, "y": 1}}`, `{"a" : 1, "b": "a", "a"  :3}`} {
		if !mayRepeatNames([]byte(v)) {
			t.Errorf("%s: a repeated name was missed", v)
		}
	}
	for _, v := range []string{`{}`, `{"a": 1, "b": "a"}`, `{ "a" : "b" , "b" : "a" }`,
		`{"thread": "M4", "length_mm": 10, "material": "A2 stainless"}`} {
		if mayRepeatNames([]byte(v)) {
			t.Errorf("%s: no name is repeated", v)
		}
	}
}

// countingReader gives at most what was asked, like a connection, and
// counts the reads.
type countingReader struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// The body is read from its connection in 64 KB pieces, not in the 4 KB
// the decoder asks for: a 2.3 MB body is a few dozen reads (system calls),
// not hundreds.
func TestReadProductsBodyReadsItsBodyInLargePieces(t *testing.T) {
	body := benchBody(10000)
	src := &countingReader{r: bytes.NewReader(body)}
	if _, err := ReadProductsBody(src, 10000); err != nil {
		t.Fatal(err)
	}
	if most := len(body)/(64<<10) + 2; src.reads > most {
		t.Errorf("%d reads for %d bytes, want at most %d", src.reads, len(body), most)
	}
}
