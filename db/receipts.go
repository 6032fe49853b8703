package db

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/tracing/w3c"
)

// Receipt is a stored inbound post.
type Receipt struct {
	ID         uuid.UUID        `json:"id"`
	OrgID      uuid.UUID        `json:"org_id"`
	EndpointID uuid.UUID        `json:"endpoint_id"`
	Action     domain.Action    `json:"action"`
	ReceivedAt domain.Timestamp `json:"received_at"`
	StatusCode *int             `json:"status_code"`
	Outcome    domain.Outcome   `json:"outcome"`
	WaitingFor *string          `json:"waiting_for,omitempty"`
	// WaitingKeys, for a parked receipt, name the records it waits for
	// ("order:SO-2026-0250"); nil for any other.
	WaitingKeys []string `json:"waiting_keys,omitempty"`
	// Refs are the business references the body names
	// (docs/design.md#references).
	Refs []string `json:"refs"`
	// TraceID is the trace the post was received in (nil with tracing off).
	TraceID     *string           `json:"trace_id"`
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
	// Refusal is set for a post refused before any workflow runs: its
	// receipt names no workflow and is stored failed, with the answer.
	Refusal *Refusal
	// Refs are the references Body names when the caller read them
	// already (domain.ExtractRefs); nil: the receipt's store reads them.
	Refs []string
}

// Refusal is what a post refused before any workflow runs is answered:
// the status, and the message its {"error"} body carries.
type Refusal struct {
	Status  int
	Message string
}

// StoreReceipt records an inbound post and returns its id.
func (d *DB) StoreReceipt(ctx context.Context, r NewReceipt) (uuid.UUID, error) {
	if r.Refusal == nil {
		return insertReceipt(ctx, d.pool, r)
	}
	var id uuid.UUID
	err := d.inTx(ctx, func(tx pgx.Tx) (err error) {
		id, err = insertReceipt(ctx, tx, r)
		return err
	})
	return id, err
}

// insertRefKeys, after a CTE r that inserted one receipt, indexes the
// search keys of its references (the statement ends with their array).
const insertRefKeys = `INSERT INTO inbound_receipt_refs (org_id, ref, receipt_id) SELECT r.org_id, k, r.id FROM r, unnest(`

// insertReceipt stores a receipt: pending, naming the workflow that carries
// the post out, or for a refused post, failed with its answer, in one
// statement that also emits inbound.receipt.failed. It keeps the id of the
// trace ctx is in (none with tracing off).
func insertReceipt(ctx context.Context, q querier, r NewReceipt) (uuid.UUID, error) {
	id := NewID()
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	// The references are indexed in the same statement as the receipt.
	refs := r.Refs
	if refs == nil {
		refs = domain.ExtractRefs(r.Body)
	}
	if refs == nil {
		refs = []string{} // NULL would mean "not read yet"
	}
	keys := domain.RefKeys(refs)
	if r.Refusal == nil {
		w := domain.InboundWorkflowID(id)
		_, err := q.Exec(ctx, `
			WITH r AS (
				INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, headers, body, size_bytes, body_complete, replay_of,
				                              workflow_id, refs, trace_id)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14) RETURNING org_id, id)
			`+insertRefKeys+`$13::text[]) k`,
			id, r.OrgID, r.EndpointID, r.Action, r.ReceivedAt, r.Headers, r.Body, r.Size, r.BodyComplete, r.ReplayOf, w, refs, keys, w3c.TraceID(ctx))
		return id, err
	}
	msg := r.Refusal.Message
	_, err := q.Exec(ctx, `
		WITH r AS (
			INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, headers, body, size_bytes, body_complete, replay_of,
			                              outcome, error, status_code, response, completed_at, duration_ms, refs, trace_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'failed', $11, $12, $13, clock_timestamp(),
			        (extract(epoch FROM clock_timestamp() - $5::timestamptz) * 1000)::int, $14, $16) RETURNING org_id, id)
		`+insertRefKeys+`$15::text[]) k`,
		id, r.OrgID, r.EndpointID, r.Action, r.ReceivedAt, r.Headers, r.Body, r.Size, r.BodyComplete, r.ReplayOf,
		msg, r.Refusal.Status, string(domain.ErrorJSON(msg)), refs, keys, w3c.TraceID(ctx))
	if err != nil {
		return id, err
	}
	if _, err := endpointOutcome(ctx, q, r.OrgID, r.EndpointID, domain.OutcomeFailed, nil); err != nil {
		return id, err
	}
	return id, emitFor(ctx, q, r.OrgID, &id, domain.InboundReceiptFailed.New(domain.InboundReceiptFailedData{
		ReceiptID: id, EndpointID: r.EndpointID, Action: r.Action, Outcome: domain.OutcomeFailed, Error: &msg}))
}

