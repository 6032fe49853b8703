// Command products benchmarks GET /api/v1/products?limit=100 on a catalogue
// of 1,000,000 products: the full API next to a bare net/http + pgx handler
// running the same query, in the same run (bench/internal/products).
//
//	go run ./bench/products [-products 1000000] [-duration 10s] [-clients 16] [-keep] [-result FILE]
//
// It does not link the embedded Temporal server, so the resident memory it
// reports is that of an API process built without `commerce dev` (as
// `commerce` is with the tag nodev); `go run ./bench` runs it this way.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/products"
)

func main() {
	var o products.Options
	flag.IntVar(&o.Products, "products", 1_000_000, "catalogue size")
	flag.DurationVar(&o.Duration, "duration", 10*time.Second, "how long each throughput run lasts")
	flag.IntVar(&o.Clients, "clients", 16, "concurrent clients")
	flag.BoolVar(&o.Keep, "keep", false, "keep the catalogue for the next run")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the API throughput runs to this file")
	flag.StringVar(&o.MemProfile, "memprofile", "", "write allocation profiles around the throughput runs to this file (and .base)")
	result := flag.String("result", "", "also write the result to this file, as JSON")
	harness.Main(func(ctx context.Context) error {
		r, err := products.Run(ctx, o)
		if err != nil || *result == "" {
			return err
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return os.WriteFile(*result, b, 0o600)
	})
}
