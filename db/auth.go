package db

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// KeyAuth is what one authentication round trip learns about a REST call:
// who it is for, the key's rate-limit decision, and the organisation's
// add-ons (with, for each one that is off, whether rows of it are held).
type KeyAuth struct {
	Principal domain.Principal
	Rate      RateDecision
	addons    map[domain.Addon]bool
	holds     map[domain.Addon]bool
}

// AddonOpen reports whether routes gated by a may answer reads: the add-on is
// on, or it is off but the organisation still holds rows of it.
func (a KeyAuth) AddonOpen(addon domain.Addon) bool { return a.addons[addon] || a.holds[addon] }

// AddonOn reports whether the add-on is switched on (writes need this).
func (a KeyAuth) AddonOn(addon domain.Addon) bool { return a.addons[addon] }

// The statement behind AuthenticateKey: find the key by hash, take one call
// from its rate-limit bucket (unless revoked), touch last_used_at at most
// once a minute, and read the add-on flags; "holds rows" is only computed
// for add-ons that are off.
var authSQL = `
WITH k AS (
	SELECT k.id, k.org_id, k.scopes, k.revoked_at IS NOT NULL AS revoked,
	       o.addon_stock, o.addon_route, o.addon_source
	FROM api_keys k JOIN organisations o ON o.id = k.org_id
	WHERE k.key_hash = $1
), rl AS (` + gcraTake("k.org_id", "k.id", "k WHERE NOT k.revoked", APIKeyLimit) + `
), touched AS (
	UPDATE api_keys SET last_used_at = now()
	WHERE id = (SELECT id FROM k WHERE NOT revoked)
	  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT k.id, k.org_id, k.scopes, k.revoked, rl.allowed, rl.tat, now(),
       k.addon_stock, k.addon_route, k.addon_source,
       CASE WHEN k.addon_stock THEN false ELSE
            EXISTS (SELECT 1 FROM stock_lines s WHERE s.org_id = k.org_id)
         OR EXISTS (SELECT 1 FROM stock_movements m WHERE m.org_id = k.org_id) END,
       CASE WHEN k.addon_route THEN false ELSE
            EXISTS (SELECT 1 FROM deliveries d WHERE d.org_id = k.org_id) END,
       CASE WHEN k.addon_source THEN false ELSE
            EXISTS (SELECT 1 FROM suppliers s WHERE s.org_id = k.org_id)
         OR EXISTS (SELECT 1 FROM purchase_orders p WHERE p.org_id = k.org_id) END
FROM k LEFT JOIN rl ON true`

// AuthenticateKey looks up an API key by its SHA-256 and takes one call from
// its rate limit, in one round trip. An unknown or revoked key is
// EUNAUTHORIZED; the rate decision is returned for the caller to enforce.
func (d *DB) AuthenticateKey(ctx context.Context, keyHash []byte) (KeyAuth, error) {
	var (
		a                       KeyAuth
		revoked                 bool
		allowed                 *bool
		tat                     *time.Time
		now                     time.Time
		stock, route, source    bool
		hStock, hRoute, hSource bool
	)
	err := d.pool.QueryRow(ctx, authSQL, keyHash).Scan(
		&a.Principal.KeyID, &a.Principal.OrgID, &a.Principal.Scopes, &revoked, &allowed, &tat, &now,
		&stock, &route, &source, &hStock, &hRoute, &hSource)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && revoked) {
		return KeyAuth{}, domain.Errorf(domain.EUNAUTHORIZED, "API key is missing, unknown or revoked")
	}
	if err != nil {
		return KeyAuth{}, err
	}
	a.Rate = decide(APIKeyLimit, *allowed, *tat, now)
	a.addons = map[domain.Addon]bool{domain.AddonStock: stock, domain.AddonRoute: route, domain.AddonSource: source}
	a.holds = map[domain.Addon]bool{domain.AddonStock: hStock, domain.AddonRoute: hRoute, domain.AddonSource: hSource}
	return a, nil
}
