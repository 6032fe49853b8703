package crash

import (
	"strings"
	"testing"
	"time"
)

// TestTheSoakJudgesHeldConnectionsNotAPoolsIdleOnes feeds the judge a run
// where a burst grew a process's pool and the pool kept its new
// connections idle (open connections up, held ones flat), and a run where
// a process holds one more connection every sample (a leak): the first is
// steady, the second fails on its held connections; a process with no
// pool (the Temporal server) is judged on its open connections.
func TestTheSoakJudgesHeldConnectionsNotAPoolsIdleOnes(t *testing.T) {
	run := func(open, held, temporal func(i int) float64) map[string]Judgement {
		var samples []SoakSample
		for i := range 12 {
			samples = append(samples, SoakSample{At: time.Duration(i+1) * 10 * time.Second, Values: map[string]float64{
				famConns + "/api-1": open(i), famHeld + "/api-1": held(i), famConns + "/temporal": temporal(i),
			}})
		}
		out := map[string]Judgement{}
		for _, j := range judge(samples, 0) {
			out[j.Series] = j
		}
		return out
	}
	steady := func(int) float64 { return 3 }
	grown := func(i int) float64 { return 3 + 6*float64(min(i, 6)/6) } // 3, then 9 from the burst on
	leak := func(i int) float64 { return 3 + float64(i) }

	burst := run(grown, steady, steady)
	if _, judged := burst[famConns+"/api-1"]; judged {
		t.Errorf("a process's open connections were judged beside its held ones: %+v", burst[famConns+"/api-1"])
	}
	if j, ok := burst[famHeld+"/api-1"]; !ok || j.Failed {
		t.Errorf("held connections flat through a burst: judged %+v (judged at all: %v), want steady", j, ok)
	}
	if j, ok := burst[famConns+"/temporal"]; !ok || j.Failed {
		t.Errorf("the Temporal server's open connections flat: judged %+v (judged at all: %v), want steady", j, ok)
	}

	leaked := run(leak, leak, leak)
	if j := leaked[famHeld+"/api-1"]; !j.Failed {
		t.Errorf("a connection more held every sample: judged %+v, want failed", j)
	}
	if j := leaked[famConns+"/temporal"]; !j.Failed {
		t.Errorf("the Temporal server's open connections up by one a sample: judged %+v, want failed", j)
	}
}

// TestTheConnectionsPlotDrawsOpenAndHeldForEachProcess plots two
// families of per-process series (open connections, and held ones
// dashed): a line and a legend entry for each series, a process in one
// colour in both families.
func TestTheConnectionsPlotDrawsOpenAndHeldForEachProcess(t *testing.T) {
	var samples []SoakSample
	for i := range 3 {
		samples = append(samples, SoakSample{At: time.Duration(i+1) * 10 * time.Second, Values: map[string]float64{
			famConns + "/api-1": 3, famConns + "/worker-1": 7, famHeld + "/api-1": 1, famHeld + "/worker-1": 2,
		}})
	}
	svg := plot("connections", "connections", []string{famConns, famHeld}, samples, 0)
	if n := strings.Count(svg, "<polyline"); n != 4 {
		t.Errorf("%d lines drawn, want 4", n)
	}
	if n := strings.Count(svg, `stroke-dasharray`); n != 4 { // two held lines, each with its legend
		t.Errorf("%d dashed strokes, want 4 (the held lines and their legends)", n)
	}
	colour := func(series string) string {
		i := strings.Index(svg, ">"+series+"</text>")
		if i < 0 {
			t.Fatalf("no legend for %s", series)
		}
		j := strings.LastIndex(svg[:i], `stroke="`)
		return svg[j : j+len(`stroke="#000000"`)]
	}
	if colour(famConns+"/api-1") != colour(famHeld+"/api-1") || colour(famConns+"/api-1") == colour(famConns+"/worker-1") {
		t.Errorf("colours: api-1 open %s, held %s; worker-1 open %s", colour(famConns+"/api-1"), colour(famHeld+"/api-1"), colour(famConns+"/worker-1"))
	}
}
