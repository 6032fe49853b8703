// Command temporalwork counts the Temporal work the service asks for per
// inbound post and per webhook delivery (bench/internal/temporalwork) and
// prints it as the markdown tables of docs/benchmarks.md.
//
//	go run ./bench/temporalwork [-n 20] [-temporal-store sqlite]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/temporalwork"
)

func main() {
	var o temporalwork.Options
	embedded.StoreFlag(&o.Store)
	flag.IntVar(&o.N, "n", 20, "items of each kind")
	o.Out = os.Stdout
	harness.Main(func(ctx context.Context) error {
		res, err := temporalwork.Run(ctx, o)
		if err != nil {
			return err
		}
		fmt.Println()
		temporalwork.Markdown(os.Stdout, res, o.Store, o.N)
		return nil
	})
}