// PostKeyKind says what names a post for sender retries.
type PostKeyKind string

// The kinds of post keys (docs/design.md#sender-retries).
const (
	// PostKeyIdempotency is the sender's Idempotency-Key header.
	PostKeyIdempotency PostKeyKind = "idempotency_key"
	// PostKeySignature is the v1 value that verified a signed post.
	PostKeySignature PostKeyKind = "signature"
)

// PostKey names a post so that the sender's retries of it are recognised.
type PostKey struct {
	Kind  PostKeyKind
	Value string
}

// PostKeyWindow is how long a post key names its first post.
const PostKeyWindow = 24 * time.Hour

// FirstPost is the earlier post a repeat is the same as.
type FirstPost struct {
	ReceiptID uuid.UUID
	// Kind is the key the repeat was recognised by.
	Kind PostKeyKind
	// OtherBody is set when the key came first with another body.
	OtherBody bool
	// Status and Response are the first post's answer; Status is nil while
	// it has none yet.
	Status   *int
	Response []byte
}

// errRepeat rolls back the receipt of a post recognised as a repeat.
var errRepeat = errors.New("the post repeats an earlier one")

// StorePost records an inbound post and claims its keys in one transaction.
// When one of its keys named a post on the endpoint within PostKeyWindow,
// nothing is stored and that first post is returned instead; a first post
// that was answered 5xx did not go through, so its keys are free again.
// Of two posts with the same key at once, one is stored and the other waits
// for it and gets it as its first post.
func (d *DB) StorePost(ctx context.Context, r NewReceipt, keys []PostKey) (uuid.UUID, *FirstPost, error) {
	if len(keys) == 0 {
		id, err := d.StoreReceipt(ctx, r)
		return id, nil, err
	}
	sum := sha256.Sum256(r.Body)
	kinds, values := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		kinds[i], values[i] = string(k.Kind), k.Value
	}
	var id uuid.UUID
	var first *FirstPost
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			DELETE FROM inbound_post_keys k
			WHERE k.org_id = $1 AND k.endpoint_id = $2
			  AND (k.created_at < now() - make_interval(secs => $3)
			       OR ((k.kind, k.key) IN (SELECT * FROM unnest($4::text[], $5::text[]))
			           AND EXISTS (SELECT 1 FROM inbound_receipts r
			                       WHERE r.org_id = k.org_id AND r.id = k.receipt_id AND r.status_code >= 500)))`,
			r.OrgID, r.EndpointID, PostKeyWindow.Seconds(), kinds, values); err != nil {
			return err
		}
		var err error
		if id, err = insertReceipt(ctx, tx, r); err != nil {
			return err
		}
		for _, k := range keys {
			// A key held by a post not yet committed waits for it; the
			// statement after this one then sees that post.
			tag, err := tx.Exec(ctx, `
				INSERT INTO inbound_post_keys (org_id, endpoint_id, kind, key, body_sha256, receipt_id)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
				r.OrgID, r.EndpointID, k.Kind, k.Value, sum[:], id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				continue
			}
			first = &FirstPost{Kind: k.Kind}
			err = tx.QueryRow(ctx, `
				SELECT k.receipt_id, k.body_sha256 <> $5, r.status_code, r.response
				FROM inbound_post_keys k JOIN inbound_receipts r ON r.org_id = k.org_id AND r.id = k.receipt_id
				WHERE k.org_id = $1 AND k.endpoint_id = $2 AND k.kind = $3 AND k.key = $4`,
				r.OrgID, r.EndpointID, k.Kind, k.Value, sum[:]).Scan(&first.ReceiptID, &first.OtherBody, &first.Status, &first.Response)
			if err != nil {
				return err
			}
			return errRepeat
		}
		return nil
	})
	if errors.Is(err, errRepeat) {
		return uuid.Nil, first, nil
	}
	return id, nil, err
}

