package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// ConsoleSessionInfo is a live console session as listed: never its token.
type ConsoleSessionInfo struct {
	ID         uuid.UUID
	UserID     uuid.UUID
	Email      string
	Via        string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// ListConsoleSessions lists the organisation's live sessions, newest
// first: the user's only, or everyone's when userID is uuid.Nil.
func (d *DB) ListConsoleSessions(ctx context.Context, orgID, userID uuid.UUID) ([]ConsoleSessionInfo, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT s.id, s.user_id, u.email, s.via, s.created_at, s.last_seen_at, s.expires_at
		FROM console_sessions s JOIN users u ON u.org_id = s.org_id AND u.id = s.user_id
		WHERE s.org_id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR s.user_id = $2)
			AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $3) AND u.disabled_at IS NULL
		ORDER BY s.created_at DESC, s.id LIMIT 500`, orgID, userID, ConsoleSessionIdle.Seconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ConsoleSessionInfo, error) {
		var s ConsoleSessionInfo
		err := r.Scan(&s.ID, &s.UserID, &s.Email, &s.Via, &s.CreatedAt, &s.LastSeenAt, &s.ExpiresAt)
		return s, err
	})
}

// EndConsoleSessionByID ends a session of the organisation: the user's
// own, or anyone's when userID is uuid.Nil (an owner). ENOTFOUND when
// there is no such session for them.
func (d *DB) EndConsoleSessionByID(ctx context.Context, orgID, userID, sessionID uuid.UUID) (string, error) {
	var email string
	err := d.pool.QueryRow(ctx, `
		DELETE FROM console_sessions s USING users u
		WHERE s.id = $3 AND s.org_id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR s.user_id = $2)
			AND u.org_id = s.org_id AND u.id = s.user_id
		RETURNING u.email`, orgID, userID, sessionID).Scan(&email)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", domain.Errorf(domain.ENOTFOUND, "there is no such session")
	}
	return email, err
}

// SetUserDisabled disables a user of the organisation, ending all their
// sessions and unused sign-in links at once, or enables them again. It
// answers how many sessions ended; ENOTFOUND for an unknown email.
func (d *DB) SetUserDisabled(ctx context.Context, orgID uuid.UUID, email string, disabled bool) (int64, error) {
	var ended int64
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var userID uuid.UUID
		err := tx.QueryRow(ctx, `UPDATE users SET disabled_at = CASE WHEN $3 THEN coalesce(disabled_at, now()) END
			WHERE org_id = $1 AND email = lower(trim($2)) RETURNING id`, orgID, email, disabled).Scan(&userID)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.Errorf(domain.ENOTFOUND, "%s is not a user of organisation %s", email, orgID)
		}
		if err != nil || !disabled {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE org_id = $1 AND user_id = $2`, orgID, userID)
		if err != nil {
			return err
		}
		ended = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM console_links WHERE org_id = $1 AND user_id = $2 AND used_at IS NULL`, orgID, userID)
		return err
	})
	return ended, err
}
