package db

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// ssoSecrets is the place an organisation's provider client secret is
// sealed for, with the organisation's id.
const ssoSecrets = "org_sso"

// SSOStateTTL is how long a sign-in sent to the provider may take to come
// back.
const SSOStateTTL = 10 * time.Minute

// OrgSSO is an organisation's OpenID Connect provider as the console signs
// in through it. ClientSecret is set only by SetOrgSSO's caller and by
// OrgSSOSecret; it is never listed.
type OrgSSO struct {
	OrgID        uuid.UUID
	Issuer       string
	ClientID     string
	ClientSecret string
	Domains      []string
	RoleClaim    string
	OwnerValues  []string
	AdminValues  []string
	// Unmatched is member or refuse: what a user whose role claim names
	// none of the values becomes.
	Unmatched string
	UpdatedAt time.Time
}

// SetOrgSSO stores (or replaces) the organisation's provider, sealing the
// client secret; an empty ClientSecret keeps the one stored. A domain
// already taken by another organisation is ECONFLICT.
func (d *DB) SetOrgSSO(ctx context.Context, sealer *secrets.Sealer, in OrgSSO) error {
	if sealer == nil {
		return domain.Errorf(domain.EINVALID, "COMMERCE_SECRET_KEY is not set: the client secret cannot be sealed")
	}
	return d.inTx(ctx, func(tx pgx.Tx) error {
		var known bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM organisations WHERE id = $1)`, in.OrgID).Scan(&known); err != nil {
			return err
		}
		if !known {
			return domain.Errorf(domain.ENOTFOUND, "organisation %s not found", in.OrgID)
		}
		var sealed []byte
		if in.ClientSecret != "" {
			sealed = sealer.Seal(in.ClientSecret, sealedAt(ssoSecrets, in.OrgID))
		}
		q := `INSERT INTO org_sso (org_id, issuer, client_id, client_secret, role_claim, owner_values, admin_values, unmatched)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (org_id) DO UPDATE SET issuer = $2, client_id = $3, client_secret = $4,
				role_claim = $5, owner_values = $6, admin_values = $7, unmatched = $8, updated_at = now()`
		args := []any{in.OrgID, in.Issuer, in.ClientID, sealed, in.RoleClaim, nonNil(in.OwnerValues), nonNil(in.AdminValues), in.Unmatched}
		if sealed == nil {
			// The stored secret is kept; there must be one.
			q = `UPDATE org_sso SET issuer = $2, client_id = $3, role_claim = $4, owner_values = $5, admin_values = $6,
				unmatched = $7, updated_at = now() WHERE org_id = $1`
			args = []any{in.OrgID, in.Issuer, in.ClientID, in.RoleClaim, nonNil(in.OwnerValues), nonNil(in.AdminValues), in.Unmatched}
		}
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return domain.Errorf(domain.EINVALID, "a client secret is needed: the organisation has no provider yet")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM org_sso_domains WHERE org_id = $1`, in.OrgID); err != nil {
			return err
		}
		for _, dom := range in.Domains {
			var other uuid.UUID
			err := tx.QueryRow(ctx, `INSERT INTO org_sso_domains (domain, org_id) VALUES ($1, $2)
				ON CONFLICT (domain) DO UPDATE SET domain = org_sso_domains.domain RETURNING org_id`, dom, in.OrgID).Scan(&other)
			if err != nil {
				return err
			}
			if other != in.OrgID {
				return domain.Errorf(domain.ECONFLICT, "the email domain %s signs in to another organisation already", dom)
			}
		}
		return nil
	})
}

// OrgSSOOf is the organisation's provider, without its client secret;
// ENOTFOUND when it has none.
func (d *DB) OrgSSOOf(ctx context.Context, orgID uuid.UUID) (OrgSSO, error) {
	s, _, err := orgSSO(ctx, d.pool, `s.org_id = $1`, orgID)
	return s, err
}

// OrgSSOSecret is the organisation's provider with its client secret
// opened.
func (d *DB) OrgSSOSecret(ctx context.Context, sealer *secrets.Sealer, orgID uuid.UUID) (OrgSSO, error) {
	s, sealed, err := orgSSO(ctx, d.pool, `s.org_id = $1`, orgID)
	if err != nil {
		return s, err
	}
	if sealer == nil {
		return s, errors.New("no service key: the provider's client secret cannot be opened")
	}
	s.ClientSecret, err = sealer.Open(sealed, sealedAt(ssoSecrets, orgID))
	return s, err
}

// OrgSSOByDomain is the provider that email domain signs in through;
// ENOTFOUND when none does.
func (d *DB) OrgSSOByDomain(ctx context.Context, emailDomain string) (OrgSSO, error) {
	s, _, err := orgSSO(ctx, d.pool, `s.org_id = (SELECT org_id FROM org_sso_domains WHERE domain = lower($1))`, emailDomain)
	return s, err
}

