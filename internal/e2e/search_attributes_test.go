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
	startsRefused(t, addr, ns, nil)
}

// A namespace that does not exist stops `commerce worker` and `commerce
// serve` with the commands that create it and its search attributes.
func TestStartRefusesANamespaceThatDoesNotExist(t *testing.T) {
	var addr string
	if postgresStore(t) {
		addr = NewPostgresServer(t, "some-namespace", nil).GetFrontendHostPort()
	} else {
		addr = temporaltest.NewServer(temporaltest.WithT(t)).GetFrontendHostPort()
	}
	const ns = "never-created"
	startsRefused(t, addr, ns, []string{"temporal operator namespace create --namespace " + ns})
}

// startsRefused runs `commerce worker` and `commerce serve` against the
// namespace ns at addr and checks that each stops with an error giving the
// commands want and those that create each search attribute.
func startsRefused(t *testing.T, addr, ns string, want []string) {
	d := testdb.New(t)
	t.Setenv("COMMERCE_SECRET_KEY", hex.EncodeToString(ServiceKey))
	for name := range workflows.SearchAttributes() {
		want = append(want, "temporal operator search-attribute create --namespace "+ns+" --name "+name+" --type Keyword")
	}
	for _, args := range [][]string{{"worker", "--metrics-listen", "127.0.0.1:0"}, {"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}} {
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
				t.Fatalf("%s started against namespace %s (err %v)", args[0], ns, err)
			}
			for _, cmd := range want {
				if !strings.Contains(err.Error(), cmd) {
					t.Errorf("the error does not give %q:\n%s", cmd, err)
				}
			}
		})
	}
}
