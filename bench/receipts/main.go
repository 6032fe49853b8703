// Command receipts benchmarks the management API's receipts list over one
// organisation with a million receipts and ten others with a million
// between them: unfiltered, by outcome, by reference and by receipt id,
// p50 and p99 through the API (bench/internal/receipts). The seeded schema
// is kept between runs of the same size (seeding takes a few minutes).
//
//	go run ./bench/receipts [-receipts 1000000] [-others 1000000] [-requests 200]
package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/receipts"
)

func main() {
	o := receipts.Options{Keep: true}
	flag.IntVar(&o.Receipts, "receipts", 1_000_000, "receipts of the organisation searched")
	flag.IntVar(&o.Others, "others", 1_000_000, "receipts of ten other organisations, together")
	flag.IntVar(&o.Requests, "requests", 200, "requests timed per query")
	flag.StringVar(&o.Profile, "cpuprofile", "", "write the CPU profile of the timed requests here (and the allocations to <file>.allocs)")
	flag.BoolVar(&o.Keep, "keep", true, "keep the seeded schema for the next run of the same size")
	harness.Main(func(ctx context.Context) error {
		res, err := receipts.Run(ctx, o)
		if err != nil {
			return err
		}
		for _, r := range res.Rows {
			if r.P50 > receipts.TargetP50 || r.P99 > receipts.TargetP99 {
				fmt.Printf("\n%s misses its target\n", r.Name)
			}
		}
		return nil
	})
}