// ReceiptUpdate says where a receipt now stands, what its sender was
// answered, or both.
type ReceiptUpdate struct {
	// Outcome is where the post now stands; empty leaves it as it is (an
	// update that carries only the answer).
	Outcome domain.Outcome
	// WaitingFor names the record a parked post waits for; Error says why a
	// post did not go through. Both are set with the outcome.
	WaitingFor *string
	Error      *string
	// WaitingKeys are a parked post's wait keys (domain.WaitKey); they are
	// kept (inbound_receipt_waits) only while the post is parked.
	WaitingKeys []string
	// RunID is the workflow run that moved the receipt, when one did.
	RunID string
	// Status and Response are the HTTP answer the sender got; Status 0 when
	// this update carries no answer.
	Status   int
	Response []byte
}

// UpdateReceipt is the one way a receipt moves: it records the outcome (a
// final one stamps completed_at and the duration; parked clears them) and
// the answer, and a post that newly ends failed, error or unmatched
// (domain.Outcome.Failed) emits inbound.receipt.failed in the same
// transaction.
func (d *DB) UpdateReceipt(ctx context.Context, orgID, id uuid.UUID, u ReceiptUpdate) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		var previous domain.Outcome
		var action domain.Action
		var endpoint uuid.UUID
		var failing bool
		var status *int
		if u.Status != 0 {
			status = &u.Status
		}
		err := tx.QueryRow(ctx, `
			UPDATE inbound_receipts r
			SET status_code = coalesce($7, r.status_code),
			    response = CASE WHEN $7::int IS NULL THEN r.response ELSE $8 END,
			    run_id = coalesce(nullif($6, ''), r.run_id),
			    outcome = CASE WHEN $3 = '' THEN r.outcome ELSE $3 END,
			    waiting_for = CASE WHEN $3 = '' THEN r.waiting_for ELSE $4 END,
			    error = CASE WHEN $3 = '' THEN r.error ELSE $5 END,
			    completed_at = CASE WHEN $3 = '' THEN r.completed_at
			                        WHEN $3 IN ('parked', 'pending') THEN NULL ELSE clock_timestamp() END,
			    duration_ms = CASE WHEN $3 = '' THEN r.duration_ms
			                       WHEN $3 IN ('parked', 'pending') THEN NULL
			                       ELSE (extract(epoch FROM clock_timestamp() - r.received_at) * 1000)::int END
			FROM inbound_receipts old
			WHERE r.org_id = $1 AND r.id = $2 AND old.org_id = r.org_id AND old.id = r.id
			RETURNING old.outcome, r.action, r.endpoint_id,
			          (SELECT e.failing_since IS NOT NULL FROM inbound_endpoints e WHERE e.org_id = r.org_id AND e.id = r.endpoint_id)`,
			orgID, id, string(u.Outcome), u.WaitingFor, u.Error, u.RunID, status, jsonOrNil(u.Response)).Scan(&previous, &action, &endpoint, &failing)
		if err != nil {
			return notFound(err, "receipt")
		}
		if err := setWaits(ctx, tx, orgID, id, u); err != nil {
			return err
		}
		if previous != u.Outcome {
			if _, err := endpointOutcome(ctx, tx, orgID, endpoint, u.Outcome, &failing); err != nil {
				return err
			}
		}
		if !u.Outcome.Failed() || previous == u.Outcome {
			return nil
		}
		return emitFor(ctx, tx, orgID, &id, domain.InboundReceiptFailed.New(domain.InboundReceiptFailedData{
			ReceiptID: id, EndpointID: endpoint, Action: action, Outcome: u.Outcome, Error: u.Error}))
	})
}

