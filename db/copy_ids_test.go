package db

import (
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
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
