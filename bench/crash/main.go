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
	"time"

	"github.com/commerce-integration/commerce/bench/internal/crash"
)

func main() {
	crash.Main("crash", crash.Options{Runs: 3, Posts: 500, Deliveries: 500, Clients: 50, KillAt: 0.3,
		Settle: 5 * time.Minute, TemporalStore: "sqlite", Shape: crash.ShapeEmbedded, Faults: []crash.Fault{crash.FaultWorker}})
}
