// Package health answers a process's readiness probe: each dependency is
// checked, and the process is ready while every required one is up.
// `/readyz` answers 200 or 503 with `{"status": "ready"}` or
// `{"status": "not ready"}`; `/readyz?verbose=1` also lists each
// dependency with its state, whether it is required, and why it is down.
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/internal/version"
)

// Check is one dependency of a process.
type Check struct {
	Name string
	// Required: the process is not ready while it is down. A dependency
	// that is not required is checked only for a verbose answer.
	Required bool
	// Probe says whether the dependency is up; its error is logged, and
	// the verbose answer gives only Reason.
	Probe func(ctx context.Context) error
	// Reason is what the verbose answer says of the dependency when it is
	// down ("unreachable" when empty).
	Reason string
}

// Timeout bounds each probe: a probe that has not answered by then counts
// as down, so an answer takes at most about this long.
const Timeout = 2 * time.Second

// State is one dependency in a verbose answer.
type State struct {
	Status   string `json:"status"` // up or down
	Required bool   `json:"required"`
	Reason   string `json:"reason,omitempty"`
}

// Answer is the body of /readyz.
type Answer struct {
	Status string           `json:"status"` // ready or not ready
	Checks map[string]State `json:"checks,omitempty"`
}

// Ready runs the checks (all of them when verbose, the required ones
// otherwise) side by side, each within Timeout.
func Ready(ctx context.Context, checks []Check, verbose bool, log *zap.Logger) Answer {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	states := make([]State, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		if !c.Required && !verbose {
			continue
		}
		wg.Go(func() {
			states[i] = State{Status: "up", Required: c.Required}
			if err := c.Probe(ctx); err != nil {
				log.Warn("readiness: "+c.Name+" is down", zap.Error(err))
				reason := c.Reason
				if reason == "" {
					reason = "unreachable"
				}
				states[i] = State{Status: "down", Required: c.Required, Reason: reason}
			}
		})
	}
	wg.Wait()
	a := Answer{Status: "ready"}
	if verbose {
		a.Checks = make(map[string]State, len(checks))
	}
	for i, c := range checks {
		if states[i].Status == "" {
			continue
		}
		if c.Required && states[i].Status != "up" {
			a.Status = "not ready"
		}
		if verbose {
			a.Checks[c.Name] = states[i]
		}
	}
	return a
}

// Handler answers /readyz: 200 when ready, 503 when not.
func Handler(checks []Check, log *zap.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		verbose := r.URL.Query().Get("verbose")
		a := Ready(r.Context(), checks, verbose != "" && verbose != "0" && verbose != "false", log)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if a.Status != "ready" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(a)
	}
}

// Live answers /healthz: 200 while the process is up, with the release it
// runs (an operator replacing replicas one at a time sees which are new).
func Live(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	v := version.Get()
	_ = json.NewEncoder(w).Encode(struct {
		Status   string `json:"status"`
		Version  string `json:"version"`
		Revision string `json:"revision,omitempty"`
	}{"ok", v.Version, v.Revision})
}
