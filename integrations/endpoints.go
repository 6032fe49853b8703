package integrations

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// EndpointItem is an inbound endpoint as support sees it: never its token
// or secret.
type EndpointItem struct {
	ID     uuid.UUID
	Name   string
	Action domain.Action
	// URLHint is the last four characters of the endpoint's token; nil for
	// a deleted endpoint and for one made before hints were kept.
	URLHint          *string
	RequireSignature bool
	Active           bool
	State            string
	CreatedAt        domain.Timestamp
	// Counts are the receipts of the last 24 hours by outcome.
	Counts       map[string]int
	FailingSince *domain.Timestamp
}

// Endpoints lists a page of the organisation's inbound endpoints, newest
// first, with their receipts of the last 24 hours counted by outcome; never
// a token or a secret.
func (m *Service) Endpoints(ctx context.Context, orgID uuid.UUID, p db.Page) ([]EndpointItem, error) {
	rows, err := m.DB.ListEndpointSummaries(ctx, orgID, p)
	items := make([]EndpointItem, len(rows))
	for i, e := range rows {
		items[i] = EndpointItem{ID: e.ID, Name: e.Name, Action: e.Action, URLHint: e.TokenHint, RequireSignature: e.RequireSignature,
			Active: e.State == domain.EndpointActive, State: string(e.State), CreatedAt: e.CreatedAt, Counts: map[string]int{},
			FailingSince: e.FailingSince}
		if e.State == domain.EndpointDeleted {
			items[i].URLHint = nil
		}
		for o, n := range e.Counts {
			items[i].Counts[string(o)] = n
		}
	}
	return items, err
}

// CreateEndpoint makes an inbound endpoint as the user named in
// in.AsEmail (who must be an owner or admin); the answer carries its token
// and secret, never readable again.
func (m *Service) CreateEndpoint(ctx context.Context, actor Actor, in db.NewEndpoint) (db.CreatedEndpoint, error) {
	e, err := m.DB.CreateEndpoint(ctx, m.Sealer, in)
	if err != nil {
		return e, err
	}
	m.audit(ctx, actor, in.OrgID, "endpoint.create", "endpoint", e.ID, map[string]any{"name": e.Name, "action": e.Action,
		"require_signature": e.RequireSignature})
	return e, nil
}

// SetEndpointState pauses, resumes or deletes one of the organisation's
// endpoints.
func (m *Service) SetEndpointState(ctx context.Context, actor Actor, orgID, id uuid.UUID, to domain.EndpointState) (db.Endpoint, error) {
	e, err := m.DB.SetEndpointState(ctx, orgID, id, to)
	if err != nil {
		return e, err
	}
	verb := map[domain.EndpointState]string{domain.EndpointActive: "resume", domain.EndpointPaused: "pause", domain.EndpointDeleted: "delete"}[to]
	m.audit(ctx, actor, orgID, "endpoint."+verb, "endpoint", id, nil)
	return e, nil
}

// EndpointSecret opens an endpoint's signing secret with the service key's
// sealer: the storage keeps it sealed, and only its holder opens it.
func EndpointSecret(sealer *secrets.Sealer, ep db.Endpoint) (string, error) {
	sealed, ok := ep.SealedSecret()
	if !ok {
		return "", errors.New("the endpoint requires a signature and has no secret")
	}
	return sealer.OpenSealed(sealed)
}
