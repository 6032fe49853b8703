package main

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf16"
)

// The limits the suite sends at and past (README, docs/design.md#the-inbound-pipeline and
// 11).
const (
	bulkLimit      = 32 << 20
	bulkRows       = 10000
	customersLimit = 8 << 20
	customersMax   = 500
	requestLimit   = 2 << 20
	requestText    = 100000
	movementLimit  = 1 << 20 // Huma's default body limit
	inboundLimit   = 1 << 20
	inboundCust    = 500
	inboundProd    = 1000
	categoryLong   = 3000
	// invoiceRefMax is the longest invoice_ref an inbound invoice may carry.
	invoiceRefMax = 500
)

// bodySet are the large bodies, built once and sent by every client.
type bodySet struct {
	bulk, bulk10001, slow                    []byte
	customers, customersEmpty, customers501  []byte
	request                                  []byte
	inbound                                  map[string][]byte
	inboundCustEmpty, inboundProdEmpty       []byte
	inboundCustomers501, inboundProducts1001 []byte
}

func newBodySet(size Size) *bodySet {
	row := func(i int) string { return fmt.Sprintf(`{"sku":"ABUSE-X-%05d","title":"t"}`, i) }
	b := &bodySet{
		bulk:                productRows("ABUSE-B", bulkRows, bulkLimit),
		bulk10001:           countedItems("products", bulkRows+1, row),
		slow:                productRows("ABUSE-B", size.SlowRows, size.SlowRows*(bulkLimit/bulkRows)),
		customers:           customersAtMax(),
		customersEmpty:      repeatedItems("customers", "{}", customersLimit),
		customers501:        countedItems("customers", customersMax+1, func(int) string { return `{"company":"A"}` }),
		request:             requestAtMax(),
		inboundCustEmpty:    repeatedItems("customers", "{}", inboundLimit),
		inboundProdEmpty:    repeatedItems("products", "{}", inboundLimit),
		inboundCustomers501: countedItems("customers", inboundCust+1, func(int) string { return `{"company":"A"}` }),
		inboundProducts1001: countedItems("products", inboundProd+1, row),
	}
	at := func(format string, args ...any) []byte { return pad(fmt.Appendf(nil, format, args...), inboundLimit) }
	b.inbound = map[string][]byte{
		"create_request": at(`{"title":"%s","text":"%s","external_ref":"abuse-at-limit","customer":{"company":"Abuse Buyer Ltd","email":"buyer@buyer.abuse.example"}}`,
			strings.Repeat("T", 200), escaped('é', requestText)),
		"upsert_customers":   inboundCustomers(),
		"upsert_products":    productRows("ABUSE-I", inboundProd, inboundLimit),
		"erp_order_status":   at(`{"order_ref":%q,"status":"processing","tracking_url":"https://track.example.com/abuse"}`, limitOrder),
		"order_invoice":      at(`{"order_ref":%q,"invoice_ref":"ABUSE-INV-1"}`, invoiceOrder),
		"purchase_order_ack": at(`{"po_number":%q,"supplier_ref":"ABUSE-ACK"}`, ackPO),
		"supplier_invoice":   at(`{"po_number":%q,"invoice_ref":"%s","invoiced_qty":1}`, invoicePO, strings.Repeat("R", invoiceRefMax)),
		"delivery_status":    at(`{"delivery_ref":%q,"status":"ready"}`, limitDelivery),
	}
	return b
}

// pad fills b with spaces (JSON allows white space after a value) to n
// bytes. The bodies are built below their limits by construction.
func pad(b []byte, n int) []byte {
	if len(b) > n {
		panic(fmt.Sprintf("abuse: a body of %d bytes was built for a limit of %d", len(b), n))
	}
	return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
}

// escaped is r written n times as JSON \u escapes: six bytes for a
// character of the basic plane, twelve (a surrogate pair) beyond it, so that
// the decoder does the most work for each character.
func escaped(r rune, n int) string {
	var one string
	if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' {
		one = fmt.Sprintf(`\u%04x\u%04x`, r1, r2)
	} else {
		one = fmt.Sprintf(`\u%04x`, r)
	}
	return strings.Repeat(one, n)
}

// asciiEscaped writes s with every character as a \u escape.
func asciiEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// productRows builds {"products": [...]} of n valid products of about the
// same size, SKUs prefix-00000 on, padded to exactly size bytes. Titles are
// written as escapes where there is room, up to their 500 characters.
func productRows(prefix string, n, size int) []byte {
	const frame = len(`{"products":[]}`)
	per := (size - frame - n) / n
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"products":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		head := fmt.Sprintf(`{"sku":"%s-%05d","category":"Abuse","uom":"box","price_minor":1234,"currency":"GBP",`+
			`"stock_qty":1.5,"lead_time_days":3,"status":"active","external_id":"%s-%05d","title":"`, prefix, i, prefix, i)
		const mid, tail = `","attrs":{"note":"`, `"}}`
		room := per - len(head) - len(mid) - len(tail) - 1
		title := escaped('é', min(500, max(1, room/6)))
		note := strings.Repeat("x", max(0, room-len(title)))
		b.WriteString(head + title + mid + note + tail)
	}
	b.WriteString(`]}`)
	return pad(b.Bytes(), size)
}

