package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// AuditEntry is one management write: who made it, what it did, to which
// record, and when.
type AuditEntry struct {
	ID    uuid.UUID
	OrgID uuid.UUID
	// Actor is key:<API key id>, cli:<operator> for the command line,
	// console:<email> for the console, or sso:<email> for a sign-in through
	// an identity provider that was refused.
	Actor string
	// Action is what was done, as <resource>.<verb> (receipt.replay,
	// subscription.rotate_secret, ...).
	Action     string
	TargetType string
	TargetID   string
	Detail     domain.JSONObject
	CreatedAt  domain.Timestamp
}

// NewAuditEntry is a management write to record.
type NewAuditEntry struct {
	OrgID      uuid.UUID
	Actor      string
	Action     string
	TargetType string
	TargetID   string
	Detail     map[string]any
}

// RecordAudit adds an entry to the organisation's audit log.
func (d *DB) RecordAudit(ctx context.Context, e NewAuditEntry) error {
	if e.Detail == nil {
		e.Detail = map[string]any{}
	}
	_, err := d.pool.Exec(ctx, `
		INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, NewID(), e.OrgID, e.Actor, e.Action, e.TargetType, e.TargetID, e.Detail)
	return err
}

// ListAudit lists the organisation's audit log, newest first.
func (d *DB) ListAudit(ctx context.Context, orgID uuid.UUID, p Page) ([]AuditEntry, error) {
	if _, err := d.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	c := newConds()
	c.add("a.org_id = ?", orgID)
	return listPage(ctx, d.pool, `SELECT a.id, a.org_id, a.actor, a.action, a.target_type, a.target_id, a.detail, a.created_at
		FROM audit_log a`, "audit_log", "a", c, p, func(r pgx.Row) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.OrgID, &e.Actor, &e.Action, &e.TargetType, &e.TargetID, &e.Detail, &e.CreatedAt)
		return e, err
	})
}
