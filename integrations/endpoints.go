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
	URLHint *string
	// RequireSignature says whether posts must carry the service's own
	// signature: a service endpoint made to require one.
	RequireSignature bool
	// Verification is how the endpoint verifies its sender, and
	// VerificationConfig what of it is not secret (never the secret).
	Verification       domain.Verification
	VerificationConfig domain.VerificationConfig
	Active             bool
	State              string
	CreatedAt          domain.Timestamp
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
		items[i] = endpointItem(e)
	}
	return items, err
}

// Endpoint returns one of the organisation's inbound endpoints (deleted
// ones too) as Endpoints lists it: never its token or a secret.
func (m *Service) Endpoint(ctx context.Context, orgID, id uuid.UUID) (EndpointItem, error) {
	e, err := m.DB.GetEndpointSummary(ctx, orgID, id)
	if err != nil {
		return EndpointItem{}, err
	}
	return endpointItem(e), nil
}

func endpointItem(e db.EndpointSummary) EndpointItem {
	item := EndpointItem{ID: e.ID, Name: e.Name, Action: e.Action, URLHint: e.TokenHint,
		RequireSignature: e.RequireSignature && e.Verification == domain.VerifyService, Verification: e.Verification,
		VerificationConfig: e.VerificationConfig, Active: e.State == domain.EndpointActive, State: string(e.State), CreatedAt: e.CreatedAt,
		Counts: map[string]int{}, FailingSince: e.FailingSince}
	if e.State == domain.EndpointDeleted {
		item.URLHint = nil
	}
	for o, n := range e.Counts {
		item.Counts[string(o)] = n
	}
	return item
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

// SetEndpointVerification sets how one of the organisation's endpoints
// verifies its sender (docs/design.md#sender-verification). For hmac and
// basic the answer carries the secret the service made (the HMAC key, the
// Basic password), shown this once: the one before stops working at once.
// The audit log records the kind and what is not secret of it.
func (m *Service) SetEndpointVerification(ctx context.Context, actor Actor, orgID, id uuid.UUID, in db.NewVerification) (db.SetVerification, error) {
	v, err := m.DB.SetEndpointVerification(ctx, m.Sealer, orgID, id, in)
	if err != nil {
		return v, err
	}
	detail := map[string]any{"kind": v.Verification}
	if c := v.VerificationConfig; c.HMAC != nil {
		detail["hmac"] = *c.HMAC
	} else if c.Username != "" {
		detail["username"] = c.Username
	}
	m.audit(ctx, actor, orgID, "endpoint.verification", "endpoint", id, detail)
	return v, nil
}

// EndpointSecret opens an endpoint's signing secret with the service key's
// sealer: the storage keeps it sealed, and only its holder opens it.
func EndpointSecret(sealer *secrets.Sealer, ep db.Endpoint) (string, error) {
	sealed, ok := ep.SealedSecret()
	if !ok {
		return "", errors.New("the endpoint requires a signature and has no secret")
	}
	if sealer == nil {
		return "", errors.New("opening the endpoint's signing secret needs COMMERCE_SECRET_KEY")
	}
	return sealer.OpenSealed(sealed)
}
