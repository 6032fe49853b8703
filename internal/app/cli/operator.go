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
	"github.com/commerce-integration/commerce/internal/secrets"
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
// operator at the command line (newService): sealer opens signing secrets
// (nil when the command needs none) and tc reaches Temporal (nil for a
// command that does not need it, or has not dialed it yet).
func operatorService(cfg config.Config, d *db.DB, sealer *secrets.Sealer, tc client.Client) (*integrations.Service, error) {
	m, _, err := newService(cfg, nil, d, tc, sealer)
	return m, err
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
