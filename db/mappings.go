package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// MappingOwner is what a mapping belongs to: an inbound endpoint (its posts
// are mapped) or a webhook subscription (its events are transformed).
type MappingOwner string

const (
	MappingOfEndpoint     MappingOwner = "endpoint"
	MappingOfSubscription MappingOwner = "subscription"
)

// MappingVersion is one version of a mapping. Source is nil for a version
// that ended mapping.
type MappingVersion struct {
	Version   int
	Source    *string
	SHA256    *string
	CreatedAt domain.Timestamp
	CreatedBy string
}

// MappingRef names a mapping's version without its source: what a post
// needs to find its compiled program.
type MappingRef struct {
	Version int
	SHA256  string
}

// ownerTable is the table of each owner, whose row (of the organisation,
// not deleted) a new version needs.
var ownerTable = map[MappingOwner]string{
	MappingOfEndpoint:     `SELECT 1 FROM inbound_endpoints WHERE org_id = $1 AND id = $2 AND state <> 'deleted' FOR NO KEY UPDATE`,
	MappingOfSubscription: `SELECT 1 FROM webhook_subscriptions WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`,
}

// AddMappingVersion makes the next version of an owner's mapping: source,
// or nil to end mapping. ENOTFOUND when the owner is not one of the
// organisation's; two writers at once each get a version of their own.
func (d *DB) AddMappingVersion(ctx context.Context, orgID uuid.UUID, kind MappingOwner, owner uuid.UUID, source *string, by string) (MappingVersion, error) {
	var v MappingVersion
	var sum *string
	if source != nil {
		s := sha256.Sum256([]byte(*source))
		h := hex.EncodeToString(s[:])
		sum = &h
	}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		// The owner's row, locked, orders its writers: each takes the next
		// version.
		var one int
		if err := tx.QueryRow(ctx, ownerTable[kind], orgID, owner).Scan(&one); err != nil {
			return notFound(err, string(kind))
		}
		return tx.QueryRow(ctx, `
			INSERT INTO mapping_versions (org_id, owner_kind, owner_id, version, source, sha256, created_by)
			SELECT $1, $2, $3, coalesce(max(version), 0) + 1, $4, $5, $6
			FROM mapping_versions WHERE org_id = $1 AND owner_kind = $2 AND owner_id = $3
			RETURNING version, source, sha256, created_at, created_by`,
			orgID, kind, owner, source, sum, by).Scan(&v.Version, &v.Source, &v.SHA256, &v.CreatedAt, &v.CreatedBy)
	})
	return v, err
}

// CurrentMapping is an owner's highest version; ENOTFOUND when it never
// had one (or the owner is not the organisation's).
func (d *DB) CurrentMapping(ctx context.Context, orgID uuid.UUID, kind MappingOwner, owner uuid.UUID) (MappingVersion, error) {
	return d.mappingVersion(ctx, `
		SELECT version, source, sha256, created_at, created_by FROM mapping_versions
		WHERE org_id = $1 AND owner_kind = $2 AND owner_id = $3 ORDER BY version DESC LIMIT 1`, orgID, kind, owner)
}

// GetMappingVersion is one version of an owner's mapping (ENOTFOUND for
// none).
func (d *DB) GetMappingVersion(ctx context.Context, orgID uuid.UUID, kind MappingOwner, owner uuid.UUID, version int) (MappingVersion, error) {
	return d.mappingVersion(ctx, `
		SELECT version, source, sha256, created_at, created_by FROM mapping_versions
		WHERE org_id = $1 AND owner_kind = $2 AND owner_id = $3 AND version = $4`, orgID, kind, owner, version)
}

func (d *DB) mappingVersion(ctx context.Context, query string, args ...any) (MappingVersion, error) {
	var v MappingVersion
	err := d.pool.QueryRow(ctx, query, args...).Scan(&v.Version, &v.Source, &v.SHA256, &v.CreatedAt, &v.CreatedBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.Errorf(domain.ENOTFOUND, "no mapping")
	}
	return v, err
}

// ListMappingVersions lists an owner's versions, newest first, without
// their source.
func (d *DB) ListMappingVersions(ctx context.Context, orgID uuid.UUID, kind MappingOwner, owner uuid.UUID) ([]MappingVersion, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT version, NULL::text, sha256, created_at, created_by FROM mapping_versions
		WHERE org_id = $1 AND owner_kind = $2 AND owner_id = $3 ORDER BY version DESC LIMIT 1000`, orgID, kind, owner)
	if err != nil {
		return nil, err
	}
	out := []MappingVersion{}
	for rows.Next() {
		var v MappingVersion
		if err := rows.Scan(&v.Version, &v.Source, &v.SHA256, &v.CreatedAt, &v.CreatedBy); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// MappingSource is the source of one version: what a process reads once to
// compile a mapping it has not seen.
func (d *DB) MappingSource(ctx context.Context, orgID uuid.UUID, kind MappingOwner, owner uuid.UUID, version int) (string, error) {
	var src *string
	err := d.pool.QueryRow(ctx, `SELECT source FROM mapping_versions WHERE org_id = $1 AND owner_kind = $2 AND owner_id = $3 AND version = $4`,
		orgID, kind, owner, version).Scan(&src)
	if err != nil {
		return "", notFound(err, "mapping")
	}
	if src == nil {
		return "", domain.Errorf(domain.ENOTFOUND, "the mapping version has no source")
	}
	return *src, nil
}

// currentMappingRef is the lateral join that reads an owner's current
// mapping (version and digest; no version, or one without source, is no
// mapping) beside the owner's row (its organisation and id columns), aliased m.
func currentMappingRef(kind MappingOwner, orgID, ownerID string) string {
	return ` LEFT JOIN LATERAL (SELECT mv.version, mv.sha256 FROM mapping_versions mv
		WHERE mv.org_id = ` + orgID + ` AND mv.owner_kind = '` + string(kind) + `' AND mv.owner_id = ` + ownerID + `
		ORDER BY mv.version DESC LIMIT 1) m ON true`
}

// mappingRef makes the ref of a current mapping read by currentMappingRef.
func mappingRef(version *int, sum *string) *MappingRef {
	if version == nil || sum == nil {
		return nil
	}
	return &MappingRef{Version: *version, SHA256: *sum}
}
