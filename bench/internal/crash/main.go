package crash

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Main is a harness command: the flags (defaults from o), the runs, and
// the exit status: 2 when a run could not be made, 1 when one lost or
// doubled anything.
func Main(name string, o Options) {
	faults := make([]string, len(o.Faults))
	for i, f := range o.Faults {
		faults[i] = string(f)
	}
	flag.IntVar(&o.Runs, "runs", o.Runs, "runs, each on fresh databases and a fresh Temporal server")
	flag.IntVar(&o.Posts, "posts", o.Posts, "inbound posts per run")
	flag.IntVar(&o.Deliveries, "deliveries", o.Deliveries, "webhook deliveries per run (at least -posts: each post's invoice is delivered; the rest are customers created through the REST API)")
	flag.IntVar(&o.Clients, "clients", o.Clients, "posts in flight at once")
	flag.Float64Var(&o.KillAt, "kill-at", o.KillAt, "share of the work (posts applied + deliveries made) done when the first fault strikes")
	flag.Float64Var(&o.FaultEvery, "fault-every", o.FaultEvery, "share of the work between one fault and the next")
	faultList := flag.String("faults", strings.Join(faults, ","), "faults to strike, in order: worker, api, temporal, postgres (SIGKILL), postgres-restart (fast shutdown), latency (200 ms to Postgres), partition-db, partition-temporal (all but worker need -shape prod), or none")
	flag.DurationVar(&o.Settle, "settle", o.Settle, "how long a run waits, after the last fault, for everything to settle")
	flag.DurationVar(&o.TemporalDown, "temporal-down", o.TemporalDown, "how long the Temporal server stays down after its SIGKILL")
	flag.StringVar(&o.Shape, "shape", o.Shape, "embedded (Temporal and the API in this process) or prod (docker-compose.yml's shape as processes)")
	flag.IntVar(&o.APIs, "apis", o.APIs, "prod shape: `commerce serve` processes")
	flag.IntVar(&o.Workers, "workers", o.Workers, "prod shape: `commerce worker` processes")
	flag.StringVar(&o.TemporalStore, "temporal-store", o.TemporalStore, "embedded shape: the Temporal server's persistence, sqlite or postgres")
	split := flag.Int("cpu-split", 0, "prod shape: instead of the runs, two runs without faults (N posts with N deliveries, then N deliveries alone) and each process's CPU per post and per delivery, as measured and less its idle CPU (measured before each burst)")
	soak := SoakFlags()
	flag.StringVar(&o.Bin, "bin", o.Bin, "a commerce binary to run (built from the module when empty): the worker, and in the prod shape the APIs too")
	flag.StringVar(&o.Upgrade, "upgrade", o.Upgrade, "prod shape: instead of the runs, a rolling upgrade from this git ref (a previous release, e.g. v0.1.0) to this checkout")
	flag.Parse()
	o.Faults = []Fault{} // none: a run without faults
	for f := range strings.SplitSeq(*faultList, ",") {
		if f = strings.TrimSpace(f); f != "" && f != "none" {
			o.Faults = append(o.Faults, Fault(f))
		}
	}
	o.Out = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Upgrade != "" {
		if err := MainUpgrade(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, name+":", err)
			os.Exit(upgradeExit(err))
		}
		return
	}
	if soak.Duration > 0 {
		res, err := Soak(ctx, o, *soak)
		if err != nil {
			fmt.Fprintln(os.Stderr, name+":", err)
			os.Exit(2)
		}
		if res.Failed() {
			os.Exit(1)
		}
		return
	}
	if *split > 0 {
		if err := SplitCPU(ctx, o, *split); err != nil {
			fmt.Fprintln(os.Stderr, name+":", err)
			os.Exit(2)
		}
		return
	}
	results, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	for _, r := range results {
		if r.Failed() {
			os.Exit(1)
		}
	}
}
