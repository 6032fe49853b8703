package e2e

import (
	"context"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/workflows"
)

// The service never creates its search attributes: `commerce worker` and
// `commerce serve` refuse a namespace that lacks them, naming each one and
// the command that creates it.
func TestStartRefusesANamespaceWithoutTheSearchAttributes(t *testing.T) {
	// A namespace made without them.
	var addr, ns string
	if postgresStore(t) {
		ns = "without-attributes"
		addr = NewPostgresServer(t, ns, nil).GetFrontendHostPort()
	} else {
		ts := temporaltest.NewServer(temporaltest.WithT(t))
		addr, ns = ts.GetFrontendHostPort(), ts.GetDefaultNamespace()
	}
	d := testdb.New(t)
	t.Setenv("COMMERCE_SECRET_KEY", hex.EncodeToString(ServiceKey))
	for _, args := range [][]string{{"worker"}, {"serve", "--listen", "127.0.0.1:0"}} {
		t.Run(args[0], func(t *testing.T) {
			root := cli.NewRoot()
			root.SetArgs(append(args, "--database-url", d.URL, "--temporal-address", addr, "--temporal-namespace", ns))
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			// Bounds a process that would wrongly run on.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := root.ExecuteContext(ctx)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("%s started against a namespace without the search attributes (err %v)", args[0], err)
			}
			for name := range workflows.SearchAttributes() {
				cmd := "temporal operator search-attribute create --namespace " + ns + " --name " + name + " --type Keyword"
				if !strings.Contains(err.Error(), cmd) {
					t.Errorf("the error does not give %q:\n%s", cmd, err)
				}
			}
		})
	}
}
