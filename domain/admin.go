package domain

import (
	"slices"

	"github.com/google/uuid"
)

// Organisation is a tenant: every record belongs to exactly one.
type Organisation struct {
	ID         uuid.UUID `json:"id"`
	Name       string    `json:"name"`
	Currency   string    `json:"currency"`
	ProductCap int       `json:"product_cap"`
	Stock      bool      `json:"addon_stock"`
	Route      bool      `json:"addon_route"`
	Source     bool      `json:"addon_source"`
	CreatedAt  Timestamp `json:"created_at"`
}

// AddonOn reports whether the organisation has the add-on switched on.
func (o Organisation) AddonOn(a Addon) bool {
	switch a {
	case AddonStock:
		return o.Stock
	case AddonRoute:
		return o.Route
	case AddonSource:
		return o.Source
	}
	return false
}

// User is a person in an organisation.
type User struct {
	ID        uuid.UUID `json:"id"`
	OrgID     uuid.UUID `json:"org_id"`
	Email     string    `json:"email"`
	Role      UserRole  `json:"role"`
	CreatedAt Timestamp `json:"created_at"`
}

// APIKey is an organisation API key as listed: never the key itself.
type APIKey struct {
	ID         uuid.UUID  `json:"id"`
	OrgID      uuid.UUID  `json:"org_id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []Scope    `json:"scopes"`
	CreatedAt  Timestamp  `json:"created_at"`
	LastUsedAt *Timestamp `json:"last_used_at"`
	RevokedAt  *Timestamp `json:"revoked_at"`
}

// Principal is who a REST call acts for: the key, its organisation and what
// the key may do.
type Principal struct {
	KeyID  uuid.UUID
	OrgID  uuid.UUID
	Scopes []Scope
}

// Has reports whether the principal carries scope s.
func (p Principal) Has(s Scope) bool { return slices.Contains(p.Scopes, s) }
