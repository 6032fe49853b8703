package api

import (
	"context"
	"fmt"
	"net/http"

	"go.temporal.io/sdk/client"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/health"
	"github.com/commerce-integration/commerce/internal/logging"
)

// healthz answers 200 while the process is up.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) { health.Live(w, r) }

// readyz answers 200 while Postgres answers with the schema this binary
// expects. Temporal is checked only for a verbose answer and never makes
// the API unready: while it is down a post is stored and answered 202
// pending, and runs when Temporal returns.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	health.Handler(ReadinessChecks(s.db, s.temporal), logging.From(r.Context(), s.log))(w, r)
}

// ReadinessChecks are the API's dependencies: Postgres and its schema are
// required, Temporal is not (the worker requires it; see its own checks).
func ReadinessChecks(d *db.DB, tc client.Client) []health.Check {
	return append(DatabaseChecks(d), TemporalCheck(tc, false))
}

// DatabaseChecks are the checks every process requires: Postgres answers,
// and its schema is at least the one this binary expects. A schema ahead
// of the binary is ready: migrations only add (docs/versioning.md), so a
// replica of the previous release keeps serving, and staying in its load
// balancer, from the moment the new release migrates until it is replaced.
func DatabaseChecks(d *db.DB) []health.Check {
	return []health.Check{
		{Name: "postgres", Required: true, Probe: d.Ping},
		{Name: "schema", Required: true, Reason: fmt.Sprintf("not at version %d: run `commerce migrate`", db.LatestVersion()),
			Probe: func(ctx context.Context) error {
				v, err := d.SchemaVersion(ctx)
				if err == nil && v < db.LatestVersion() {
					err = fmt.Errorf("schema version %d, want at least %d", v, db.LatestVersion())
				}
				return err
			}},
	}
}

// TemporalCheck checks that the Temporal frontend answers; with no client
// it is down as "not configured".
func TemporalCheck(tc client.Client, required bool) health.Check {
	c := health.Check{Name: "temporal", Required: required}
	if tc == nil {
		c.Reason = "not configured"
		c.Probe = func(context.Context) error { return fmt.Errorf("no Temporal client") }
		return c
	}
	c.Probe = func(ctx context.Context) error {
		_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
	return c
}
