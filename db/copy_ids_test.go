package db

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/commerce-integration/commerce/domain"
)

// The ids the products upsert COPYs encode in binary as they are: a
// uuid.UUID does not (its driver.Valuer gives text, which the binary
// encoder refuses, so pgx formats an error and parses the text instead,
// once per row).
func TestCopiedProductIDsEncodeInBinary(t *testing.T) {
	m := pgtype.NewMap()
	if _, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, pgtype.UUID{Bytes: NewID(), Valid: true}, nil); err != nil {
		t.Fatalf("pgtype.UUID: %v", err)
	}
	if _, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, NewID(), nil); err == nil {
		t.Log("uuid.UUID now encodes in binary too: the conversion in upsertProducts is no longer needed")
	}
}

func BenchmarkCopyIDEncode(b *testing.B) {
	m := pgtype.NewMap()
	b.Run("pgtype.UUID", func(b *testing.B) {
		for b.Loop() {
			_, _ = m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, pgtype.UUID{Bytes: NewID(), Valid: true}, nil)
		}
	})
	b.Run("uuid.UUID", func(b *testing.B) {
		for b.Loop() {
			_, _ = m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, NewID(), nil)
		}
	})
}

// productCopy's stream is what pgx's own encoding of the same values, in
// binary, would be, field for field, set or NULL.
func TestProductCopyStreamIsPgxsBinaryEncoding(t *testing.T) {
	m := pgtype.NewMap()
	category, external := "Fasteners", "ERP-7"
	price, lead, stock := int64(-123456789012), 2147483647, 2.125
	products := []domain.ProductInput{
		{SKU: "A-1", Title: "Hex bolt ünïcode", Category: &category, UOM: "box", PriceMinor: &price, Currency: "EUR",
			StockQty: &stock, LeadTimeDays: &lead, Attrs: domain.JSONObject(`{"m": [1, 2.5]}`), Status: domain.ProductDraft, ExternalID: &external},
		{SKU: "B-2", Title: "Washer", UOM: "each", Currency: "GBP", Status: domain.ProductActive},
	}
	ids, err := newIDs(len(products))
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{}, copyHeader...)
	oids := []uint32{pgtype.UUIDOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.Int8OID, pgtype.TextOID,
		pgtype.NumericOID, pgtype.Int4OID, pgtype.JSONBOID, pgtype.TextOID, pgtype.TextOID}
	for i, p := range products {
		attrs := string(p.Attrs)
		if attrs == "" {
			attrs = "{}"
		}
		want = binary.BigEndian.AppendUint16(want, uint16(len(oids)))
		for f, v := range []any{pgtype.UUID{Bytes: ids[i], Valid: true}, p.SKU, p.Title, p.Category, p.UOM, p.PriceMinor, p.Currency,
			p.StockQty, p.LeadTimeDays, attrs, string(p.Status), p.ExternalID} {
			enc, err := m.Encode(oids[f], pgtype.BinaryFormatCode, v, nil)
			if err != nil {
				t.Fatal(err)
			}
			if enc == nil {
				want = binary.BigEndian.AppendUint32(want, 0xffffffff)
				continue
			}
			want = binary.BigEndian.AppendUint32(want, uint32(len(enc)))
			want = append(want, enc...)
		}
	}
	want = binary.BigEndian.AppendUint16(want, 0xffff)
	var got []byte
	c := newProductCopy(products, ids)
	chunk := make([]byte, 7) // small reads: rows are split across them
	for {
		n, err := c.Read(chunk)
		got = append(got, chunk[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stream\n%x\nwant\n%x", got, want)
	}
}

// Encoding a row allocates nothing once the stream's buffer is there.
func TestProductCopyRowsDoNotAllocate(t *testing.T) {
	category, price, lead := "Fasteners", int64(1250), 3
	p := domain.ProductInput{SKU: "A", Title: "t", Category: &category, UOM: "each", PriceMinor: &price, Currency: "GBP",
		LeadTimeDays: &lead, Attrs: domain.JSONObject(`{"a": 1}`), Status: domain.ProductActive}
	c := newProductCopy(nil, nil)
	id := NewID()
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.appendRow(c.buf[:0], &p, id); err != nil {
			t.Fatal(err)
		}
	}); allocs > 0 {
		t.Errorf("a row allocates %v times", allocs)
	}
}
