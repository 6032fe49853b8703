package db

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Endpoint is an inbound endpoint as listed: never its token or secret.
type Endpoint struct {
	ID               uuid.UUID
	OrgID            uuid.UUID
	Name             string
	Action           domain.Action
	RequireSignature bool
	State            domain.EndpointState
	RateLimitedCount int64
	CreatedAt        domain.Timestamp
	// FailingSince is since when more than half of the endpoint's posts of
	// the last 15 minutes (10 or more) failed; nil when they do not.
	FailingSince *domain.Timestamp
	// Verification is how the endpoint verifies its sender, and
	// VerificationConfig what of it is not secret
	// (docs/design.md#sender-verification).
	Verification       domain.Verification
	VerificationConfig domain.VerificationConfig
	secretSealed       []byte
	verificationSealed []byte
}

// NewEndpoint is what creating an endpoint takes.
type NewEndpoint struct {
	OrgID            uuid.UUID
	AsEmail          string
	Name             string
	Action           domain.Action
	RequireSignature bool
}

// CreatedEndpoint is an endpoint just made, with its token (the secret part
// of its URL) and its signing secret, both shown this once.
type CreatedEndpoint struct {
	Endpoint
	Token  string
	Secret *string
}

const endpointColumns = `id, org_id, name, action, require_signature, state, rate_limited_count, created_at, secret_sealed, failing_since,
	verification, verification_config, verification_secret_sealed`

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var e Endpoint
	err := row.Scan(&e.ID, &e.OrgID, &e.Name, &e.Action, &e.RequireSignature, &e.State, &e.RateLimitedCount, &e.CreatedAt, &e.secretSealed, &e.FailingSince,
		&e.Verification, &e.VerificationConfig, &e.verificationSealed)
	return e, err
}

// CreateEndpoint makes an inbound endpoint. The person named by AsEmail must
// be an owner or admin of the organisation (EFORBIDDEN otherwise). The token
// is stored as SHA-256 and the secret sealed with sealer.
func (d *DB) CreateEndpoint(ctx context.Context, sealer *secrets.Sealer, in NewEndpoint) (CreatedEndpoint, error) {
	var out CreatedEndpoint
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 200 {
		return out, domain.Errorf(domain.EINVALID, "endpoint name must be 1 to 200 characters")
	}
	if !in.Action.Valid() {
		return out, domain.Errorf(domain.EINVALID, "action %q is not one of %s", in.Action, domain.JoinValues(domain.Actions))
	}
	var role domain.UserRole
	err := d.pool.QueryRow(ctx, `SELECT role FROM users WHERE org_id = $1 AND email = lower($2)`, in.OrgID, strings.TrimSpace(in.AsEmail)).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, domain.Errorf(domain.EFORBIDDEN, "%s is not a user of the organisation", in.AsEmail)
	}
	if err != nil {
		return out, err
	}
	if !role.CanManageEndpoints() {
		return out, domain.Errorf(domain.EFORBIDDEN, "%s is a %s; creating an inbound endpoint needs the admin or owner role", in.AsEmail, role)
	}
	out.Token = secrets.NewInboundToken()
	id := NewID()
	var sealed []byte
	if in.RequireSignature {
		s := secrets.NewSigningSecret()
		out.Secret = &s
		sealed = sealer.Seal(s, sealedAt(endpointSecrets, id))
	}
	out.Endpoint, err = scanEndpoint(d.pool.QueryRow(ctx, `
		INSERT INTO inbound_endpoints (id, org_id, name, action, token_hash, secret_sealed, require_signature, created_by, token_hint)
		SELECT $1, $2, $3, $4, $5, $6, $7, id, $9 FROM users WHERE org_id = $2 AND email = lower($8)
		RETURNING `+endpointColumns, id, in.OrgID, in.Name, in.Action, secrets.Hash(out.Token), sealed,
		in.RequireSignature, strings.TrimSpace(in.AsEmail), out.Token[len(out.Token)-4:]))
	return out, err
}

