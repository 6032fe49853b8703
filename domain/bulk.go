package domain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
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
// the products as rows, the error of each row that could not be read (by
// row index), and the catalogue schema named.
type ProductsBody struct {
	Rows     []ProductInput
	RowErrs  map[int]error
	SchemaID *string
}

// DecodeProductsBody reads {"products": [...], "schema_id": ...}, carrying at
// most max products: the array is read one product at a time, and the one
// after max is ETOOLARGE before the rest of the body is looked at. Each
// malformed row gets its own error and the others are still written. A body
// that is not a JSON object with a products array is EINVALID; other
// members are ignored. Field names match exactly; a repeated name, invalid
// UTF-8 or a number out of range is an error.
func DecodeProductsBody(body []byte, max int) (ProductsBody, error) {
	return decodeProductsByRow(bytes.NewReader(body), max)
}

// ReadProductsBody is DecodeProductsBody for a body read as it arrives: one
// pass, a row at a time, so that the body is never held whole and the row
// past max is refused before the rest is read. The body is read through a
// 64 KB buffer: the decoder asks for at most 4 KB at a time, which read
// straight from a connection would cost a system call each.
func ReadProductsBody(r io.Reader, max int) (ProductsBody, error) {
	return decodeProductsByRow(bufio.NewReaderSize(r, 64<<10), max)
}

// tooMany is the error of a body carrying more than max items.
func tooMany(max int, what string) error {
	return Errorf(ETOOLARGE, "the body carries more than %d %s", max, what)
}

var (
	errTooManyItems = errors.New("too many items")
	errNotArray     = errors.New("not an array")
)

// limitedArray decodes a JSON array in the same pass as the body around it,
// one item at a time, and stops at the item after max before decoding it:
// a body of millions of tiny items costs no more than max of them.
type limitedArray[T any] struct {
	max int
	// minBytes is the size of the smallest valid item, which bounds the
	// items the rest of the body can hold.
	minBytes int
	items    []T
	read     bool
}

