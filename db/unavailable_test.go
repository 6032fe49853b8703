package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// A statement whose connection the database drops under it (the server
// killed, or the network between them cut) meets an error a later request
// may not: Unavailable reports it (answered 503 with Retry-After), as it
// does a connection refused while the server is away.
func TestAConnectionLostMidStatementIsUnavailable(t *testing.T) {
	d := testdb.New(t)
	proxy := testdb.NewProxy(t, testdb.Target(t, d.URL))
	p, err := db.Connect(context.Background(), proxy.Through(t, d.URL), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Pool().Exec(context.Background(), `SELECT pg_sleep(3)`)
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	proxy.Cut()
	select {
	case err := <-errc:
		if err == nil || !db.Unavailable(err) {
			t.Fatalf("a statement whose connection was cut: %v (%T), want Unavailable", err, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the statement did not end when its connection was cut")
	}
	// While the server is away, a new connection is refused: Unavailable.
	proxy.Away()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Pool().Exec(ctx, `SELECT 1`); err == nil || !db.Unavailable(err) {
		t.Fatalf("a statement while the server is away: %v, want Unavailable", err)
	}
	// A statement the caller gave up on is not.
	proxy.Back(t)
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := p.Pool().Exec(cctx, `SELECT 1`); err == nil || db.Unavailable(err) {
		t.Fatalf("a cancelled statement: %v, want an error that is not Unavailable", err)
	}
}
