// Command commerce is the integration backend: REST API, inbound endpoints,
// Temporal worker, migrations, administration, and `commerce dev`, which
// runs all of it on one machine with no other set-up.
//
// Built with the tag nodev (as the container image is), the binary leaves
// out `commerce dev` and with it the embedded Temporal server and Web UI:
// a fifth of the size, and an API process that holds less than half the
// memory.
package main

import (
	"os"

	"github.com/commerce-integration/commerce/internal/app/cli"
)

func main() {
	root := cli.NewRoot()
	root.AddCommand(devCommand())
	os.Exit(cli.Execute(root, os.Args[1:], os.Stdout, os.Stderr))
}
