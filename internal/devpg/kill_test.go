package devpg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestAKilledClusterRestartsOnItsPortWithItsCommittedData SIGKILLs the
// postmaster: connections fail, and Restart brings the cluster back on the
// same port with what was committed before the kill (crash recovery).
func TestAKilledClusterRestartsOnItsPortWithItsCommittedData(t *testing.T) {
	if _, err := FindBinaries(); errors.Is(err, ErrNotInstalled) {
		t.Skip("PostgreSQL server binaries are not installed")
	}
	ctx := context.Background()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Start(ctx, filepath.Join(base, "pg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	port := c.Port()
	pid, err := c.PID()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Error("a connection still answered after the postmaster's SIGKILL")
	}
	conn.Close(ctx)
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Port() != port {
		t.Errorf("restarted on port %d, want %d", c.Port(), port)
	}
	if again, err := c.PID(); err != nil || again == pid {
		t.Errorf("postmaster pid after the restart: %d (%v), before: %d", again, err, pid)
	}
	conn, err = pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != 7 {
		t.Fatalf("committed data after the restart: %d, %v", v, err)
	}
}
