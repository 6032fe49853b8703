package domain

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// productRows reads the rows of a products array straight off the decoder,
// one member at a time: each byte of the body is scanned once, by the
// decoder, and a row's fields are taken from the raw values it returns.
// A row that is not a product (a field of the wrong type, an unknown or
// repeated field) gets that row's error, naming the first problem in the
// row's order, the rest of the row is skipped, and the next row is read;
// a body that is not valid JSON stops the whole read.
//
// The rows' text shares a little memory: each row's strings are one
// allocation, attrs and the numbers come from blocks shared by many rows.
type productRows struct {
	dec *jsontext.Decoder
	// text collects one row's unquoted strings, end to end.
	text   []byte
	spans  [productFieldCount]span
	attrs  byteBlocks
	int64s slab[int64]
	ints   slab[int]
	floats slab[float64]
	strs   slab[string]
}

// span is where a string field's value sits in productRows.text.
type span struct{ from, to int }

// The fields of a product row, as bits of a set.
const (
	fieldSKU = iota
	fieldTitle
	fieldCategory
	fieldUOM
	fieldPriceMinor
	fieldCurrency
	fieldStockQty
	fieldLeadTimeDays
	fieldAttrs
	fieldStatus
	fieldExternalID
	productFieldCount
)

// productField gives a row's member name its field; -1 when it is not one.
func productField(name []byte) int {
	switch string(name) {
	case "sku":
		return fieldSKU
	case "title":
		return fieldTitle
	case "category":
		return fieldCategory
	case "uom":
		return fieldUOM
	case "price_minor":
		return fieldPriceMinor
	case "currency":
		return fieldCurrency
	case "stock_qty":
		return fieldStockQty
	case "lead_time_days":
		return fieldLeadTimeDays
	case "attrs":
		return fieldAttrs
	case "status":
		return fieldStatus
	case "external_id":
		return fieldExternalID
	}
	return -1
}

