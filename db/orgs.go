package db

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// NewID returns a UUIDv7, so ids sort by creation time.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// NewOrganisation is what creating an organisation takes.
type NewOrganisation struct {
	Name       string
	Currency   string
	ProductCap *int
	OwnerEmail string
}

const orgColumns = `id, name, currency, product_cap, addon_stock, addon_route, addon_source, created_at`

func scanOrg(row pgx.Row) (domain.Organisation, error) {
	var o domain.Organisation
	err := row.Scan(&o.ID, &o.Name, &o.Currency, &o.ProductCap, &o.Stock, &o.Route, &o.Source, &o.CreatedAt)
	return o, err
}

// CreateOrganisation creates an organisation and, when an owner email is
// given, its owner, in one transaction.
func (d *DB) CreateOrganisation(ctx context.Context, in NewOrganisation) (domain.Organisation, *domain.User, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 200 {
		return domain.Organisation{}, nil, domain.Errorf(domain.EINVALID, "organisation name must be 1 to 200 characters")
	}
	if in.Currency == "" {
		in.Currency = "GBP"
	}
	if !domain.ValidCurrency(in.Currency) {
		return domain.Organisation{}, nil, domain.Errorf(domain.EINVALID, "currency %q is not a three-letter ISO 4217 code", in.Currency)
	}
	if in.ProductCap != nil && *in.ProductCap < 0 {
		return domain.Organisation{}, nil, domain.Errorf(domain.EINVALID, "product cap must be zero or more")
	}
	var org domain.Organisation
	var owner *domain.User
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		org, err = scanOrg(tx.QueryRow(ctx, `
			INSERT INTO organisations (id, name, currency, product_cap)
			VALUES ($1, $2, $3, coalesce($4, 100000))
			RETURNING `+orgColumns, NewID(), in.Name, in.Currency, in.ProductCap))
		if err != nil {
			return err
		}
		if in.OwnerEmail != "" {
			u, err := addUser(ctx, tx, org.ID, in.OwnerEmail, domain.UserOwner)
			if err != nil {
				return err
			}
			owner = &u
		}
		return nil
	})
	return org, owner, err
}

// Organisation returns one organisation.
func (d *DB) Organisation(ctx context.Context, id uuid.UUID) (domain.Organisation, error) {
	o, err := scanOrg(d.pool.QueryRow(ctx, `SELECT `+orgColumns+` FROM organisations WHERE id = $1`, id))
	return o, notFound(err, "organisation")
}

// SetAddon switches an add-on on or off. Switching Stock on for the first
// time creates the default stock location.
func (d *DB) SetAddon(ctx context.Context, orgID uuid.UUID, addon domain.Addon, on bool) (domain.Organisation, error) {
	column := map[domain.Addon]string{
		domain.AddonStock: "addon_stock", domain.AddonRoute: "addon_route", domain.AddonSource: "addon_source",
	}[addon]
	if column == "" {
		return domain.Organisation{}, domain.Errorf(domain.EINVALID, "unknown add-on %q (stock, route or source)", addon)
	}
	var org domain.Organisation
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		org, err = scanOrg(tx.QueryRow(ctx,
			`UPDATE organisations SET `+column+` = $2 WHERE id = $1 RETURNING `+orgColumns, orgID, on))
		if err != nil {
			return notFound(err, "organisation")
		}
		if addon == domain.AddonStock && on {
			_, err = ensureDefaultLocation(ctx, tx, orgID)
		}
		return err
	})
	d.keys.drop() // other processes drop theirs on the trigger's notice
	return org, err
}

// Tolerances returns the organisation's three-way match tolerances.
func (d *DB) Tolerances(ctx context.Context, orgID uuid.UUID) (domain.Tolerances, error) {
	var t domain.Tolerances
	err := d.pool.QueryRow(ctx, `SELECT match_qty_tolerance, match_amount_tolerance_pct, match_amount_tolerance_minor
		FROM organisations WHERE id = $1`, orgID).Scan(&t.Qty, &t.AmountPct, &t.AmountMinor)
	return t, notFound(err, "organisation")
}

// SetTolerances changes the organisation's three-way match tolerances;
// matches run from then on use them.
func (d *DB) SetTolerances(ctx context.Context, orgID uuid.UUID, t domain.Tolerances) (domain.Tolerances, error) {
	if t.Qty < 0 || t.AmountPct < 0 || t.AmountMinor < 0 {
		return t, domain.Errorf(domain.EINVALID, "tolerances must be zero or more")
	}
	err := d.pool.QueryRow(ctx, `UPDATE organisations
		SET match_qty_tolerance = $2, match_amount_tolerance_pct = $3, match_amount_tolerance_minor = $4
		WHERE id = $1
		RETURNING match_qty_tolerance, match_amount_tolerance_pct, match_amount_tolerance_minor`,
		orgID, t.Qty, t.AmountPct, t.AmountMinor).Scan(&t.Qty, &t.AmountPct, &t.AmountMinor)
	return t, notFound(err, "organisation")
}

