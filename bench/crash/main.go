// Command crash kills the worker process in the middle of a burst of
// inbound posts and webhook deliveries, starts another, and checks that
// nothing was lost and nothing doubled.
//
//	go run ./bench/crash [-runs 3] [-posts 500] [-deliveries 500] [-clients 50] [-kill-at 0.3]
//
// Each run has a database of its own on 127.0.0.1:5432 (CRASH_DATABASE_URL
// names another server; the database is dropped afterwards), the embedded
// Temporal server of `commerce dev` and the API in this process, and the
// worker as a separate `commerce worker` process built once for all runs.
// Every post is an order_invoice with its own invoice reference, whose
// order.invoice_recorded event the subscription receives; the deliveries
// beyond the posts' are customers created through POST /api/v1/customers.
// When the given share of the posts applied plus deliveries made is reached,
// the worker gets SIGKILL and a new one is started at once; the run then
// waits until nothing is left to happen and checks every post and every
// delivery (docs/crash.md says what counts as lost and doubled). It prints
// one row per run and exits 1 when any run lost or doubled anything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var o Options
	flag.IntVar(&o.Runs, "runs", 3, "runs, each on a fresh database and Temporal server")
	flag.IntVar(&o.Posts, "posts", 500, "inbound posts per run")
	flag.IntVar(&o.Deliveries, "deliveries", 500, "webhook deliveries per run (at least -posts: each post's invoice is delivered; the rest are customers created through the REST API)")
	flag.IntVar(&o.Clients, "clients", 50, "posts in flight at once")
	flag.Float64Var(&o.KillAt, "kill-at", 0.3, "share of the work (posts applied + deliveries made) done when the worker is killed")
	flag.DurationVar(&o.Settle, "settle", 5*time.Minute, "how long a run waits, after the kill, for everything to settle")
	flag.StringVar(&o.TemporalStore, "temporal-store", "sqlite", "the embedded Temporal server's persistence: sqlite, or postgres (two databases beside the run's own)")
	flag.StringVar(&o.Bin, "bin", "", "a commerce binary to run as the worker (built from the module when empty)")
	flag.Parse()
	o.Out = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash:", err)
		os.Exit(2)
	}
	for _, r := range results {
		if r.Failed() {
			os.Exit(1)
		}
	}
}
