package devpg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestPrivateClusterStartsStopsAndKeepsData(t *testing.T) {
	if _, err := FindBinaries(); errors.Is(err, ErrNotInstalled) {
		t.Skip("PostgreSQL server binaries are not installed")
	}
	ctx := context.Background()
	base := t.TempDir()
	// The cluster may run as another user (when tests run as root): let it in.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "pg")
	c, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	port := c.Port()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	// A second start finds the data, on the same port.
	c2, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Stop() })
	if c2.Port() != port {
		t.Errorf("port changed from %d to %d", port, c2.Port())
	}
	conn, err = pgx.Connect(ctx, c2.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != 42 {
		t.Fatalf("data not kept: %d, %v", v, err)
	}

	// A start while it runs (a killed earlier run) adopts the running server.
	c3, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if c3.Port() != port {
		t.Fatalf("adopted server on port %d, want %d", c3.Port(), port)
	}
}
