// Command inbound benchmarks POST /api/in/{token} through the full API and
// an embedded Temporal server, next to a bare net/http handler doing the
// same database work without Temporal (bench/internal/inbound).
//
//	go run ./bench/inbound [-posts 1000] [-clients 8] [-temporal-store sqlite] [-traced]
package main

import (
	"context"
	"flag"

	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/inbound"
)

func main() {
	var o inbound.Options
	flag.IntVar(&o.Posts, "posts", 1000, "posts per path for the one-client latency run")
	flag.IntVar(&o.Clients, "clients", 8, "concurrent clients for the throughput run (0 skips it)")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the one-client runs to this file")
	flag.BoolVar(&o.Traced, "traced", false, "trace the path through Temporal, every span exported over OTLP/HTTP to an in-process collector")
	embedded.StoreFlag(&o.Store)
	harness.Main(func(ctx context.Context) error {
		_, err := inbound.Run(ctx, o)
		return err
	})
}
