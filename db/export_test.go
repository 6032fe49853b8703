package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// MigrateTo brings the database at url to the schema version target, as
// an older release left it.
func MigrateTo(ctx context.Context, url string, target int32) (MigrateResult, error) {
	return migrateTo(ctx, url, target)
}

// Emit writes an event in tx, as every write of the service does.
func Emit(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, e domain.Event) error {
	return emit(ctx, tx, orgID, e)
}

// AdmissionSubscriptionsSQL is the statement a relay's round begins with.
var AdmissionSubscriptionsSQL = admissionSubscriptionsSQL

// AdmitSQL is the statement that picks a subscription's deliveries to
// admit, under an ordering whose blockers are given.
var AdmitSQL = admitSQL

// ResolveByReplaySQL resolve, for an applied receipt, its original's
// failures.
var ResolveByReplaySQL = resolveByReplaySQL

// SetLeaseTerms sets how long d's rate-limit leases may be spent and how
// often expired ones are given back, before its first call takes one.
func SetLeaseTerms(d *DB, ttl, every time.Duration) { d.leases.ttl, d.leases.every = ttl, every }

// Leases is how many keys d holds a rate-limit lease of.
func Leases(d *DB) int {
	d.leases.mu.Lock()
	defer d.leases.mu.Unlock()
	return len(d.leases.m)
}

// LeaseMax is the most calls one lease takes.
const LeaseMax = leaseMax

// SetKeyCacheTTL sets how long d keeps what authenticating a key read,
// before its first call.
func SetKeyCacheTTL(d *DB, ttl time.Duration) { d.keys.ttl = ttl }

// KeysKept is how many authentications d keeps, and whether it is
// listening for changes (it keeps none while it is not).
func KeysKept(d *DB) (int, bool) {
	d.keys.mu.Lock()
	defer d.keys.mu.Unlock()
	return len(d.keys.m), d.keys.live.Load()
}
