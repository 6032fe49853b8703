package db

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Endpoint is an inbound endpoint as listed: never its token or secret.
type Endpoint struct {
	ID               uuid.UUID            `json:"id"`
	OrgID            uuid.UUID            `json:"org_id"`
	Name             string               `json:"name"`
	Action           domain.Action        `json:"action"`
	RequireSignature bool                 `json:"require_signature"`
	State            domain.EndpointState `json:"state"`
	RateLimitedCount int64                `json:"rate_limited_count"`
	CreatedAt        domain.Timestamp     `json:"created_at"`
	secretSealed     []byte
}

// NewEndpoint is what creating an endpoint takes.
type NewEndpoint struct {
	OrgID            uuid.UUID
	AsEmail          string
	Name             string
	Action           domain.Action
	RequireSignature bool
}

// CreatedEndpoint is an endpoint just made, with its token (the secret part
// of its URL) and its signing secret, both shown this once.
type CreatedEndpoint struct {
	Endpoint
	Token  string
	Secret *string
}

const endpointColumns = `id, org_id, name, action, require_signature, state, rate_limited_count, created_at, secret_sealed`

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var e Endpoint
	err := row.Scan(&e.ID, &e.OrgID, &e.Name, &e.Action, &e.RequireSignature, &e.State, &e.RateLimitedCount, &e.CreatedAt, &e.secretSealed)
	return e, err
}

// CreateEndpoint makes an inbound endpoint. The person named by AsEmail must
// be an owner or admin of the organisation (EFORBIDDEN otherwise). The token
// is stored as SHA-256 and the secret sealed with sealer.
func (d *DB) CreateEndpoint(ctx context.Context, sealer *secrets.Sealer, in NewEndpoint) (CreatedEndpoint, error) {
	var out CreatedEndpoint
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 200 {
		return out, domain.Errorf(domain.EINVALID, "endpoint name must be 1 to 200 characters")
	}
	if !in.Action.Valid() {
		return out, domain.Errorf(domain.EINVALID, "action %q is not one of %s", in.Action, joinActions())
	}
	var role domain.UserRole
	err := d.pool.QueryRow(ctx, `SELECT role FROM users WHERE org_id = $1 AND email = lower($2)`, in.OrgID, strings.TrimSpace(in.AsEmail)).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, domain.Errorf(domain.EFORBIDDEN, "%s is not a user of the organisation", in.AsEmail)
	}
	if err != nil {
		return out, err
	}
	if !role.CanManageEndpoints() {
		return out, domain.Errorf(domain.EFORBIDDEN, "%s is a %s; creating an inbound endpoint needs the admin or owner role", in.AsEmail, role)
	}
	out.Token = secrets.NewInboundToken()
	var sealed []byte
	if in.RequireSignature {
		s := secrets.NewSigningSecret()
		out.Secret = &s
		sealed = sealer.Seal(s)
	}
	out.Endpoint, err = scanEndpoint(d.pool.QueryRow(ctx, `
		INSERT INTO inbound_endpoints (id, org_id, name, action, token_hash, secret_sealed, require_signature, created_by)
		SELECT $1, $2, $3, $4, $5, $6, $7, id FROM users WHERE org_id = $2 AND email = lower($8)
		RETURNING `+endpointColumns, NewID(), in.OrgID, in.Name, in.Action, secrets.Hash(out.Token), sealed,
		in.RequireSignature, strings.TrimSpace(in.AsEmail)))
	return out, err
}

func joinActions() string {
	parts := make([]string, len(domain.Actions))
	for i, a := range domain.Actions {
		parts[i] = string(a)
	}
	return strings.Join(parts, ", ")
}

