package dev

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/config"
)

// devState is what `commerce dev` writes to .commerce/dev.json.
type devState struct {
	BaseURL           string `json:"base_url"`
	APIKey            string `json:"api_key"`
	OrgID             string `json:"org_id"`
	TemporalAddress   string `json:"temporal_address"`
	TemporalUIURL     string `json:"temporal_ui_url"`
	TemporalNamespace string `json:"temporal_namespace"`
	DatabaseURL       string `json:"database_url"`
	// SecretKey and PrivateTargets are for the commands run beside dev
	// (config.DevSettings): its service key, and which non-public addresses
	// its webhooks may reach (loopback, unless dev was told otherwise).
	SecretKey      string `json:"secret_key"`
	PrivateTargets string `json:"private_targets"`
	// MetricsURL is where the process's Prometheus series are served, apart
	// from the API.
	MetricsURL string `json:"metrics_url"`
	// InboundTokens are the demo organisation's inbound endpoints, one per
	// action; InboundURLs the same as URLs under BaseURL.
	InboundTokens map[domain.Action]string `json:"inbound_tokens"`
	InboundURLs   map[domain.Action]string `json:"inbound_urls"`
}

func statePath(dir string) string { return filepath.Join(dir, "dev.json") }

func readState(dir string) (devState, error) {
	var s devState
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

func writeState(dir string, s devState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	// It holds the keys: only its owner reads it, also when it was there.
	if err := os.WriteFile(statePath(dir), append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Chmod(statePath(dir), 0o600)
}

func printState(out io.Writer, dir string, s devState) {
	fmt.Fprintf(out, `
commerce dev is running.

  API           %s/api/v1   (docs: %s/api/v1/docs)
  API key       %s
  Organisation  %s
  Temporal      %s   (namespace %s)
  Temporal UI   %s
  Postgres      %s

  Inbound URLs (unsigned, one per action):
`, s.BaseURL, s.BaseURL, s.APIKey, s.OrgID, s.TemporalAddress, s.TemporalNamespace, s.TemporalUIURL, redactURL(s.DatabaseURL))
	for _, action := range domain.Actions {
		fmt.Fprintf(out, "    %-20s %s\n", action, s.InboundURLs[action])
	}
	fmt.Fprintf(out, `
  Try:  curl -H "Authorization: Bearer %s" %s/api/v1/products
        curl -X POST -H "Content-Type: application/json" -d '{"order_ref": "SO-2026-0204", "status": "processing"}' \
             %s

The same is in %s. Ctrl-C stops everything.
`, s.APIKey, s.BaseURL, s.InboundURLs[domain.ActionERPOrderStatus], statePath(dir))
}

// printConsoleLink prints a one-time sign-in link to the support console
// for the demo owner (unless the console is switched off).
func printConsoleLink(ctx context.Context, out io.Writer, d *db.DB, cfg config.Config, s devState) {
	if on, _ := cfg.ConsoleOn(); !on {
		return
	}
	orgID, err := uuid.Parse(s.OrgID)
	if err == nil {
		var token string
		if token, err = d.CreateConsoleLink(ctx, orgID, demoOwner); err == nil {
			fmt.Fprintf(out, "\n  Console       %s\n                (signs in %s; works once, within 10 minutes: for another,\n"+
				"                 commerce console login --org %s --as %s)\n",
				console.LoginURL(s.BaseURL, token), demoOwner, s.OrgID, demoOwner)
			return
		}
	}
	fmt.Fprintf(out, "\n  Console       no sign-in link: %v\n", err)
}

// redactURL hides a password in a database URL.
func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 {
		return u
	}
	creds := u[scheme+3 : at]
	if name, _, hasPass := strings.Cut(creds, ":"); hasPass {
		return u[:scheme+3] + name + ":***" + u[at:]
	}
	return u
}
