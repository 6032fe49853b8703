package cli

import (
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/script"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

// assemble builds, once, what every face of the process shares: the
// sealer, the Temporal side of the service's workflows and the application
// service. The API, the console and the worker of one process (all three
// in `commerce dev`) are handed the same values.
func (rt *Runtime) assemble() error {
	if rt.service != nil {
		return nil
	}
	key, sealer, err := rt.keys()
	if err != nil {
		return err
	}
	service, wf, err := newService(rt.Cfg, rt.Log, rt.DB, rt.Temporal, sealer)
	if err != nil {
		return err
	}
	rt.key, rt.sealer, rt.service, rt.workflows = key, sealer, service, wf
	return nil
}

// newService builds the application service of a process or a command:
// the one place that says what it is made of. tc (nil for a command that
// needs no Temporal) is reached through a workflows client that hands the
// configured delivery policy (COMMERCE_NIGHTLY_AT) to the deliveries it
// starts or resends; sealer is nil where no service key is configured.
func newService(cfg config.Config, log *zap.Logger, d *db.DB, tc client.Client, sealer *secrets.Sealer) (*integrations.Service, *workflows.Client, error) {
	targets, err := cfg.Targets()
	if err != nil {
		return nil, nil, err
	}
	var wf *workflows.Client
	if tc != nil {
		delivery, err := cfg.Delivery()
		if err != nil {
			return nil, nil, err
		}
		wf = workflows.NewClient(tc, cfg.TemporalNamespace).WithDelivery(delivery)
	}
	if log == nil {
		log = zap.NewNop()
	}
	// The process's one runner of transformations: the service's routes
	// and the worker's deliveries share its slots.
	scripts := script.NewRunner(script.DefaultLimits, script.DefaultSlots())
	return integrations.New(integrations.Deps{DB: d, Workflows: wf, Log: log, Sealer: sealer, BaseURL: cfg.BaseURL,
		TemporalUIURL: cfg.TemporalUIURL, Namespace: cfg.TemporalNamespace, Targets: targets, Scripts: scripts}), wf, nil
}
