// Command webhooks benchmarks outbound webhooks: events per second from the
// outbox to a local receiver through the relay and one Temporal workflow
// per delivery, next to the same database and HTTP work done without
// Temporal (bench/internal/webhooks).
//
//	go run ./bench/webhooks [-events 2000] [-rounds 2] [-temporal-store sqlite]
package main

import (
	"context"
	"flag"

	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/webhooks"
)

func main() {
	var o webhooks.Options
	flag.IntVar(&o.Events, "events", 2000, "events per round and path")
	flag.IntVar(&o.Rounds, "rounds", 2, "rounds per path, interleaved; the better is reported")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the first Temporal round to this file")
	embedded.StoreFlag(&o.Store)
	harness.Main(func(ctx context.Context) error {
		_, err := webhooks.Run(ctx, o)
		return err
	})
}