// endpointOutcome judges an endpoint's last domain.EndpointWindow after one
// of its posts came to outcome (failing: whether the endpoint reads failing,
// when the caller read it already) (docs/webhooks.md#operational-events): at
// least domain.EndpointWindowPosts posts, more than half failed or error,
// make it failing and emit inbound.endpoint.failing; a later outcome after
// which that no longer holds emits inbound.endpoint.recovered. Only a
// failure can start a spell and only another outcome end one, so a healthy
// endpoint's posts cost no count. It reports whether the endpoint changed.
func endpointOutcome(ctx context.Context, q querier, orgID, endpointID uuid.UUID, outcome domain.Outcome, failing *bool) (changed bool, err error) {
	if outcome == "" || outcome == domain.OutcomePending {
		return false, nil
	}
	bad := outcome == domain.OutcomeFailed || outcome == domain.OutcomeError
	if failing == nil { // not read with the receipt
		failing = new(bool)
		if err := q.QueryRow(ctx, `SELECT failing_since IS NOT NULL FROM inbound_endpoints WHERE org_id = $1 AND id = $2`,
			orgID, endpointID).Scan(failing); err != nil {
			return false, notFound(err, "endpoint")
		}
	}
	if bad == *failing {
		return false, nil
	}
	var d domain.EndpointHealthData
	// The update's condition is read again on the row it locks: of two
	// posts judging at once, one changes it and emits.
	err = q.QueryRow(ctx, `
		WITH w AS (
			SELECT count(*)::int AS posts, (count(*) FILTER (WHERE outcome IN ('failed', 'error')))::int AS failed
			FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2 AND received_at > now() - make_interval(secs => $3))
		UPDATE inbound_endpoints e SET failing_since = CASE WHEN $4 THEN now() END
		FROM w WHERE e.org_id = $1 AND e.id = $2 AND (e.failing_since IS NULL) = $4
		  AND (w.posts >= $5 AND w.failed * 2 > w.posts) = $4
		RETURNING e.id, e.name, e.action, w.posts, w.failed`,
		orgID, endpointID, domain.EndpointWindow.Seconds(), bad, domain.EndpointWindowPosts).Scan(
		&d.EndpointID, &d.Name, &d.Action, &d.WindowPosts, &d.FailedPosts)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	case bad:
		return true, emit(ctx, q, orgID, domain.EndpointFailing.New(d))
	default:
		return true, emit(ctx, q, orgID, domain.EndpointRecovered.New(d))
	}
}

// RejudgeFailingEndpoints judges again every failing endpoint's last
// domain.EndpointWindow, as an outcome that did not fail would: one that
// stopped receiving posts while failing recovers once its failures leave
// the window (inbound.endpoint.recovered), without waiting for its next
// post. It returns how many recovered.
func (d *DB) RejudgeFailingEndpoints(ctx context.Context) (int, error) {
	rows, err := d.pool.Query(ctx, `SELECT org_id, id FROM inbound_endpoints WHERE failing_since IS NOT NULL`)
	if err != nil {
		return 0, err
	}
	type ep struct{ org, id uuid.UUID }
	eps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ep, error) {
		var e ep
		err := r.Scan(&e.org, &e.id)
		return e, err
	})
	if err != nil {
		return 0, err
	}
	recovered := 0
	for _, e := range eps {
		var changed bool
		err := d.inTx(ctx, func(tx pgx.Tx) (err error) {
			failing := true
			changed, err = endpointOutcome(ctx, tx, e.org, e.id, domain.OutcomeApplied, &failing)
			return err
		})
		if err != nil {
			return recovered, err
		}
		if changed {
			recovered++
		}
	}
	return recovered, nil
}

