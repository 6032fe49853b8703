package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/internal/secrets"
)

// The tables whose rows keep a sealed signing secret in secret_sealed. Each
// secret is sealed to its table and row id, so a sealed value copied to
// another row does not open.
const (
	endpointSecrets     = "inbound_endpoints"
	subscriptionSecrets = "webhook_subscriptions"
)

// endpointVerificationSecrets is the place an endpoint's sender
// verification secret (verification_secret_sealed: the HMAC key, the Basic
// password) is sealed for, with the row id: not secret_sealed's, so neither
// value opens in the other's column. These were always sealed bound, so
// ResealSecrets has none of them to seal again.
const endpointVerificationSecrets = "inbound_endpoints.verification_secret_sealed"

// sealedAt is the place a row's secret is sealed for.
func sealedAt(table string, id uuid.UUID) secrets.Binding {
	return secrets.Binding{Table: table, Row: id.String()}
}

// Resealed counts what ResealSecrets did.
type Resealed struct {
	// Resealed is how many secrets were sealed again, bound to their rows.
	Resealed int
	// Unreadable is how many did not open under this service key; they are
	// left as they are.
	Unreadable int
}

// ResealSecrets seals again, bound to its row, every signing secret still
// in the older unbound format. It is idempotent and safe to run from
// several processes at once: a row is rewritten only if it still holds the
// value that was read. It spans every organisation, like a migration.
func (d *DB) ResealSecrets(ctx context.Context, sealer *secrets.Sealer) (Resealed, error) {
	var r Resealed
	for _, table := range []string{endpointSecrets, subscriptionSecrets} {
		rows, err := d.pool.Query(ctx, `SELECT org_id, id, secret_sealed FROM `+table+`
			WHERE secret_sealed IS NOT NULL AND substring(secret_sealed FROM 1 FOR $1) <> $2`,
			len(secrets.BoundPrefix()), secrets.BoundPrefix())
		if err != nil {
			return r, err
		}
		type sealedRow struct {
			org, id uuid.UUID
			sealed  []byte
		}
		old, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sealedRow, error) {
			var s sealedRow
			err := row.Scan(&s.org, &s.id, &s.sealed)
			return s, err
		})
		if err != nil {
			return r, err
		}
		for _, s := range old {
			at := sealedAt(table, s.id)
			plain, err := sealer.Open(s.sealed, at)
			if err != nil {
				r.Unreadable++
				continue
			}
			tag, err := d.pool.Exec(ctx, `UPDATE `+table+` SET secret_sealed = $3 WHERE org_id = $1 AND id = $2 AND secret_sealed = $4`,
				s.org, s.id, sealer.Seal(plain, at), s.sealed)
			if err != nil {
				return r, err
			}
			r.Resealed += int(tag.RowsAffected())
		}
	}
	return r, nil
}
