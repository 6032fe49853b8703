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

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/outbound"
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
