package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// KeyAuth is what authentication learns about a REST call: who it is for,
// the key's rate-limit decision, and the state of the add-on the route
// needs (if any).
type KeyAuth struct {
	Principal domain.Principal
	Rate      RateDecision
	// AddonOn is true when the route's add-on is switched on (or the route
	// needs none).
	AddonOn bool
	// AddonHeld is true when the add-on is off but the organisation still
	// holds rows of it (reads keep working then).
	AddonHeld bool
}

// AddonOpen reports whether the route may answer a read.
func (a KeyAuth) AddonOpen() bool { return a.AddonOn || a.AddonHeld }

// The statement behind AuthenticateKey: find the key by hash, touch
// last_used_at at most once a minute (so the statement writes nothing on
// most calls), and read the route's add-on ($2: stock, route, source or
// empty); whether rows of it are held is only looked up when it is off.
var authSQL = `
WITH k AS (
	SELECT k.id, k.org_id, k.scopes, k.revoked_at IS NOT NULL AS revoked,
	       CASE $2 WHEN 'stock' THEN o.addon_stock WHEN 'route' THEN o.addon_route
	               WHEN 'source' THEN o.addon_source ELSE true END AS addon_on
	FROM api_keys k JOIN organisations o ON o.id = k.org_id
	WHERE k.key_hash = $1
), touched AS (
	UPDATE api_keys SET last_used_at = now()
	WHERE id = (SELECT id FROM k WHERE NOT revoked)
	  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT k.id, k.org_id, k.scopes, k.revoked, k.addon_on,
       CASE WHEN k.addon_on THEN false
            WHEN $2 = 'stock' THEN EXISTS (SELECT 1 FROM stock_lines s WHERE s.org_id = k.org_id)
                                OR EXISTS (SELECT 1 FROM stock_movements m WHERE m.org_id = k.org_id)
            WHEN $2 = 'route' THEN EXISTS (SELECT 1 FROM deliveries d WHERE d.org_id = k.org_id)
            WHEN $2 = 'source' THEN EXISTS (SELECT 1 FROM suppliers s WHERE s.org_id = k.org_id)
                                 OR EXISTS (SELECT 1 FROM purchase_orders p WHERE p.org_id = k.org_id)
            ELSE false END
FROM k`

// AuthenticateKey looks up an API key by its SHA-256 and the state of the
// route's add-on (addon may be empty) in one round trip, unless this process
// kept them from a call moments ago (keycache.go), then takes one call from
// the key's rate limit through this process's lease of it (keylease.go),
// which costs a write only when a lease is taken. An unknown
// or revoked key is EUNAUTHORIZED and takes nothing; the rate decision is
// returned for the caller to enforce.
func (d *DB) AuthenticateKey(ctx context.Context, keyHash []byte, addon domain.Addon) (KeyAuth, error) {
	a, kept := d.keys.get(keyHash, addon)
	if !kept {
		gen := d.keys.generation()
		var revoked bool
		err := d.rate.QueryRow(ctx, authSQL, keyHash, string(addon)).Scan(
			&a.Principal.KeyID, &a.Principal.OrgID, &a.Principal.Scopes, &revoked, &a.AddonOn, &a.AddonHeld)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && revoked) {
			return KeyAuth{}, domain.Errorf(domain.EUNAUTHORIZED, "API key is missing, unknown or revoked")
		}
		if err != nil {
			return KeyAuth{}, err
		}
		d.keys.put(keyHash, addon, a, gen)
	}
	var err error
	a.Rate, err = d.leases.take(ctx, a.Principal.OrgID, a.Principal.KeyID)
	return a, err
}
