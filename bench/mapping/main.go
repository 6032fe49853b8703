// Command mapping benchmarks what an endpoint's mapping adds to an inbound
// post: the same post with the docs' ERP mapping and without, through the
// full API and an embedded Temporal server, through the intake alone, and
// the mapping's run alone; then the process's memory over many runs
// (bench/internal/mapping).
//
//	go run ./bench/mapping [-posts 1000] [-intake-posts 3000] [-runs 10000] [-temporal-store sqlite]
package main

import (
	"context"
	"flag"

	"github.com/commerce-integration/commerce/bench/internal/embedded"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/bench/internal/mapping"
)

func main() {
	var o mapping.Options
	flag.IntVar(&o.Posts, "posts", 1000, "posts per path through the API and Temporal")
	flag.IntVar(&o.IntakePosts, "intake-posts", 3000, "posts per path through the intake alone")
	flag.IntVar(&o.Runs, "runs", 10000, "runs of the mapping back to back, for the memory series")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the posts through Temporal to this file")
	flag.StringVar(&o.IntakeCPUProfile, "intake-cpuprofile", "", "write a CPU profile of the posts through the intake alone to this file")
	flag.StringVar(&o.AllocProfile, "memprofile", "", "write the process's allocation profile to this file at the end")
	embedded.StoreFlag(&o.Store)
	harness.Main(func(ctx context.Context) error {
		_, err := mapping.Run(ctx, o)
		return err
	})
}