// repeatedItems builds {"<field>": [item,item,...]} with as many items as fit
// in size bytes, padded to exactly size.
func repeatedItems(field, item string, size int) []byte {
	open, end := `{"`+field+`":[`, `]}`
	n := (size - len(open) - len(end) + 1) / (len(item) + 1)
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(open)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(end)
	return pad(b.Bytes(), size)
}

// countedItems builds {"<field>": [...]} of exactly n items made by item.
func countedItems(field string, n int, item func(i int) string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"` + field + `":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item(i))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// customersAtMax builds 500 customers with every field at its longest,
// every character escaped (company and phone as surrogate pairs), padded to
// the 8 MB limit.
func customersAtMax() []byte {
	return pad(countedItems("customers", customersMax, func(i int) string {
		id := fmt.Sprintf("ABUSE-C-%03d-", i)
		domain := fmt.Sprintf("@c%03d.abuse.example", i)
		email := strings.Repeat("a", 320-len(domain)) + domain
		return fmt.Sprintf(`{"company":"%s","email":"%s","phone":"%s","external_id":"%s%s"}`,
			escaped('😀', 500), asciiEscaped(email), escaped('😀', 50), id, escaped('😀', 200-len(id)))
	}), customersLimit)
}

// inboundCustomers builds 500 plain customers padded to the 1 MB inbound
// limit.
func inboundCustomers() []byte {
	return pad(countedItems("customers", inboundCust, func(i int) string {
		return fmt.Sprintf(`{"company":"%s","email":"buyer@ic%03d.abuse.example","phone":"%s","external_id":"ABUSE-IC-%03d"}`,
			strings.Repeat("C", 500), i, strings.Repeat("1", 50), i)
	}), inboundLimit)
}

// requestAtMax is a request of 100000 characters written as surrogate-pair
// escapes, with a 200-character title, padded to the 2 MB limit.
func requestAtMax() []byte {
	return pad(fmt.Appendf(nil, `{"title":"%s","text":"%s"}`, escaped('😀', 200), escaped('😀', requestText)), requestLimit)
}

// movementAt is a valid adjustment with a 200-character reference, padded
// to size bytes (not padded when size is 0).
func movementAt(productID, key string, qty, size int) []byte {
	b := fmt.Appendf(nil, `{"kind":"adjustment","qty":%d,"product_id":"%s","idempotency_key":"%s","reference":"%s"}`,
		qty, productID, key, escaped('é', 200))
	if size == 0 {
		return b
	}
	return pad(b, size)
}

// nested is depth opening brackets, then depth closing ones.
func nested(open, close string, depth int) []byte {
	return []byte(strings.Repeat(open, depth) + strings.Repeat(close, depth))
}

// nestedObjects is {"a":{"a":...{}...}} depth deep.
func nestedObjects(depth int) []byte {
	return []byte(strings.Repeat(`{"a":`, depth) + "{}" + strings.Repeat("}", depth))
}

// manyKeys is one object with n members.
func manyKeys(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// malformedBody is a body no route should take, or one a route may take
// but must not choke on.
type malformedBody struct {
	name string
	body []byte
	// lenient bodies are ones a decoder may accept (invalid UTF-8 or a lone
	// surrogate read as U+FFFD, a repeated member, many members): any
	// answer but a 5xx is fine.
	lenient bool
}

// malformedBodies are the bad bodies for a route whose main member is
// field.
func malformedBodies(field string) []malformedBody {
	f := `"` + field + `"`
	return []malformedBody{
		{name: "not JSON", body: []byte("hello")},
		{name: "empty body", body: []byte{}},
		{name: "truncated", body: []byte(`{` + f + `:[{"a":"b"`)},
		{name: "trailing data", body: []byte(`{} {}`)},
		{name: "array", body: []byte(`[]`)},
		{name: "null", body: []byte(`null`)},
		{name: "string", body: []byte(`"x"`)},
		{name: "byte order mark", body: []byte("\xef\xbb\xbf{}")},
		{name: "invalid UTF-8 in a value", body: []byte(`{` + f + ":\"\xff\xfe\xc3\"}"), lenient: true},
		{name: "invalid UTF-8 in a name", body: []byte("{\"\xff\xfe\":1}"), lenient: true},
		{name: "NUL byte", body: []byte(`{` + f + ":\"a\x00b\"}")},
		{name: "escaped NUL", body: []byte(`{` + f + `:"a\u0000b"}`)},
		{name: "lone surrogate", body: []byte(`{` + f + `:"\ud800"}`), lenient: true},
		{name: "number 1e999999", body: []byte(`{` + f + `:1e999999}`)},
		{name: "400-digit number", body: []byte(`{` + f + `:` + strings.Repeat("9", 400) + `}`)},
		{name: "repeated member", body: []byte(`{` + f + `:[],` + f + `:[]}`), lenient: true},
		{name: "50,000 members", body: manyKeys(50000), lenient: true},
	}
}

// nestedBodies are the deeply nested bodies for a route whose main member
// is field.
func nestedBodies(field string) []malformedBody {
	return []malformedBody{
		{name: "100k nested arrays", body: nested("[", "]", 100000)},
		{name: "100k nested objects", body: nestedObjects(100000)},
		{name: "100k nested arrays in " + field, body: []byte(`{"` + field + `":` + string(nested("[", "]", 100000)) + `}`)},
		{name: "10k nested objects in a row", body: []byte(`{"` + field + `":[` + string(nestedObjects(10000)) + `]}`)},
	}
}
