package db

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// ConsoleLinkTTL is how long a console sign-in link stays valid,
// ConsoleSessionTTL how long a session lasts at most, and ConsoleSessionIdle
// how long it lasts unused. A session's last use is written at most once
// every ConsoleSeenEvery, not at every request.
const (
	ConsoleLinkTTL     = 10 * time.Minute
	ConsoleSessionTTL  = 12 * time.Hour
	ConsoleSessionIdle = time.Hour
	ConsoleSeenEvery   = time.Minute
)

// ConsoleUser is who a console session belongs to.
type ConsoleUser struct {
	OrgID     uuid.UUID
	OrgName   string
	Currency  string
	UserID    uuid.UUID
	Email     string
	Role      domain.UserRole
	ExpiresAt time.Time
	// SessionID names the session (its token is never shown).
	SessionID uuid.UUID
}

// CreateConsoleLink makes a one-time console sign-in link for a user of
// the organisation and returns its token (stored only as a hash). An email
// that is not a user of the organisation is ENOTFOUND.
func (d *DB) CreateConsoleLink(ctx context.Context, orgID uuid.UUID, email string) (string, error) {
	token := secrets.NewConsoleToken()
	tag, err := d.pool.Exec(ctx, `
		INSERT INTO console_links (token_hash, org_id, user_id, expires_at)
		SELECT $1, org_id, id, now() + make_interval(secs => $4) FROM users
		WHERE org_id = $2 AND email = lower($3) AND disabled_at IS NULL`,
		secrets.Hash(token), orgID, strings.TrimSpace(email), ConsoleLinkTTL.Seconds())
	if err != nil {
		return "", err
	}
	if tag.RowsAffected() == 0 {
		return "", domain.Errorf(domain.ENOTFOUND, "%s is not a user of organisation %s (or is disabled)", strings.TrimSpace(email), orgID)
	}
	return token, nil
}

// StartConsoleSession spends a sign-in link (once, within its ten minutes)
// and returns the token of the session it becomes. A link that is unknown,
// spent or expired is EUNAUTHORIZED, all alike.
func (d *DB) StartConsoleSession(ctx context.Context, linkToken string) (string, ConsoleUser, error) {
	session := secrets.NewConsoleToken()
	var u ConsoleUser
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var orgID, userID uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE console_links SET used_at = now()
			WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
			RETURNING org_id, user_id`, secrets.Hash(linkToken)).Scan(&orgID, &userID)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.Errorf(domain.EUNAUTHORIZED, "this sign-in link is not valid: it was used already or is over ten minutes old")
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO console_sessions (token_hash, org_id, user_id, expires_at)
			VALUES ($1, $2, $3, now() + make_interval(secs => $4))`, secrets.Hash(session), orgID, userID, ConsoleSessionTTL.Seconds()); err != nil {
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

// ConsoleSession returns the user of a live session (EUNAUTHORIZED for an
// unknown, expired, idle for an hour or disabled user's one) and notes its
// use, writing at most once a minute. The role is read afresh: a user whose
// role changed acts with the new one, and a removed user's sessions end.
func (d *DB) ConsoleSession(ctx context.Context, sessionToken string) (ConsoleUser, error) {
	hash := secrets.Hash(sessionToken)
	u, err := consoleUser(ctx, d.pool, hash)
	if err != nil {
		return u, err
	}
	_, err = d.pool.Exec(ctx, `UPDATE console_sessions SET last_seen_at = now()
		WHERE token_hash = $1 AND last_seen_at < now() - make_interval(secs => $2)`, hash, ConsoleSeenEvery.Seconds())
	return u, err
}

func consoleUser(ctx context.Context, q querier, hash []byte) (ConsoleUser, error) {
	var u ConsoleUser
	err := q.QueryRow(ctx, `
		SELECT s.org_id, o.name, o.currency, s.user_id, u.email, u.role, s.expires_at, s.id
		FROM console_sessions s
		JOIN users u ON u.org_id = s.org_id AND u.id = s.user_id
		JOIN organisations o ON o.id = s.org_id
		WHERE s.token_hash = $1 AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $2)
			AND u.disabled_at IS NULL`, hash, ConsoleSessionIdle.Seconds()).
		Scan(&u.OrgID, &u.OrgName, &u.Currency, &u.UserID, &u.Email, &u.Role, &u.ExpiresAt, &u.SessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, domain.Errorf(domain.EUNAUTHORIZED, "not signed in")
	}
	return u, err
}

// EndConsoleSession signs a session out.
func (d *DB) EndConsoleSession(ctx context.Context, sessionToken string) error {
	if _, err := d.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1`, secrets.Hash(sessionToken)); err != nil {
		return err
	}
	return d.sweepConsole(ctx)
}

// sweepConsole forgets the links and sessions that ended over a day ago.
func (d *DB) sweepConsole(ctx context.Context) error {
	if _, err := d.pool.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at < now() - interval '1 day'`); err != nil {
		return err
	}
	_, err := d.pool.Exec(ctx, `DELETE FROM console_links WHERE expires_at < now() - interval '1 day'`)
	return err
}