// SetEndpointState pauses, resumes or deletes one of the organisation's
// endpoints, by the endpoint state machine. Deleting destroys the token:
// later posts answer 404.
func (d *DB) SetEndpointState(ctx context.Context, orgID, id uuid.UUID, to domain.EndpointState) (Endpoint, error) {
	var e Endpoint
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var from domain.EndpointState
		if err := tx.QueryRow(ctx, `SELECT state FROM inbound_endpoints WHERE org_id = $1 AND id = $2 FOR UPDATE`, orgID, id).Scan(&from); err != nil {
			return notFound(err, "endpoint")
		}
		if _, err := domain.EndpointMachine.Move(from, to); err != nil {
			return err
		}
		var err error
		e, err = scanEndpoint(tx.QueryRow(ctx, `
			UPDATE inbound_endpoints
			SET state = $2,
			    token_hash = CASE WHEN $2 = 'deleted' THEN NULL ELSE token_hash END,
			    secret_sealed = CASE WHEN $2 = 'deleted' THEN NULL ELSE secret_sealed END,
			    verification_secret_sealed = CASE WHEN $2 = 'deleted' THEN NULL ELSE verification_secret_sealed END,
			    require_signature = CASE WHEN $2 = 'deleted' THEN false ELSE require_signature END,
			    deleted_at = CASE WHEN $2 = 'deleted' THEN now() END
			WHERE org_id = $3 AND id = $1 RETURNING `+endpointColumns, id, to, orgID))
		return err
	})
	return e, err
}

// EndpointByToken finds the live (not deleted) endpoint of a token hash,
// without taking from its rate limit.
func (d *DB) EndpointByToken(ctx context.Context, tokenHash []byte) (Endpoint, error) {
	e, err := scanEndpoint(d.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM inbound_endpoints
		WHERE token_hash = $1 AND state <> 'deleted'`, tokenHash))
	return e, notFound(err, "endpoint")
}

// Endpoint returns one endpoint of the organisation, deleted ones too.
func (d *DB) Endpoint(ctx context.Context, orgID, id uuid.UUID) (Endpoint, error) {
	e, err := scanEndpoint(d.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM inbound_endpoints WHERE org_id = $1 AND id = $2`, orgID, id))
	return e, notFound(err, "endpoint")
}

// ListEndpoints lists the organisation's endpoints, newest first (deleted
// ones too, for their receipts).
func (d *DB) ListEndpoints(ctx context.Context, orgID uuid.UUID) ([]Endpoint, error) {
	if _, err := d.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+endpointColumns+` FROM inbound_endpoints WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Endpoint, error) { return scanEndpoint(r) })
}

// EndpointPost is what one lookup learns about a post to an endpoint.
type EndpointPost struct {
	Endpoint Endpoint
	Rate     RateDecision
	// Mapping is the endpoint's current mapping; nil for none.
	Mapping *MappingRef
}

// SealedSecret is the endpoint's signing secret as it is kept, sealed to
// this endpoint, for a holder of the service key to open; ok is false when
// the endpoint has none.
func (e Endpoint) SealedSecret() (s secrets.Sealed, ok bool) {
	return secrets.Sealed{Value: e.secretSealed, At: sealedAt(endpointSecrets, e.ID)}, e.secretSealed != nil
}

// The statement behind PostToEndpoint: find the live endpoint by token
// hash, take one post from its bucket, and count a refused post on it.
var endpointPostSQL = `
WITH e AS (
	SELECT ` + endpointColumns + ` FROM inbound_endpoints WHERE token_hash = $1 AND state <> 'deleted'
), rl AS (` + gcraTake("e.org_id", "e.id", "e", EndpointLimit) + `
), counted AS (
	UPDATE inbound_endpoints SET rate_limited_count = rate_limited_count + 1
	WHERE id = (SELECT id FROM e) AND NOT (SELECT allowed FROM rl)
)
SELECT e.id, e.org_id, e.name, e.action, e.require_signature, e.state, e.rate_limited_count, e.created_at, e.secret_sealed,
       e.verification, e.verification_config, e.verification_secret_sealed, rl.allowed, rl.tat, now(), m.version, m.sha256
FROM e CROSS JOIN rl` + currentMappingRef(MappingOfEndpoint, "e.org_id", "e.id")

// PostToEndpoint finds the endpoint of a token (ENOTFOUND for none or a
// deleted one) and takes one post from its rate limit, in one round trip.
func (d *DB) PostToEndpoint(ctx context.Context, tokenHash []byte) (EndpointPost, error) {
	var p EndpointPost
	var allowed bool
	var tat, now time.Time
	var version *int
	var sum *string
	e := &p.Endpoint
	err := d.rate.QueryRow(ctx, endpointPostSQL, tokenHash).Scan(&e.ID, &e.OrgID, &e.Name, &e.Action, &e.RequireSignature,
		&e.State, &e.RateLimitedCount, &e.CreatedAt, &e.secretSealed, &e.Verification, &e.VerificationConfig, &e.verificationSealed,
		&allowed, &tat, &now, &version, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, domain.Errorf(domain.ENOTFOUND, "Not found")
	}
	if err != nil {
		return p, err
	}
	p.Rate = decide(EndpointLimit, allowed, tat, now)
	p.Mapping = mappingRef(version, sum)
	return p, nil
}