// SetEndpointState pauses, resumes or deletes an endpoint, by the endpoint
// state machine. Deleting destroys the token: later posts answer 404.
func (d *DB) SetEndpointState(ctx context.Context, id uuid.UUID, to domain.EndpointState) (Endpoint, error) {
	var e Endpoint
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var from domain.EndpointState
		if err := tx.QueryRow(ctx, `SELECT state FROM inbound_endpoints WHERE id = $1 FOR UPDATE`, id).Scan(&from); err != nil {
			return notFound(err, "endpoint")
		}
		if _, err := domain.EndpointMachine.Move(from, to); err != nil {
			return err
		}
		var err error
		e, err = scanEndpoint(tx.QueryRow(ctx, `
			UPDATE inbound_endpoints
			SET state = $2,
			    token_hash = CASE WHEN $2 = 'deleted' THEN NULL ELSE token_hash END,
			    secret_sealed = CASE WHEN $2 = 'deleted' THEN NULL ELSE secret_sealed END,
			    require_signature = CASE WHEN $2 = 'deleted' THEN false ELSE require_signature END,
			    deleted_at = CASE WHEN $2 = 'deleted' THEN now() END
			WHERE id = $1 RETURNING `+endpointColumns, id, to))
		return err
	})
	return e, err
}

// EndpointByToken finds the live (not deleted) endpoint of a token hash,
// without taking from its rate limit.
func (d *DB) EndpointByToken(ctx context.Context, tokenHash []byte) (Endpoint, error) {
	e, err := scanEndpoint(d.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM inbound_endpoints
		WHERE token_hash = $1 AND state <> 'deleted'`, tokenHash))
	return e, notFound(err, "endpoint")
}

// ListEndpoints lists the organisation's endpoints, newest first (deleted
// ones too, for their receipts).
func (d *DB) ListEndpoints(ctx context.Context, orgID uuid.UUID) ([]Endpoint, error) {
	if _, err := d.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT `+endpointColumns+` FROM inbound_endpoints WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Endpoint, error) { return scanEndpoint(r) })
}

// EndpointPost is what one lookup learns about a post to an endpoint.
type EndpointPost struct {
	Endpoint Endpoint
	Rate     RateDecision
}

// Secret opens the endpoint's signing secret.
func (p EndpointPost) Secret(sealer *secrets.Sealer) (string, error) {
	if p.Endpoint.secretSealed == nil {
		return "", errors.New("endpoint has no secret")
	}
	return sealer.Open(p.Endpoint.secretSealed)
}

// The statement behind PostToEndpoint: find the live endpoint by token
// hash, take one post from its bucket, and count a refused post on it.
var endpointPostSQL = `
WITH e AS (
	SELECT ` + endpointColumns + ` FROM inbound_endpoints WHERE token_hash = $1 AND state <> 'deleted'
), rl AS (` + gcraTake("e.org_id", "e.id", "e", EndpointLimit) + `
), counted AS (
	UPDATE inbound_endpoints SET rate_limited_count = rate_limited_count + 1
	WHERE id = (SELECT id FROM e) AND NOT (SELECT allowed FROM rl)
)
SELECT e.id, e.org_id, e.name, e.action, e.require_signature, e.state, e.rate_limited_count, e.created_at, e.secret_sealed,
       rl.allowed, rl.tat, now()
FROM e, rl`

// PostToEndpoint finds the endpoint of a token (ENOTFOUND for none or a
// deleted one) and takes one post from its rate limit, in one round trip.
func (d *DB) PostToEndpoint(ctx context.Context, tokenHash []byte) (EndpointPost, error) {
	var p EndpointPost
	var allowed bool
	var tat, now time.Time
	e := &p.Endpoint
	err := d.rate.QueryRow(ctx, endpointPostSQL, tokenHash).Scan(&e.ID, &e.OrgID, &e.Name, &e.Action, &e.RequireSignature,
		&e.State, &e.RateLimitedCount, &e.CreatedAt, &e.secretSealed, &allowed, &tat, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, domain.Errorf(domain.ENOTFOUND, "Not found")
	}
	if err != nil {
		return p, err
	}
	p.Rate = decide(EndpointLimit, allowed, tat, now)
	return p, nil
}

// Receipt is a stored inbound post.
type Receipt struct {
	ID          uuid.UUID         `json:"id"`
	OrgID       uuid.UUID         `json:"org_id"`
	EndpointID  uuid.UUID         `json:"endpoint_id"`
	Action      domain.Action     `json:"action"`
	ReceivedAt  domain.Timestamp  `json:"received_at"`
	StatusCode  *int              `json:"status_code"`
	Outcome     domain.Outcome    `json:"outcome"`
	WaitingFor  *string           `json:"waiting_for,omitempty"`
	ReplayOf    *uuid.UUID        `json:"replay_of"`
	WorkflowID  *string           `json:"workflow_id"`
	Error       *string           `json:"error"`
	SizeBytes   int               `json:"size_bytes"`
	CompletedAt *domain.Timestamp `json:"completed_at"`
	DurationMS  *int              `json:"duration_ms"`
	// Detail, filled by Receipt(): the stored answer, body and headers.
	Response json.RawMessage   `json:"response,omitempty"`
	Body     json.RawMessage   `json:"body,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`

	body         []byte
	bodyComplete bool
}

// RawBody is the post's body as received.
func (r Receipt) RawBody() []byte { return r.body }

// BodyComplete reports whether the whole body was kept (a body over the
// limit keeps only its first part).
func (r Receipt) BodyComplete() bool { return r.bodyComplete }

// NewReceipt is an inbound post to store.
type NewReceipt struct {
	OrgID, EndpointID uuid.UUID
	Action            domain.Action
	ReceivedAt        time.Time
	Headers           map[string]string
	Body              []byte
	Size              int
	BodyComplete      bool
	ReplayOf          *uuid.UUID
	// Refused is set for a post refused before any workflow runs: its
	// receipt names no workflow.
	Refused bool
}

// StoreReceipt records an inbound post and returns its id.
func (d *DB) StoreReceipt(ctx context.Context, r NewReceipt) (uuid.UUID, error) {
	id := NewID()
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	// The workflow that carries the post out is inbound/<receipt id>.
	var workflowID *string
	if !r.Refused {
		w := "inbound/" + id.String()
		workflowID = &w
	}
	_, err := d.pool.Exec(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, headers, body, size_bytes, body_complete, replay_of, workflow_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		id, r.OrgID, r.EndpointID, r.Action, r.ReceivedAt, r.Headers, r.Body, r.Size, r.BodyComplete, r.ReplayOf, workflowID)
	return id, err
}

// AnswerReceipt records the HTTP answer a post got (and, for a post refused
// before any workflow, its final outcome and error, emitting
// inbound.receipt.failed in the same transaction).
func (d *DB) AnswerReceipt(ctx context.Context, orgID, id uuid.UUID, status int, response []byte, outcome domain.Outcome, errText *string) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		var action domain.Action
		var endpoint uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE inbound_receipts
			SET status_code = $3, response = $4,
			    outcome = CASE WHEN $5 = '' THEN outcome ELSE $5 END,
			    error = coalesce($6, error),
			    completed_at = CASE WHEN $5 IN ('failed', 'error') THEN clock_timestamp() ELSE completed_at END,
			    duration_ms = CASE WHEN $5 IN ('failed', 'error')
			                       THEN (extract(epoch FROM clock_timestamp() - received_at) * 1000)::int ELSE duration_ms END
			WHERE org_id = $1 AND id = $2
			RETURNING action, endpoint_id`, orgID, id, status, jsonOrNil(response), string(outcome), errText).Scan(&action, &endpoint)
		if err != nil {
			return notFound(err, "receipt")
		}
		if outcome != domain.OutcomeFailed && outcome != domain.OutcomeError {
			return nil
		}
		return emitReceiptFailed(ctx, tx, orgID, id, endpoint, action, outcome, errText)
	})
}

// emitReceiptFailed emits inbound.receipt.failed for a receipt.
func emitReceiptFailed(ctx context.Context, q querier, orgID, id, endpoint uuid.UUID, action domain.Action, outcome domain.Outcome, errText *string) error {
	return emit(ctx, q, orgID, EventInboundReceiptFailed, map[string]any{
		"receipt_id": id, "endpoint_id": endpoint, "action": action, "outcome": outcome, "error": errText,
	})
}

func jsonOrNil(b []byte) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return string(b)
}

// SetReceiptOutcome records where a post stands, as its workflow moves it:
// parked (waiting for waitingFor) or a final outcome. A post that ends
// failed, error or unmatched emits inbound.receipt.failed in the same
// transaction.
func (d *DB) SetReceiptOutcome(ctx context.Context, orgID, id uuid.UUID, outcome domain.Outcome, waitingFor, errText *string, runID string) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		var previous domain.Outcome
		var action domain.Action
		var endpoint uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE inbound_receipts r
			SET outcome = $3, waiting_for = $4, error = $5, run_id = coalesce(nullif($6, ''), r.run_id),
			    completed_at = CASE WHEN $3 = 'parked' THEN NULL ELSE clock_timestamp() END,
			    duration_ms = CASE WHEN $3 = 'parked' THEN NULL
			                       ELSE (extract(epoch FROM clock_timestamp() - r.received_at) * 1000)::int END
			FROM inbound_receipts old
			WHERE r.org_id = $1 AND r.id = $2 AND old.org_id = r.org_id AND old.id = r.id
			RETURNING old.outcome, r.action, r.endpoint_id`, orgID, id, outcome, waitingFor, errText, runID).Scan(&previous, &action, &endpoint)
		if err != nil {
			return notFound(err, "receipt")
		}
		failed := outcome == domain.OutcomeFailed || outcome == domain.OutcomeError || outcome == domain.OutcomeUnmatched
		if !failed || previous == outcome {
			return nil
		}
		return emitReceiptFailed(ctx, tx, orgID, id, endpoint, action, outcome, errText)
	})
}