func orgSSO(ctx context.Context, q querier, where string, arg any) (OrgSSO, []byte, error) {
	var s OrgSSO
	var sealed []byte
	err := q.QueryRow(ctx, `
		SELECT s.org_id, s.issuer, s.client_id, s.client_secret, s.role_claim, s.owner_values, s.admin_values, s.unmatched, s.updated_at,
			coalesce((SELECT array_agg(domain ORDER BY domain) FROM org_sso_domains WHERE org_id = s.org_id), '{}')
		FROM org_sso s WHERE `+where, arg).
		Scan(&s.OrgID, &s.Issuer, &s.ClientID, &sealed, &s.RoleClaim, &s.OwnerValues, &s.AdminValues, &s.Unmatched, &s.UpdatedAt, &s.Domains)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil, domain.Errorf(domain.ENOTFOUND, "no identity provider is set for this organisation or email domain")
	}
	return s, sealed, err
}

// RemoveOrgSSO forgets the organisation's provider and its domains; its
// users keep their sessions, and sign in with one-time links again.
// ENOTFOUND when it had none.
func (d *DB) RemoveOrgSSO(ctx context.Context, orgID uuid.UUID) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM org_sso WHERE org_id = $1`, orgID)
	if err == nil && tag.RowsAffected() == 0 {
		return domain.Errorf(domain.ENOTFOUND, "organisation %s has no identity provider", orgID)
	}
	return err
}

// SSOState is a sign-in under way at the provider.
type SSOState struct {
	OrgID uuid.UUID
	Email string
	Nonce string
}

// CreateSSOState records a sign-in sent to the provider: the state is
// stored hashed, with the hash of the browser's binding cookie.
func (d *DB) CreateSSOState(ctx context.Context, state, binder string, s SSOState) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO console_sso_states (state_hash, binder_hash, org_id, email, nonce, expires_at)
		VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
		secrets.Hash(state), secrets.Hash(binder), s.OrgID, s.Email, s.Nonce, SSOStateTTL.Seconds())
	return err
}

// State refusals, told apart for the page that says which.
var (
	ErrStateUnknown = domain.Errorf(domain.EINVALID, "the sign-in's state is unknown to the console")
	ErrStateUsed    = domain.Errorf(domain.EINVALID, "the sign-in's state was used already (a replayed answer)")
	ErrStateExpired = domain.Errorf(domain.EINVALID, "the sign-in took over ten minutes; its state has expired")
	ErrStateBrowser = domain.Errorf(domain.EINVALID, "the sign-in was started in another browser")
)

// TakeSSOState spends a sign-in's state, once: unknown, used, expired or
// started by a browser without binder is one of the ErrState errors.
func (d *DB) TakeSSOState(ctx context.Context, state, binder string) (SSOState, error) {
	var s SSOState
	var binderHash []byte
	var used, expired bool
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT org_id, email, nonce, binder_hash, used_at IS NOT NULL, expires_at <= now()
			FROM console_sso_states WHERE state_hash = $1 FOR UPDATE`, secrets.Hash(state)).
			Scan(&s.OrgID, &s.Email, &s.Nonce, &binderHash, &used, &expired)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrStateUnknown
		}
		if err != nil {
			return err
		}
		if used {
			return ErrStateUsed
		}
		_, err = tx.Exec(ctx, `UPDATE console_sso_states SET used_at = now() WHERE state_hash = $1`, secrets.Hash(state))
		return err
	})
	switch {
	case err != nil:
		return s, err
	case expired:
		return s, ErrStateExpired
	case subtle.ConstantTimeCompare(binderHash, secrets.Hash(binder)) != 1:
		return s, ErrStateBrowser
	}
	_, err = d.pool.Exec(ctx, `DELETE FROM console_sso_states WHERE expires_at < now() - interval '1 day'`)
	return s, err
}

// StartSSOSession makes or updates the organisation's user of email with
// role and starts a session for them. An organisation has one owner: a
// user the provider calls owner while another user is the owner becomes an
// admin. A disabled user is EFORBIDDEN.
func (d *DB) StartSSOSession(ctx context.Context, orgID uuid.UUID, email string, role domain.UserRole) (string, ConsoleUser, error) {
	session := secrets.NewConsoleToken()
	email = strings.ToLower(strings.TrimSpace(email))
	var u ConsoleUser
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if role == domain.UserOwner {
			var other bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE org_id = $1 AND role = 'owner' AND email <> $2)`,
				orgID, email).Scan(&other); err != nil {
				return err
			}
			if other {
				role = domain.UserAdmin
			}
		}
		var userID uuid.UUID
		var disabled bool
		err := tx.QueryRow(ctx, `
			INSERT INTO users (id, org_id, email, role) VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id, email) DO UPDATE SET role = $4
			RETURNING id, disabled_at IS NOT NULL`, NewID(), orgID, email, role).Scan(&userID, &disabled)
		if err != nil {
			return err
		}
		if disabled {
			return domain.Errorf(domain.EFORBIDDEN, "%s is disabled in this organisation", email)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO console_sessions (token_hash, org_id, user_id, expires_at, via)
			VALUES ($1, $2, $3, now() + make_interval(secs => $4), 'sso')`, secrets.Hash(session), orgID, userID, ConsoleSessionTTL.Seconds()); err != nil {
			return err
		}
		u, err = consoleUser(ctx, tx, secrets.Hash(session))
		return err
	})
	if err != nil {
		return "", u, err
	}
	return session, u, d.sweepConsole(ctx)
}