// UnmarshalJSONFrom implements the JSON v2 UnmarshalerFrom interface.
func (r *limitedArray[T]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		return errNotArray
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	r.items = make([]T, 0, min(r.max, len(dec.UnreadBuffer())/r.minBytes+1))
	for dec.PeekKind() != ']' {
		if len(r.items) == r.max {
			return errTooManyItems
		}
		var zero T
		r.items = append(r.items, zero)
		if err := jsonv2.UnmarshalDecode(dec, &r.items[len(r.items)-1]); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	r.read = err == nil
	return err
}

// decodeProductsByRow reads a body a row at a time, so that each malformed
// row gets its own error.
func decodeProductsByRow(body io.Reader, max int) (ProductsBody, error) {
	notBatch := Errorf(EINVALID, "the body must be a JSON object with a products array")
	// Duplicate names inside a row are left for the row's own reading to
	// report; the body's own members are checked here.
	dec := jsontext.NewDecoder(body, jsontext.AllowDuplicateNames(true))
	tok, err := dec.ReadToken()
	if err != nil {
		return ProductsBody{}, syntaxError(err, notBatch)
	}
	if tok.Kind() != '{' {
		return ProductsBody{}, notBatch
	}
	var b ProductsBody
	seenProducts, seenSchema := false, false
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return ProductsBody{}, syntaxError(err, notBatch)
		}
		switch name := tok.String(); {
		case name == "products" && !seenProducts:
			seenProducts = true
			if err := b.readRows(dec, max); err != nil {
				return ProductsBody{}, err
			}
		case name == "schema_id" && !seenSchema:
			seenSchema = true
			raw, err := dec.ReadValue()
			if err != nil {
				return ProductsBody{}, syntaxError(err, notBatch)
			}
			if err := jsonv2.Unmarshal(raw, &b.SchemaID); err != nil {
				return ProductsBody{}, Errorf(EINVALID, "schema_id must be a string")
			}
		case name == "products" || name == "schema_id":
			return ProductsBody{}, Errorf(EINVALID, "%s is given twice", name)
		default:
			if err := dec.SkipValue(); err != nil {
				return ProductsBody{}, syntaxError(err, notBatch)
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return ProductsBody{}, syntaxError(err, notBatch)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		trailing := Errorf(EINVALID, "the body has more after its JSON object")
		if err == nil { // a second JSON value follows the object
			return ProductsBody{}, trailing
		}
		return ProductsBody{}, syntaxError(err, trailing)
	}
	if !seenProducts {
		return ProductsBody{}, Errorf(EINVALID, "products is required and must be an array")
	}
	return b, nil
}

// readRows reads the products array, a row at a time.
func (b *ProductsBody) readRows(dec *jsontext.Decoder, max int) error {
	if dec.PeekKind() != '[' {
		if _, err := dec.ReadValue(); err != nil {
			return syntaxError(err, nil)
		}
		return Errorf(EINVALID, "products is required and must be an array")
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxError(err, nil)
	}
	b.RowErrs = map[int]error{}
	reader := productRows{dec: dec}
	var rows rowChunks
	for n := 0; dec.PeekKind() != ']'; n++ {
		if n == max {
			return tooMany(max, "products")
		}
		rowErr, err := reader.read(rows.next())
		if err != nil {
			return syntaxError(err, nil)
		}
		if rowErr != nil {
			b.RowErrs[n] = rowErr
		}
	}
	b.Rows = rows.all()
	_, err := dec.ReadToken() // the closing bracket
	return syntaxError(err, nil)
}

// rowChunks holds rows as they are read, in chunks that never move, growing
// to 1,024 rows each, and puts them end to end once: a growing slice would
// copy them again at every growth.
type rowChunks struct {
	full  [][]ProductInput
	chunk []ProductInput
}

// next returns room for one more row.
func (c *rowChunks) next() *ProductInput {
	switch {
	case c.chunk == nil:
		c.chunk = make([]ProductInput, 0, 16)
	case len(c.chunk) == cap(c.chunk):
		c.full = append(c.full, c.chunk)
		c.chunk = make([]ProductInput, 0, min(2*cap(c.chunk), 1024))
	}
	c.chunk = append(c.chunk, ProductInput{})
	return &c.chunk[len(c.chunk)-1]
}

// all returns the rows end to end.
func (c *rowChunks) all() []ProductInput {
	switch {
	case c.chunk == nil:
		return []ProductInput{}
	case c.full == nil:
		return c.chunk
	}
	return slices.Concat(append(c.full, c.chunk)...)
}

// syntaxError describes a JSON syntax error by what and where; other errors
// (a value of the wrong kind) become otherwise.
func syntaxError(err error, otherwise error) error {
	if err == nil {
		return nil
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return Errorf(EINVALID, "the body is not valid JSON: %s (at byte %d)", syn.Err, syn.ByteOffset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Errorf(EINVALID, "the body is not valid JSON: it ends too soon")
	}
	if otherwise != nil {
		return otherwise
	}
	return Errorf(EINVALID, "the body is not valid JSON")
}

// PrepareProducts validates every row of a products upsert: a row that
// could not be read keeps its error; attrs are coerced through schema when
// one is given; the import rules of ProductInput.Normalize apply. A SKU
// repeated in the batch keeps its last row; the earlier rows are reported.
// Errors come in row order. The batch's products take the place of the
// body's rows, which are not to be used after.
func (body ProductsBody) PrepareProducts(schema *CatalogueSchema, orgCurrency string) ProductBatch {
	b := ProductBatch{Rows: len(body.Rows), Errors: []RowError{}, Products: body.Rows[:0]}
	type kept struct{ at, row int } // position in b.Products, row index
	bySKU := make(map[string]kept, len(body.Rows))
	for i := range body.Rows {
		p := &body.Rows[i]
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
		if k, dup := bySKU[p.SKU]; dup {
			b.Errors = append(b.Errors, RowError{Index: k.row,
				Reason: fmt.Sprintf("sku %q is repeated by row %d, whose values are kept", p.SKU, i)})
			b.Products[k.at] = *p
			bySKU[p.SKU] = kept{k.at, i}
			continue
		}
		bySKU[p.SKU] = kept{len(b.Products), i}
		if at := len(b.Products); at < i { // in place: at or before row i
			b.Products = append(b.Products, *p)
		} else {
			b.Products = b.Products[:at+1] // it is there already
		}
	}
	sort.SliceStable(b.Errors, func(i, j int) bool { return b.Errors[i].Index < b.Errors[j].Index })
	return b
}

// invalidJSON is the EINVALID error of a value of the named kind that did
// not decode (see decodeProblem).
func invalidJSON(err error, what string, fields []string) error {
	return Errorf(EINVALID, "%s", decodeProblem(err, what, fields))
}

// decodeProblem names what is wrong with a value of the named kind, from a
// JSON v2 decoding error: the field (as a path such as customers[3].email)
// and the problem.
func decodeProblem(err error, what string, fields []string) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		switch {
		case errors.Is(se.Err, jsonv2.ErrUnknownName):
			return prefixed(fieldPath(se.JSONPointer.Parent()), fmt.Sprintf("unknown field %s (%s fields: %s)",
				quoted(se.JSONPointer.LastToken()), what, strings.Join(fields, ", ")))
		case se.GoType != nil:
			got := kindName(se.JSONKind)
			if se.JSONKind == '0' && se.Err != nil {
				got = "a number that does not fit"
			}
			return prefixed(fieldPath(se.JSONPointer), fmt.Sprintf("expected %s, got %s", goTypeName(se.GoType), got))
		}
	}
	var de *jsontext.SyntacticError
	if errors.As(err, &de) {
		if errors.Is(de.Err, jsontext.ErrDuplicateName) {
			return fmt.Sprintf("field %s is given twice", fieldPath(de.JSONPointer))
		}
		return "not valid JSON: " + de.Err.Error()
	}
	return "not a valid " + what
}