// setWaits keeps a receipt's wait keys (inbound_receipt_waits) while it is
// parked: an update that moves it sets them anew ('*' when it names none,
// which any load of the organisation wakes), or clears them.
func setWaits(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, u ReceiptUpdate) error {
	if u.Outcome == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM inbound_receipt_waits WHERE org_id = $1 AND receipt_id = $2`, orgID, id); err != nil {
		return err
	}
	if u.Outcome != domain.OutcomeParked {
		return nil
	}
	keys := u.WaitingKeys
	if len(keys) == 0 {
		keys = []string{anyRecord}
	}
	_, err := tx.Exec(ctx, `INSERT INTO inbound_receipt_waits (org_id, receipt_id, key)
		SELECT $1, $2, k FROM unnest($3::text[]) k ON CONFLICT DO NOTHING`, orgID, id, keys)
	return err
}

func jsonOrNil(b []byte) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return string(b)
}

// receiptColumns are a receipt's columns in a query that names the table
// r: with a parked receipt's wait keys, which name the records it waits
// for ("order:SO-2026-0250"; "*", a post parked before posts named them,
// is none).
const receiptColumns = `r.id, r.org_id, r.endpoint_id, r.action, r.received_at, r.status_code, r.outcome, r.waiting_for, r.replay_of,
	r.workflow_id, r.error, r.size_bytes, r.completed_at, r.duration_ms, coalesce(r.refs, '{}'), r.trace_id,
	CASE WHEN r.outcome = 'parked' THEN coalesce((SELECT array_agg(w.key ORDER BY w.key) FROM inbound_receipt_waits w
		WHERE w.org_id = r.org_id AND w.receipt_id = r.id AND w.key <> '*'), '{}') END`

func scanReceipt(row pgx.Row, extra ...any) (Receipt, error) {
	var r Receipt
	dest := append([]any{&r.ID, &r.OrgID, &r.EndpointID, &r.Action, &r.ReceivedAt, &r.StatusCode, &r.Outcome, &r.WaitingFor,
		&r.ReplayOf, &r.WorkflowID, &r.Error, &r.SizeBytes, &r.CompletedAt, &r.DurationMS, &r.Refs, &r.TraceID, &r.WaitingKeys}, extra...)
	err := row.Scan(dest...)
	return r, err
}

// GetReceipt returns one receipt of the organisation with its answer, body
// and headers.
func (d *DB) GetReceipt(ctx context.Context, orgID, id uuid.UUID) (Receipt, error) {
	var response []byte
	var headers map[string]string
	var body []byte
	var complete bool
	r, err := scanReceipt(d.pool.QueryRow(ctx, `SELECT `+receiptColumns+`, r.response, r.headers, r.body, r.body_complete
		FROM inbound_receipts r WHERE r.org_id = $1 AND r.id = $2`, orgID, id), &response, &headers, &body, &complete)
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
	OrgID      uuid.UUID
	EndpointID uuid.UUID
	// Outcomes, when any, are the outcomes to list.
	Outcomes []domain.Outcome
	Limit    int
}

// ListReceipts lists an endpoint's receipts, newest first (ENOTFOUND when
// the organisation has no such endpoint).
func (d *DB) ListReceipts(ctx context.Context, f ReceiptFilter) ([]Receipt, error) {
	var exists bool
	if err := d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM inbound_endpoints WHERE org_id = $1 AND id = $2)`,
		f.OrgID, f.EndpointID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, domain.Errorf(domain.ENOTFOUND, "endpoint not found")
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	c := newConds()
	c.add("r.org_id = ?", f.OrgID)
	c.add("r.endpoint_id = ?", f.EndpointID)
	c.addIf(len(f.Outcomes) > 0, "r.outcome = ANY(?)", f.Outcomes)
	rows, err := d.pool.Query(ctx, `SELECT `+receiptColumns+` FROM inbound_receipts r WHERE `+c.where()+
		` ORDER BY r.received_at DESC, r.id DESC LIMIT `+c.param(f.Limit), c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) { return scanReceipt(r) })
}

