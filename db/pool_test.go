package db_test

import (
	"context"
	"testing"

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