// read reads the next row into p. rowErr is the row's own problem; err is
// a problem of the body (not valid JSON), after which nothing more can be
// read.
func (r *productRows) read(p *ProductInput) (rowErr, err error) {
	if k := r.dec.PeekKind(); k != '{' {
		if err := r.dec.SkipValue(); err != nil {
			return nil, err
		}
		return Errorf(EINVALID, "a product must be a JSON object, not %s", kindName(k)), nil
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, err
	}
	r.text = r.text[:0]
	var seen uint16
	var given uint16 // the string fields given as strings
	for r.dec.PeekKind() != '}' {
		name, err := r.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if rowErr != nil { // the row is already refused: skip the rest
			if err := r.dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		unquoted := unquoteName(name)
		f := productField(unquoted)
		switch {
		case f < 0:
			rowErr = Errorf(EINVALID, "unknown field %s (product fields: %s)", quoted(string(unquoted)), productFieldList)
		case seen&(1<<f) != 0:
			rowErr = Errorf(EINVALID, "field %s is given twice", productFieldNames[f])
		}
		if rowErr != nil {
			if err := r.dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		seen |= 1 << f
		v, err := r.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if problem := r.field(p, f, v); problem != "" {
			rowErr = Errorf(EINVALID, "%s", problem)
			continue
		}
		if v.Kind() == '"' {
			given |= 1 << f
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, err
	}
	if rowErr == nil && given != 0 {
		r.setStrings(p, given)
	}
	return rowErr, nil
}

// field takes one field's raw value into p; a value of the wrong type is
// refused with what was expected and what came, as the problem returned.
// A string field's value is only noted here (see setStrings).
func (r *productRows) field(p *ProductInput, f int, v jsontext.Value) (problem string) {
	k := v.Kind()
	if k == 'n' { // null leaves a field unset
		return ""
	}
	wrong := func(t reflect.Type) string {
		return fmt.Sprintf("%s: expected %s, got %s", productFieldNames[f], goTypeName(t), kindName(k))
	}
	doesNotFit := func(t reflect.Type) string {
		return fmt.Sprintf("%s: expected %s, got a number that does not fit", productFieldNames[f], goTypeName(t))
	}
	switch f {
	case fieldSKU, fieldTitle, fieldCategory, fieldUOM, fieldCurrency, fieldStatus, fieldExternalID:
		if k != '"' {
			return wrong(reflect.TypeFor[string]())
		}
		from := len(r.text)
		if bytes.IndexByte(v, '\\') < 0 {
			r.text = append(r.text, v[1:len(v)-1]...)
		} else {
			r.text, _ = jsontext.AppendUnquote(r.text, v) // valid: the decoder read it
		}
		r.spans[f] = span{from, len(r.text)}
	case fieldPriceMinor, fieldLeadTimeDays:
		if k != '0' {
			return wrong(reflect.TypeFor[int64]())
		}
		n, ok := parseInteger(v)
		if !ok {
			return doesNotFit(reflect.TypeFor[int64]())
		}
		if f == fieldPriceMinor {
			p.PriceMinor = r.int64s.new(n)
		} else {
			p.LeadTimeDays = r.ints.new(int(n))
		}
	case fieldStockQty:
		if k != '0' {
			return wrong(reflect.TypeFor[float64]())
		}
		q, ok := parseNumber(v)
		if !ok {
			return doesNotFit(reflect.TypeFor[float64]())
		}
		p.StockQty = r.floats.new(q)
	case fieldAttrs:
		if k != '{' {
			return wrong(reflect.TypeFor[JSONObject]())
		}
		// The body's decoder lets names repeat (a row reports its own);
		// inside attrs that is checked here.
		if mayRepeatNames(v) && !v.IsValid() {
			return repeatedInside(v)
		}
		p.Attrs = JSONObject(r.attrs.copy(v))
	}
	return ""
}

// setStrings sets the string fields the row gave from its text, copied once
// for them all.
func (r *productRows) setStrings(p *ProductInput, given uint16) {
	text := string(r.text)
	value := func(f int) string { return text[r.spans[f].from:r.spans[f].to] }
	for f := range productFieldCount {
		if given&(1<<f) == 0 {
			continue
		}
		switch f {
		case fieldSKU:
			p.SKU = value(f)
		case fieldTitle:
			p.Title = value(f)
		case fieldCategory:
			p.Category = r.strs.new(value(f))
		case fieldUOM:
			p.UOM = value(f)
		case fieldCurrency:
			p.Currency = value(f)
		case fieldStatus:
			p.Status = ProductStatus(value(f))
		case fieldExternalID:
			p.ExternalID = r.strs.new(value(f))
		}
	}
}

// unquoteName returns a member name's text (its quotes and escapes gone).
func unquoteName(name jsontext.Value) []byte {
	if bytes.IndexByte(name, '\\') < 0 {
		return name[1 : len(name)-1]
	}
	b, _ := jsontext.AppendUnquote(nil, name) // valid: the decoder read it
	return b
}

// repeatedInside names the problem of an attrs object the decoder read but
// that is not valid on its own: a name repeated in it, somewhere.
func repeatedInside(v jsontext.Value) string {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	for {
		if _, err := dec.ReadToken(); err != nil {
			var se *jsontext.SyntacticError
			if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
				return fmt.Sprintf("field %s is given twice", fieldPath("/attrs"+se.JSONPointer))
			}
			return "attrs: not valid JSON"
		}
	}
}

// mayRepeatNames reports whether an object the decoder has read (valid
// but for repeated names) may repeat a name: false when it certainly does
// not, which is most of the time and much quicker to tell than checking it
// whole (Value.IsValid). Only a flat object of a few names, none escaped,
// is told apart; for any other, it answers true.
func mayRepeatNames(v []byte) bool {
	var names [16]struct{ from, to int32 }
	n := 0
	for i := 1; i < len(v); i++ { // after the object's opening brace
		switch v[i] {
		case '{', '[':
			return true
		case '"':
			end := i + 1
			for v[end] != '"' {
				if v[end] == '\\' {
					return true
				}
				end++
			}
			// A name is a string followed by a colon.
			j := end + 1
			for v[j] == ' ' || v[j] == '\t' || v[j] == '\n' || v[j] == '\r' {
				j++
			}
			if v[j] == ':' {
				if n == len(names) {
					return true
				}
				name := v[i+1 : end]
				for _, seen := range names[:n] {
					if string(v[seen.from:seen.to]) == string(name) {
						return true
					}
				}
				names[n] = struct{ from, to int32 }{int32(i + 1), int32(end)}
				n++
			}
			i = end
		}
	}
	return false
}

// parseInteger reads a JSON number as an int64; false when it has a
// fraction or an exponent, or does not fit.
func parseInteger(v []byte) (int64, bool) {
	neg := v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) > 18 { // may not fit: let strconv say
		n, err := strconv.ParseInt(string(v), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseNumber reads a JSON number as a float64; false when it is beyond a
// float64's range.
func parseNumber(v []byte) (float64, bool) {
	if len(v) <= 15 { // a whole number of at most 15 digits is exact
		if n, ok := parseInteger(v); ok {
			return float64(n), true
		}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// slab hands out values from blocks shared by many of them, so that a
// batch's rows do not cost an allocation per field.
type slab[T any] struct{ free []T }

// new returns a pointer to a copy of v.
func (s *slab[T]) new(v T) *T {
	if len(s.free) == 0 {
		s.free = make([]T, 256)
	}
	p := &s.free[0]
	*p = v
	s.free = s.free[1:]
	return p
}

// byteBlocks copies byte strings into blocks shared by many of them.
type byteBlocks struct{ free []byte }

const byteBlockLen = 16 << 10

// copy returns a copy of b, which appending to cannot spill into another.
func (a *byteBlocks) copy(b []byte) []byte {
	if len(b) > cap(a.free) {
		if len(b) > byteBlockLen/4 { // a large value gets its own
			return bytes.Clone(b)
		}
		a.free = make([]byte, 0, byteBlockLen)
	}
	buf := append(a.free, b...) // within its capacity
	a.free = buf[len(buf):]
	return buf[:len(buf):len(buf)]
}