const receiptColumns = `id, org_id, endpoint_id, action, received_at, status_code, outcome, waiting_for, replay_of, workflow_id,
	error, size_bytes, completed_at, duration_ms`

func scanReceipt(row pgx.Row, extra ...any) (Receipt, error) {
	var r Receipt
	dest := append([]any{&r.ID, &r.OrgID, &r.EndpointID, &r.Action, &r.ReceivedAt, &r.StatusCode, &r.Outcome, &r.WaitingFor,
		&r.ReplayOf, &r.WorkflowID, &r.Error, &r.SizeBytes, &r.CompletedAt, &r.DurationMS}, extra...)
	err := row.Scan(dest...)
	return r, err
}

// GetReceipt returns one receipt with its answer, body and headers.
func (d *DB) GetReceipt(ctx context.Context, id uuid.UUID) (Receipt, error) {
	var response []byte
	var headers map[string]string
	var body []byte
	var complete bool
	r, err := scanReceipt(d.pool.QueryRow(ctx, `SELECT `+receiptColumns+`, response, headers, body, body_complete
		FROM inbound_receipts WHERE id = $1`, id), &response, &headers, &body, &complete)
	if err != nil {
		return r, notFound(err, "receipt")
	}
	r.Response, r.Headers, r.body, r.bodyComplete = response, headers, body, complete
	if json.Valid(body) {
		r.Body = body
	}
	return r, nil
}

