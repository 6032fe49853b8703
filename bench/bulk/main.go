// Command bulk benchmarks POST /api/v1/products/bulk with 10,000 products in
// three cases (all new, all updated, none changed) next to a raw pgx COPY
// into a temporary table plus one upsert of the same rows, in the same run
// (bench/internal/bulk).
//
//	go run ./bench/bulk [-rounds 5]
package main

import (
	"context"
	"flag"

	"github.com/commerce-integration/commerce/bench/internal/bulk"
	"github.com/commerce-integration/commerce/bench/internal/harness"
)

func main() {
	var o bulk.Options
	flag.IntVar(&o.Rounds, "rounds", 5, "rounds per case; the median is reported")
	flag.StringVar(&o.ProfileCase, "cpuprofile-case", "", "profile the API calls of this case (e.g. \"none changed\")")
	flag.StringVar(&o.ProfileFile, "cpuprofile", "", "write the CPU profile here")
	harness.Main(func(ctx context.Context) error {
		_, err := bulk.Run(ctx, o)
		return err
	})
}
