// Command commerce is the integration backend: REST API, inbound endpoints,
// Temporal worker, migrations, administration, and `commerce dev`, which
// runs all of it on one machine with no other set-up.
package main

import (
	"os"

	"github.com/commerce-integration/commerce/internal/cli"
)

func main() {
	root := cli.NewRoot()
	root.AddCommand(devCmd())
	os.Exit(cli.Execute(root, os.Args[1:], os.Stdout, os.Stderr))
}
