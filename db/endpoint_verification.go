package db

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// NewVerification is how an endpoint is to verify its sender
// (docs/design.md#sender-verification): its kind, and for hmac the scheme,
// for basic the username.
type NewVerification struct {
	Kind   domain.Verification
	Config domain.VerificationConfig
}

// SetVerification is an endpoint whose verification was just set, with the
// secret the service made for it (the HMAC key, the Basic password), shown
// this once; nil for the kinds without one.
type SetVerification struct {
	Endpoint
	Secret *string
}

// SealedVerificationSecret is the endpoint's sender verification secret
// (the HMAC key, the Basic password) as it is kept, sealed to this
// endpoint, for a holder of the service key to open; ok is false when the
// endpoint has none.
func (e Endpoint) SealedVerificationSecret() (s secrets.Sealed, ok bool) {
	return secrets.Sealed{Value: e.verificationSealed, At: sealedAt(endpointVerificationSecrets, e.ID)}, e.verificationSealed != nil
}

// SetEndpointVerification sets how one of the organisation's endpoints
// verifies its sender, in place of what it did. For hmac and basic it makes
// a new secret, sealed with sealer: the one before stops working at once.
// The service's signing secret (secret_sealed) is kept, so an endpoint set
// back to service verifies with it as before. require_signature follows
// (true when the endpoint verifies anything), so that a replica of an
// earlier release refuses rather than takes an unverified post. A deleted
// endpoint is ECONFLICT; a configuration that breaks a rule, EINVALID.
func (d *DB) SetEndpointVerification(ctx context.Context, sealer *secrets.Sealer, orgID, id uuid.UUID, in NewVerification) (SetVerification, error) {
	var out SetVerification
	cfg, err := domain.CheckVerification(in.Kind, in.Config)
	if err != nil {
		return out, err
	}
	var sealed []byte
	if in.Kind.HasSecret() {
		if sealer == nil {
			return out, errors.New("making a verification secret needs COMMERCE_SECRET_KEY")
		}
		s := secrets.NewHMACSecret()
		if in.Kind == domain.VerifyBasic {
			s = secrets.NewBasicPassword()
		}
		out.Secret = &s
		sealed = sealer.Seal(s, sealedAt(endpointVerificationSecrets, id))
	}
	out.Endpoint, err = scanEndpoint(d.pool.QueryRow(ctx, `
		UPDATE inbound_endpoints
		SET verification = $3, verification_config = $4, verification_secret_sealed = $5,
		    require_signature = CASE $3::text WHEN 'service' THEN secret_sealed IS NOT NULL WHEN 'none' THEN false ELSE true END
		WHERE org_id = $1 AND id = $2 AND state <> 'deleted'
		RETURNING `+endpointColumns, orgID, id, in.Kind, cfg, sealed))
	if err == nil {
		return out, nil
	}
	out.Secret = nil
	if e, found := d.Endpoint(ctx, orgID, id); found == nil && e.State == domain.EndpointDeleted {
		return out, domain.Errorf(domain.ECONFLICT, "endpoint %s is deleted", id)
	}
	return out, notFound(err, "endpoint")
}
