// Package integrations holds the application services of the service's
// integrations: carrying out inbound posts through their workflows, live or
// replayed, under the replay rules (Posts), and what support staff and
// integrators do to receipts, endpoints, webhook subscriptions and
// deliveries, each write recorded in the audit log (Service). The REST API,
// the support console, the CLI and the worker call it; it answers in domain
// values (outcomes, and refusals that carry their kind), which each of them
// renders.
package integrations

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/script"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

// Actor is who makes a management write, as the audit log names it: an API
// key, or an operator at the command line.
type Actor string

// KeyActor is the actor of a write made with an API key.
func KeyActor(keyID uuid.UUID) Actor { return Actor("key:" + keyID.String()) }

// OperatorActor is the actor of a write made at the command line.
func OperatorActor(name string) Actor {
	if name == "" {
		name = "operator"
	}
	return Actor("cli:" + name)
}

// ConsoleActor is the actor of a write made in the support console.
func ConsoleActor(email string) Actor { return Actor("console:" + email) }

// Service is what support staff and integrators do to inbound receipts,
// endpoints and webhooks: the management routes, the console and the CLI's
// receipts and webhook commands all call it, and every write it makes is
// recorded in the audit log.
type Service struct {
	*Posts
	// TemporalUIURL is the Temporal Web UI's address, for links to a
	// receipt's workflow ("" for none); Namespace is Temporal's namespace.
	TemporalUIURL string
	Namespace     string
	// Targets says which addresses subscriptions may name.
	Targets outbound.Targets
}

// Deps are what the application services are built with: each process's
// assembly builds them once (New) and hands the same service to the HTTP
// layer, the console, the CLI's commands and the worker.
type Deps struct {
	DB *db.DB
	// Workflows reaches Temporal; nil where the process has none (a
	// command that needs no workflow), and what needs it is then refused
	// as a fault of the service.
	Workflows *workflows.Client
	Log       *zap.Logger
	// Sealer opens the signing secrets of endpoints and subscriptions; nil
	// where no service key is configured.
	Sealer *secrets.Sealer
	// BaseURL is the public {base_url}, for the URLs the service hands out.
	BaseURL string
	// AnswerWait is how long a post waits for its workflow's first answer
	// (AnswerWait when zero).
	AnswerWait time.Duration
	// TemporalUIURL is the Temporal Web UI's address, for links to a
	// receipt's workflow ("" for none); Namespace is Temporal's namespace.
	TemporalUIURL string
	Namespace     string
	// Targets says which addresses subscriptions may name.
	Targets outbound.Targets
	// Scripts runs mappings and transformations: one runner per process,
	// whose slots bound the memory all runs hold. nil: New makes one of
	// the default limits.
	Scripts *script.Runner
}

// New builds the application service.
func New(d Deps) *Service {
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	scripts := d.Scripts
	if scripts == nil {
		scripts = script.NewRunner(script.DefaultLimits, script.DefaultSlots())
	}
	return &Service{
		Posts: &Posts{DB: d.DB, Workflows: d.Workflows, Log: log, Sealer: d.Sealer, Wait: d.AnswerWait, BaseURL: d.BaseURL,
			Scripts: newScripts(scripts)},
		TemporalUIURL: d.TemporalUIURL, Namespace: d.Namespace, Targets: d.Targets,
	}
}

// audit records a management write; a failure to record it is logged, as
// the write itself is done.
func (m *Service) audit(ctx context.Context, actor Actor, orgID uuid.UUID, action, targetType string, target uuid.UUID, detail map[string]any) {
	err := m.DB.RecordAudit(context.WithoutCancel(ctx), db.NewAuditEntry{OrgID: orgID, Actor: string(actor), Action: action,
		TargetType: targetType, TargetID: target.String(), Detail: detail})
	if err != nil {
		logging.From(ctx, m.Log).Error("recording an audit entry", zap.String("action", action), zap.Error(err))
	}
}

// errNoWorkflows refuses, as a fault of the service, what needs Temporal
// where no client is configured.
var errNoWorkflows = errors.New("the workflow service is not configured")

func (m *Service) workflows() (*workflows.Client, error) {
	if m.Workflows == nil {
		return nil, errNoWorkflows
	}
	return m.Workflows, nil
}
