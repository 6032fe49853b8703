package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/commerce-integration/commerce/internal/testdb"
)

// A uuid.UUID parameter is encoded by the uuid codec directly: without
// the pool's registration pgx takes it for a driver.Valuer, fails to
// encode its text in the binary format, builds an error naming the value
// and parses the text back, allocating each time.
func TestUUIDParametersAreEncodedWithoutADetour(t *testing.T) {
	d := testdb.New(t)
	conn, err := d.Pool().Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tm := conn.Conn().TypeMap()
	id := uuid.New()
	buf := make([]byte, 0, 64)
	encoded, err := tm.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, id, buf)
	if err != nil || string(encoded) != string(id[:]) {
		t.Fatalf("encoded %x, %v; want the uuid's 16 bytes", encoded, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = tm.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, id, buf)
	})
	if allocs > 2 {
		t.Fatalf("encoding a uuid parameter allocates %.0f times; want at most 2 (no error built and thrown away)", allocs)
	}
	var back uuid.UUID
	if err := conn.QueryRow(context.Background(), `SELECT $1::uuid`, id).Scan(&back); err != nil || back != id {
		t.Fatalf("read back %s, %v; want %s", back, err, id)
	}
}
