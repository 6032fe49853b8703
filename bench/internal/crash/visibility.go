package crash

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// visibilityCounter is the Temporal server's count of requests to its
// visibility store (the records List calls and the Web UI search), by
// operation: RecordWorkflowExecutionStarted, UpsertWorkflowExecution,
// RecordWorkflowExecutionClosed and the reads.
const visibilityCounter = "visibility_persistence_requests"

// visibilitySettle is how long after a burst the visibility counters are
// read: the server's visibility queue reads at most twice a second
// (docker-compose.yml's dynamic config), so the last runs' records are
// written within half a second of their close.
const visibilitySettle = 2 * time.Second

// splitCounts solves two runs' counts (posts with a delivery each, n of
// them; then one post and n+1 deliveries) for each operation's count per
// post and per delivery, as splitTable does for CPU, and prints them.
func splitCounts(w io.Writer, counts [2]map[string]float64, n int) {
	ops := map[string]bool{}
	for _, c := range counts {
		for op := range c {
			ops[op] = true
		}
	}
	fmt.Fprintf(w, "\n%-34s | %8s | %12s\n", "operation", "per post", "per delivery")
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		m, d1 := counts[0][op], counts[1][op]
		perDelivery := (d1 - m/float64(n)) / float64(n)
		perPost := m/float64(n) - perDelivery
		fmt.Fprintf(w, "%-34s | %8.2f | %12.2f\n", op, perPost, perDelivery)
	}
}