// replayInFlightSQL finds a replay of a source receipt that is still
// running or parked ($1 org, $2 source).
const replayInFlightSQL = `SELECT id FROM inbound_receipts
	WHERE org_id = $1 AND replay_of = $2 AND outcome IN ('pending', 'parked') LIMIT 1`

// ReplayInFlight returns a replay of the source receipt that is still
// pending or parked, or uuid.Nil when there is none.
func (d *DB) ReplayInFlight(ctx context.Context, orgID, sourceID uuid.UUID) (uuid.UUID, error) {
	return replayInFlight(ctx, d.pool, orgID, sourceID)
}

func replayInFlight(ctx context.Context, q querier, orgID, sourceID uuid.UUID) (uuid.UUID, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, replayInFlightSQL, orgID, sourceID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil
	}
	return id, err
}

// StoreReplay records the receipt of a replay of r.ReplayOf, unless another
// replay of it is still pending or parked: then it stores nothing and
// returns that replay's id as inFlight. Replays of one source are
// serialised on its row, so two at once cannot both be stored.
func (d *DB) StoreReplay(ctx context.Context, r NewReceipt) (id, inFlight uuid.UUID, err error) {
	return d.storeReplay(ctx, r, nil)
}

// errClaimed rolls back a replay whose batch item has a replay already.
var errClaimed = errors.New("the batch item has a replay already")

// storeReplay is StoreReplay, with then run in its transaction after the
// receipt is inserted (its error rolls everything back).
func (d *DB) storeReplay(ctx context.Context, r NewReceipt, then func(pgx.Tx, uuid.UUID) error) (id, inFlight uuid.UUID, err error) {
	if r.ReplayOf == nil {
		return uuid.Nil, uuid.Nil, errors.New("a replay names its source receipt")
	}
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		var locked uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT id FROM inbound_receipts WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			r.OrgID, *r.ReplayOf).Scan(&locked); err != nil {
			return notFound(err, "receipt")
		}
		var err error
		if inFlight, err = replayInFlight(ctx, tx, r.OrgID, *r.ReplayOf); err != nil || inFlight != uuid.Nil {
			return err
		}
		if id, err = insertReceipt(ctx, tx, r); err != nil || then == nil {
			return err
		}
		return then(tx, id)
	})
	return id, inFlight, err
}

// UnstartedReceipts lists, oldest first and across organisations (the
// worker's sweep), up to limit receipts received more than olderThan ago
// (and within the park period) that are still pending with no run
// recorded, after the receipt after (uuid.Nil for the first page):
// either their workflow runs and has not recorded its outcome yet, or it
// never started because the process that stored the receipt died first.
// Starting them again by workflow ID tells the two apart.
func (d *DB) UnstartedReceipts(ctx context.Context, olderThan time.Duration, after uuid.UUID, limit int) ([]domain.InboundInput, error) {
	rows, err := d.pool.Query(ctx, `
		SELECT org_id, endpoint_id, id, coalesce(replay_of, id), action, coalesce(refs[1], '') FROM inbound_receipts
		WHERE outcome = 'pending' AND run_id IS NULL
		  AND received_at < now() - make_interval(secs => $1) AND received_at > now() - make_interval(days => 8)
		  AND ($2::uuid IS NULL OR (received_at, id) > (SELECT received_at, id FROM inbound_receipts WHERE id = $2))
		ORDER BY received_at, id LIMIT $3`, olderThan.Seconds(), nullUUID(after), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.InboundInput, error) {
		var in domain.InboundInput
		err := r.Scan(&in.OrgID, &in.EndpointID, &in.ReceiptID, &in.Source, &in.Action, &in.Ref)
		return in, err
	})
}

func nullUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