// fieldPath writes a JSON pointer as a path: /customers/3/email is
// customers[3].email. Names are cut short, as they are the caller's.
func fieldPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(Abbreviate(tok, 60))
	}
	return b.String()
}

// prefixed puts a path before a problem, when there is one.
func prefixed(path, problem string) string {
	if path == "" {
		return problem
	}
	return path + ": " + problem
}

// productFieldNames are the fields of a product row, in the order of their
// field numbers (fieldSKU, ...).
var productFieldNames = []string{"sku", "title", "category", "uom", "price_minor", "currency", "stock_qty",
	"lead_time_days", "attrs", "status", "external_id"}

// productFieldList names them for an error message.
var productFieldList = strings.Join(productFieldNames, ", ")

// coerceAttrs applies a catalogue schema to the product's attributes.
func (p *ProductInput) coerceAttrs(schema *CatalogueSchema) error {
	// Attributes the schema does not declare are kept exactly as sent.
	raws := map[string]json.RawMessage{}
	if len(p.Attrs) > 0 {
		if err := json.Unmarshal(p.Attrs, &raws); err != nil {
			return Errorf(EINVALID, "attrs must be an object")
		}
	}
	attrs := make(map[string]any, len(schema.Fields))
	for _, f := range schema.Fields {
		raw, ok := raws[f.Key]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return Errorf(EINVALID, "attrs.%s is not valid JSON", f.Key)
		}
		attrs[f.Key] = v
	}
	if err := schema.Coerce(attrs); err != nil {
		return err
	}
	for k, v := range attrs {
		b, err := json.Marshal(v)
		if err != nil {
			return Errorf(EINVALID, "attrs.%s cannot be stored", k)
		}
		raws[k] = b
	}
	b, err := json.Marshal(raws)
	if err != nil {
		return Errorf(EINVALID, "attrs cannot be stored")
	}
	p.Attrs = JSONObject(b)
	return nil
}