// ReceiptFilter narrows a receipt list.
type ReceiptFilter struct {
	EndpointID uuid.UUID
	// Outcomes, when any, are the outcomes to list.
	Outcomes []domain.Outcome
	Limit    int
}

// ListReceipts lists an endpoint's receipts, newest first.
func (d *DB) ListReceipts(ctx context.Context, f ReceiptFilter) ([]Receipt, error) {
	var orgID uuid.UUID
	if err := d.pool.QueryRow(ctx, `SELECT org_id FROM inbound_endpoints WHERE id = $1`, f.EndpointID).Scan(&orgID); err != nil {
		return nil, notFound(err, "endpoint")
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	c := newConds()
	c.add("org_id = ?", orgID)
	c.add("endpoint_id = ?", f.EndpointID)
	c.addIf(len(f.Outcomes) > 0, "outcome = ANY(?)", f.Outcomes)
	rows, err := d.pool.Query(ctx, `SELECT `+receiptColumns+` FROM inbound_receipts WHERE `+c.where()+
		` ORDER BY received_at DESC, id DESC LIMIT `+c.param(f.Limit), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) { return scanReceipt(r) })
}

// ParkedReceipts lists the receipts parked waiting for a record, of one
// organisation (or of all, for the sweep, when orgID is nil).
func (d *DB) ParkedReceipts(ctx context.Context, orgID *uuid.UUID) ([]Receipt, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+receiptColumns+` FROM inbound_receipts
		WHERE outcome = 'parked' AND ($1::uuid IS NULL OR org_id = $1) ORDER BY received_at`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) { return scanReceipt(r) })
}
