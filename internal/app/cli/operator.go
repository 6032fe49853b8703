package cli

import (
	"context"
	"os"
	"os/user"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

// configSealer is the sealer of the configured COMMERCE_SECRET_KEY.
func configSealer(cfg config.Config) (*secrets.Sealer, error) {
	key, err := cfg.ServiceKey()
	if err != nil {
		return nil, err
	}
	return secrets.NewSealer(key)
}

// withTemporal runs fn with a Temporal client, given up on when Temporal
// does not answer within 15 seconds.
func withTemporal(ctx context.Context, cfg config.Config, fn func(client.Client, *zap.Logger) error) error {
	log, err := logging.New("warn", "console")
	if err != nil {
		return err
	}
	dialCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tc, err := DialTemporal(dialCtx, cfg, log, nil)
	if err != nil {
		return err
	}
	defer tc.Close()
	return fn(tc, log)
}

// operatorService is the application service the routes call, for an
// operator at the command line: sealer opens signing secrets (nil when the
// command needs none) and wf reaches Temporal (nil until the command dials
// it).
func operatorService(d *db.DB, sealer *secrets.Sealer, wf *workflows.Client, cfg config.Config) *integrations.Service {
	return &integrations.Service{
		Posts:         &integrations.Posts{DB: d, Sealer: sealer, Workflows: wf, BaseURL: cfg.BaseURL, Log: zap.NewNop()},
		TemporalUIURL: cfg.TemporalUIURL, Namespace: cfg.TemporalNamespace, Targets: targetsOf(cfg),
	}
}

// targetsOf is the configuration's outbound targets; a setting that does
// not parse allows public addresses only.
func targetsOf(cfg config.Config) outbound.Targets {
	t, _ := cfg.Targets()
	return t
}

// workflowsClient is the Temporal side of a command: the service's
// workflows in the configured namespace, handing resent deliveries the
// configured delivery policy (when COMMERCE_NIGHTLY_AT does not parse, none:
// the worker's applies).
func workflowsClient(tc client.Client, cfg config.Config) *workflows.Client {
	wf := workflows.NewClient(tc, cfg.TemporalNamespace)
	if p, err := cfg.Delivery(); err == nil {
		wf.WithDelivery(p)
	}
	return wf
}

// operator is the audit log's name for who runs the command: the operating
// system's user.
func operator() integrations.Actor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return integrations.OperatorActor(name)
}
