// Command prodshape runs docker-compose.yml's production shape as
// processes on this machine and breaks it in the middle of a burst: a
// worker SIGKILLed, an API replica SIGKILLed with requests in flight, the
// Temporal server SIGKILLed and restarted; and, when asked, the service's
// Postgres SIGKILLed (postgres) or shut down fast (postgres-restart) and
// started again, 200 ms of latency to Postgres (latency), and silent
// partitions from Postgres (partition-db) and between the workers and
// Temporal (partition-temporal) through a toxiproxy built from its module.
// It checks that nothing was lost and nothing doubled, and prints how long
// each part took to come back; for the database and network faults, that
// the API answered 503 with Retry-After and /readyz said so while Postgres
// was away, and that work resumed within 5 s of the heal.
//
//	go run ./bench/prodshape [-runs 3] [-posts 500] [-deliveries 500] [-clients 8] [-faults worker,api,temporal]
//	go run ./bench/prodshape -runs 1 -kill-at 0.1 -fault-every 0.15 -faults postgres,postgres-restart,latency,partition-db,partition-temporal
//
// It builds the Temporal server and its SQL tool from the module go.mod
// pins, and `commerce` as the image does (-tags nodev); the first build
// that links the server takes minutes, later ones are cached. Each run
// makes, on 127.0.0.1:5432 (CRASH_DATABASE_URL names another server), the
// service's database and Temporal's two, sets up their schemas with the
// server's SQL tool the way the compose file's temporal-schema job does,
// starts the server with the compose file's environment (its pool sizes
// included) on free loopback ports, creates the namespace and the search
// attributes as the temporal-setup job does, migrates, and starts the API
// and worker processes (two of each) with the compose file's pool
// settings. Posts are sent round-robin to the API replicas; a request a
// killed replica cut is sent again, with its Idempotency-Key, to the
// other. docs/operations.md gives the figures and says what counts as lost
// and doubled (docs/crash.md).
package main

import (
	"time"

	"github.com/commerce-integration/commerce/bench/internal/crash"
)

func main() {
	crash.Main("prodshape", Defaults())
}

// Defaults is the full size: 500 posts and 500 deliveries, the three
// faults at 20%, 40% and 60% of the work (the Temporal server down for 5
// seconds, as a restart by an orchestrator takes), three runs.
func Defaults() crash.Options {
	return crash.Options{Runs: 3, Posts: 500, Deliveries: 500, Clients: 8, KillAt: 0.2, FaultEvery: 0.2,
		Settle: 5 * time.Minute, Shape: crash.ShapeProd, APIs: 2, Workers: 2, TemporalDown: 5 * time.Second,
		Faults: []crash.Fault{crash.FaultWorker, crash.FaultAPI, crash.FaultTemporal}}
}
