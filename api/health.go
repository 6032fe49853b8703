package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/internal/logging"
)

// healthz answers 200 while the process is up.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyz answers 200 when Postgres and Temporal both answer, 503 otherwise,
// naming which one does not.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	log := logging.From(r.Context(), s.log)
	checks := map[string]string{"postgres": "ok", "temporal": "ok"}
	ready := true
	if err := s.db.Ping(ctx); err != nil {
		log.Warn("readiness: postgres", zap.Error(err))
		checks["postgres"], ready = "unreachable", false
	}
	if s.temporal == nil {
		checks["temporal"], ready = "not configured", false
	} else if _, err := s.temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		log.Warn("readiness: temporal", zap.Error(err))
		checks["temporal"], ready = "unreachable", false
	}
	status := http.StatusOK
	checks["status"] = "ready"
	if !ready {
		status = http.StatusServiceUnavailable
		checks["status"] = "not ready"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(checks)
}
