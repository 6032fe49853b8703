package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// RowError names a row of a batch that was not written, and why.
type RowError struct {
	Index  int    `json:"index" doc:"Position of the row in the posted array, from 0."`
	Reason string `json:"reason" doc:"Why the row was not written."`
}

// ProductBatch is a bulk import made ready to write: the valid products (one
// per SKU) and the rows that will not be written.
type ProductBatch struct {
	// Rows is how many rows the batch had.
	Rows     int
	Products []ProductInput
	Errors   []RowError
}

// ProductsBody is the body of a products upsert (REST bulk and inbound):
// the products as rows, the error of each row that could not be read, and
// the catalogue schema named.
type ProductsBody struct {
	Rows     []ProductInput
	RowErrs  []error
	SchemaID *string
}

// DecodeProductsBody reads {"products": [...], "schema_id": ...}. A body whose
// rows are all well-formed products (the usual case) is decoded in one typed
// pass; otherwise the rows are read one by one, so that each malformed row
// gets its own error and the others are still written. A body that is not a
// JSON object with a products array is EINVALID. Field names match exactly;
// a repeated name, invalid UTF-8 or a number out of range is an error.
//
// It uses the JSON v2 decoder (the module behind encoding/json/v2), which
// reads a large batch in half the time of encoding/json.
func DecodeProductsBody(body []byte) (ProductsBody, error) {
	var fast struct {
		Products []ProductInput `json:"products"`
		SchemaID *string        `json:"schema_id"`
	}
	if err := jsonv2.Unmarshal(body, &fast, jsonv2.RejectUnknownMembers(true)); err == nil && fast.Products != nil {
		return ProductsBody{Rows: fast.Products, RowErrs: make([]error, len(fast.Products)), SchemaID: fast.SchemaID}, nil
	}
	var slow struct {
		Products jsontext.Value `json:"products"`
		SchemaID *string        `json:"schema_id"`
	}
	// Duplicate names are left for each row's own decoding to report.
	if err := jsonv2.Unmarshal(body, &slow, jsontext.AllowDuplicateNames(true)); err != nil {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) {
			return ProductsBody{}, Errorf(EINVALID, "the body is not valid JSON: %s (at byte %d)", syn.Err, syn.ByteOffset)
		}
		return ProductsBody{}, Errorf(EINVALID, "the body must be a JSON object with a products array")
	}
	var raws []jsontext.Value
	if slow.Products.Kind() != '[' || jsonv2.Unmarshal(slow.Products, &raws, jsontext.AllowDuplicateNames(true)) != nil {
		return ProductsBody{}, Errorf(EINVALID, "products is required and must be an array")
	}
	b := ProductsBody{Rows: make([]ProductInput, len(raws)), RowErrs: make([]error, len(raws)), SchemaID: slow.SchemaID}
	for i, raw := range raws {
		b.Rows[i], b.RowErrs[i] = decodeProduct(raw)
	}
	return b, nil
}

// PrepareProducts validates every row of a products upsert: a row that
// could not be read keeps its error; attrs are coerced through schema when
// one is given; the import rules of ProductInput.Normalize apply. A SKU
// repeated in the batch keeps its last row; the earlier rows are reported.
// Errors come in row order.
func (body ProductsBody) PrepareProducts(schema *CatalogueSchema, orgCurrency string) ProductBatch {
	b := ProductBatch{Rows: len(body.Rows), Errors: []RowError{}}
	bySKU := map[string]int{} // SKU → position in b.Products
	rowOf := map[string]int{} // SKU → row index of the kept product
	for i, p := range body.Rows {
		err := body.RowErrs[i]
		if err == nil && schema != nil {
			err = p.coerceAttrs(schema)
		}
		if err == nil {
			err = p.Normalize(orgCurrency)
		}
		if err != nil {
			b.Errors = append(b.Errors, RowError{Index: i, Reason: ErrorMessage(err)})
			continue
		}
		if at, dup := bySKU[p.SKU]; dup {
			b.Errors = append(b.Errors, RowError{Index: rowOf[p.SKU],
				Reason: fmt.Sprintf("sku %q is repeated by row %d, whose values are kept", p.SKU, i)})
			b.Products[at] = p
			rowOf[p.SKU] = i
			continue
		}
		bySKU[p.SKU] = len(b.Products)
		rowOf[p.SKU] = i
		b.Products = append(b.Products, p)
	}
	sort.SliceStable(b.Errors, func(i, j int) bool { return b.Errors[i].Index < b.Errors[j].Index })
	return b
}

// decodeProduct reads one row straight into a product: a field that is not a
// product field, or of the wrong type, is named in the error.
func decodeProduct(raw jsontext.Value) (ProductInput, error) {
	var p ProductInput
	if raw.Kind() != '{' {
		return p, Errorf(EINVALID, "a product must be a JSON object, not %s", kindName(raw.Kind()))
	}
	if err := jsonv2.Unmarshal(raw, &p, jsonv2.RejectUnknownMembers(true)); err != nil {
		return p, Errorf(EINVALID, "%s", rowProblem(err))
	}
	return p, nil
}

// rowProblem names what is wrong with a row, from a JSON v2 decoding error.
func rowProblem(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		field := strings.TrimPrefix(string(se.JSONPointer), "/")
		switch {
		case errors.Is(se.Err, jsonv2.ErrUnknownName):
			return fmt.Sprintf("unknown field %q (product fields: %s)", field, strings.Join(productFieldNames, ", "))
		case se.GoType != nil:
			got := kindName(se.JSONKind)
			if se.JSONKind == '0' && se.Err != nil {
				got = "a number that does not fit"
			}
			return fmt.Sprintf("%s: expected %s, got %s", field, goTypeName(se.GoType), got)
		}
	}
	var de *jsontext.SyntacticError
	if errors.As(err, &de) {
		if errors.Is(de.Err, jsontext.ErrDuplicateName) {
			return fmt.Sprintf("field %s is given twice", strings.TrimPrefix(string(de.JSONPointer), "/"))
		}
		return "not valid JSON: " + de.Err.Error()
	}
	return "not a valid product"
}

var productFieldNames = []string{"sku", "title", "category", "uom", "price_minor", "currency", "stock_qty",
	"lead_time_days", "attrs", "status", "external_id"}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "nothing"
}

func goTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[JSONObject]() {
		return "an object"
	}
	return jsonKind(t.Kind().String())
}

// coerceAttrs applies a catalogue schema to the product's attributes.
func (p *ProductInput) coerceAttrs(schema *CatalogueSchema) error {
	attrs := map[string]any{}
	if len(p.Attrs) > 0 {
		if err := json.Unmarshal(p.Attrs, &attrs); err != nil {
			return Errorf(EINVALID, "attrs must be an object")
		}
	}
	if err := schema.Coerce(attrs); err != nil {
		return err
	}
	p.Attrs = ObjectOf(attrs)
	return nil
}
