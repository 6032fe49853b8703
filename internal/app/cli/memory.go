package cli

import (
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"

	"go.uber.org/zap"
)

// The Go runtime's soft memory limits of the processes (GOMEMLIMIT, when
// given, is kept instead). Near its limit the collector runs more often and
// gives freed pages back to the system sooner, so a process's resident size
// follows its live heap instead of keeping what a burst once took. They are
// soft: a process whose live heap passes its limit goes on, collecting
// more often. dev's is some four times the heap in use it was measured at
// under steady load, its caches full (docs/operations.md, Memory); serve
// and worker each hold a part of what dev holds.
const (
	DevMemoryLimit    int64 = 768 << 20 // API, worker and the embedded Temporal server
	ServeMemoryLimit  int64 = 512 << 20
	WorkerMemoryLimit int64 = 512 << 20
)

// LimitMemory sets the runtime's soft memory limit to limit unless
// GOMEMLIMIT sets one, and answers the limit in force.
func LimitMemory(limit int64, log *zap.Logger) int64 {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	inForce := debug.SetMemoryLimit(-1)
	log.Info("memory limit", zap.Int64("bytes", inForce), zap.Bool("from_gomemlimit", os.Getenv("GOMEMLIMIT") != ""))
	return inForce
}

// Profiles serves net/http/pprof's profiles under /debug/pprof/ on mux:
// only ever the metrics listener's, and only when COMMERCE_PPROF is true.
// A CPU profile or trace runs for the seconds asked, which must be fewer
// than the listener's write timeout (two minutes).
func Profiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
