// Command commerce is the integration backend: REST API, inbound endpoints,
// Temporal worker, migrations, administration, and `commerce dev`, which
// runs all of it on one machine with no other set-up.
package main

import (
	"os"

	"github.com/commerce-integration/commerce/internal/cli"
	"github.com/commerce-integration/commerce/internal/dev"
)

func main() {
	root := cli.NewRoot()
	root.AddCommand(dev.Command())
	os.Exit(cli.Execute(root, os.Args[1:], os.Stdout, os.Stderr))
}
