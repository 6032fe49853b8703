package crash

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The split solves the two runs (n posts with n deliveries; one post with
// n+1 deliveries) for what one post and one delivery cost each process.
func TestTheSplitSolvesTwoRunsForAPostAndADelivery(t *testing.T) {
	const n = 300
	perPost := map[string]time.Duration{"api": 3 * time.Millisecond, "worker": 8 * time.Millisecond, "temporal": 20 * time.Millisecond}
	perDelivery := map[string]time.Duration{"api": time.Millisecond / 2, "worker": 7 * time.Millisecond, "temporal": 15 * time.Millisecond}
	var runs [2]CPU
	runs[0], runs[1] = CPU{}, CPU{}
	for kind := range perPost {
		runs[0][kind] = n*perPost[kind] + n*perDelivery[kind]
		runs[1][kind] = perPost[kind] + (n+1)*perDelivery[kind]
	}
	var out bytes.Buffer
	splitTable(&out, runs, n)
	for _, want := range []string{
		"api         |     3.00 |         0.50",
		"worker      |     8.00 |         7.00",
		"temporal    |    20.00 |        15.00",
		"all         |    31.00 |        22.50",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the split lacks %q:\n%s", want, out.String())
		}
	}
}