// AddUser adds a person to an organisation.
func (d *DB) AddUser(ctx context.Context, orgID uuid.UUID, email string, role domain.UserRole) (domain.User, error) {
	return addUser(ctx, d.pool, orgID, email, role)
}

func addUser(ctx context.Context, q querier, orgID uuid.UUID, email string, role domain.UserRole) (domain.User, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if at := strings.IndexByte(email, '@'); at < 1 || at == len(email)-1 || strings.ContainsAny(email, " \t\r\n") {
		return domain.User{}, domain.Errorf(domain.EINVALID, "%q is not an email address", email)
	}
	if !validRole(role) {
		return domain.User{}, domain.Errorf(domain.EINVALID, "role %q is not owner, admin or member", role)
	}
	var u domain.User
	err := q.QueryRow(ctx, `
		INSERT INTO users (id, org_id, email, role)
		SELECT $1, id, $3, $4 FROM organisations WHERE id = $2
		RETURNING id, org_id, email, role, created_at`, NewID(), orgID, email, role).
		Scan(&u.ID, &u.OrgID, &u.Email, &u.Role, &u.CreatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return u, domain.Errorf(domain.ENOTFOUND, "organisation %s not found", orgID)
	case isUniqueViolation(err, "users_one_owner"):
		return u, domain.Errorf(domain.ECONFLICT, "the organisation already has an owner")
	case isUniqueViolation(err, ""):
		return u, domain.Errorf(domain.ECONFLICT, "%s is already a user of the organisation", email)
	}
	return u, err
}

func validRole(r domain.UserRole) bool {
	for _, v := range domain.UserRoles {
		if v == r {
			return true
		}
	}
	return false
}

// Owner returns the organisation's owner.
func (d *DB) Owner(ctx context.Context, orgID uuid.UUID) (domain.User, error) {
	var u domain.User
	err := d.pool.QueryRow(ctx, `
		SELECT id, org_id, email, role, created_at FROM users WHERE org_id = $1 AND role = 'owner'`, orgID).
		Scan(&u.ID, &u.OrgID, &u.Email, &u.Role, &u.CreatedAt)
	return u, notFound(err, "owner")
}

// CreateAPIKey makes a key for the organisation and returns it with the
// plaintext, which is shown once and never stored.
func (d *DB) CreateAPIKey(ctx context.Context, orgID uuid.UUID, name string, scopes []domain.Scope) (domain.APIKey, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return domain.APIKey{}, "", domain.Errorf(domain.EINVALID, "key name must be 1 to 200 characters")
	}
	if len(scopes) == 0 {
		return domain.APIKey{}, "", domain.Errorf(domain.EINVALID, "a key needs at least one scope")
	}
	plain, prefix := secrets.NewAPIKey()
	k, err := scanKey(d.pool.QueryRow(ctx, `
		INSERT INTO api_keys (id, org_id, name, prefix, key_hash, scopes)
		SELECT $1, id, $3, $4, $5, $6 FROM organisations WHERE id = $2
		RETURNING `+keyColumns, NewID(), orgID, name, prefix, secrets.Hash(plain), scopes))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, "", domain.Errorf(domain.ENOTFOUND, "organisation %s not found", orgID)
	}
	return k, plain, err
}

const keyColumns = `id, org_id, name, prefix, scopes, created_at, last_used_at, revoked_at`

func scanKey(row pgx.Row) (domain.APIKey, error) {
	var k domain.APIKey
	err := row.Scan(&k.ID, &k.OrgID, &k.Name, &k.Prefix, &k.Scopes, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt)
	return k, err
}

// ListAPIKeys lists the organisation's keys, newest first.
func (d *DB) ListAPIKeys(ctx context.Context, orgID uuid.UUID) ([]domain.APIKey, error) {
	if _, err := d.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, err
	}
	keys := []domain.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// RevokeAPIKey revokes one of the organisation's keys; later calls with it
// answer 401. Revoking a revoked key keeps its first revocation time.
func (d *DB) RevokeAPIKey(ctx context.Context, orgID, keyID uuid.UUID) (domain.APIKey, error) {
	k, err := scanKey(d.pool.QueryRow(ctx, `
		UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE org_id = $1 AND id = $2 RETURNING `+keyColumns, orgID, keyID))
	d.keys.drop() // other processes drop theirs on the trigger's notice
	return k, notFound(err, "API key")
}

// ActiveKeyOrg returns the organisation of an unrevoked key, without
// counting a call against its rate limit.
func (d *DB) ActiveKeyOrg(ctx context.Context, keyHash []byte) (uuid.UUID, error) {
	var org uuid.UUID
	err := d.pool.QueryRow(ctx, `SELECT org_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, keyHash).Scan(&org)
	return org, notFound(err, "API key")
}
