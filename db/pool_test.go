package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestConnectSizesThePool(t *testing.T) {
	d := testdb.New(t)
	for _, c := range []struct{ asked, want int32 }{{0, db.DefaultMaxConns}, {7, 7}} {
		p, err := db.Connect(context.Background(), d.URL, c.asked)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Pool().Config().MaxConns; got != c.want {
			t.Errorf("Connect(%d): MaxConns %d, want %d", c.asked, got, c.want)
		}
		p.Close()
	}
}

// With every connection held, a statement waits the pool's acquire wait and
// fails with ErrPoolBusy, which Unavailable reports; once a connection is
// free again statements run. Without a wait, a statement waits for its
// context.
func TestAFullPoolFailsAStatementAfterItsAcquireWait(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	p, err := db.ConnectWith(ctx, d.URL, db.Options{MaxConns: 2, AcquireWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	held := make([]func(), 0, 2)
	for range 2 {
		c, err := p.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c.Release)
	}
	_, err = p.Pool().Exec(ctx, `SELECT 1`)
	if !errors.Is(err, db.ErrPoolBusy) || !db.Unavailable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a statement on a full pool: %v, want ErrPoolBusy (Unavailable)", err)
	}
	// The caller's own end is not a busy pool.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Pool().Exec(cctx, `SELECT 1`); !errors.Is(err, context.Canceled) || db.Unavailable(err) {
		t.Fatalf("a cancelled statement: %v, want context.Canceled, not Unavailable", err)
	}
	held[0]()
	if _, err := p.Pool().Exec(ctx, `SELECT 1`); err != nil {
		t.Fatalf("a statement once a connection is free: %v", err)
	}
	held[1]()

	waits, err := db.Connect(ctx, d.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer waits.Close()
	c, err := waits.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	tctx, tcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer tcancel()
	if _, err := waits.Pool().Exec(tctx, `SELECT 1`); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, db.ErrPoolBusy) {
		t.Fatalf("a statement on a full pool without a wait: %v, want its own deadline", err)
	}
}
