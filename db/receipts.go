package db

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/tracing/w3c"
)

// Receipt is a stored inbound post.
type Receipt struct {
	ID         uuid.UUID
	OrgID      uuid.UUID
	EndpointID uuid.UUID
	Action     domain.Action
	ReceivedAt domain.Timestamp
	StatusCode *int
	Outcome    domain.Outcome
	// Stage is the intake stage the post reached: the one that refused
	// it, or domain.StageStart for a post handed to its workflow.
	Stage      domain.IntakeStage
	WaitingFor *string
	// WaitingKeys, for a parked receipt, name the records it waits for
	// ("order:SO-2026-0250"); nil for any other.
	WaitingKeys []string
	// Refs are the business references the body names
	// (docs/design.md#references).
	Refs []string
	// TraceID is the trace the post was received in (nil with tracing off).
	TraceID     *string
	ReplayOf    *uuid.UUID
	WorkflowID  *string
	Error       *string
	SizeBytes   int
	CompletedAt *domain.Timestamp
	DurationMS  *int
	// MappingVersion is the version of the endpoint's mapping that ran on
	// the post (nil: none ran).
	MappingVersion *int
	// Resolution says what resolved a failed or parked post (nil: nothing
	// has).
	Resolution *Resolution
	// Detail, filled by Receipt(): the stored answer, body and headers, and
	// the body the mapping made (nil when none).
	Response   json.RawMessage
	Body       json.RawMessage
	Headers    map[string]string
	MappedBody json.RawMessage

	body, mappedBody []byte
	bodyComplete     bool
}

// RawBody is the post's body as received.
func (r Receipt) RawBody() []byte { return r.body }

// ActionBody is the body the post's action applies: the one its mapping
// made, or the body as received where no mapping ran.
func (r Receipt) ActionBody() []byte {
	if r.MappingVersion != nil && r.mappedBody != nil {
		return r.mappedBody
	}
	return r.body
}

// BodyComplete reports whether the whole body was kept (a body over the
// limit keeps only its first part).
func (r Receipt) BodyComplete() bool { return r.bodyComplete }

// NewReceipt is an inbound post to store.
type NewReceipt struct {
	// ID is the receipt's id when its answer must name it before it is
	// stored; zero: a new one.
	ID                uuid.UUID
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
	// MappingVersion is the version of the endpoint's mapping that ran on
	// Body (nil: none ran); MappedBody what it made, which the workflow
	// applies in place of Body (nil when it made nothing).
	MappingVersion *int
	MappedBody     []byte
}

// Refusal is what a post refused before any workflow runs is answered:
// the status, and the message its {"error"} body carries; Stage is the
// intake stage that refused it, which its receipt records.
type Refusal struct {
	Stage   domain.IntakeStage
	Status  int
	Message string
	// Outcome is the receipt's outcome: failed unless set (ignored, for a
	// post its mapping ignored); Response the answer's body when it is not
	// the {"error"} of Message.
	Outcome  domain.Outcome
	Response []byte
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
	id := r.ID
	if id == uuid.Nil {
		id = NewID()
	}
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
				                              workflow_id, refs, trace_id, stage, mapping_version, mapped_body)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15, $16, $17) RETURNING org_id, id)
			`+insertRefKeys+`$13::text[]) k`,
			id, r.OrgID, r.EndpointID, r.Action, r.ReceivedAt, r.Headers, r.Body, r.Size, r.BodyComplete, r.ReplayOf, w, refs, keys, w3c.TraceID(ctx),
			domain.StageStart, r.MappingVersion, r.MappedBody)
		return id, err
	}
	if r.Refusal.Stage == "" || r.Refusal.Stage == domain.StageStart {
		return id, fmt.Errorf("a refused post names the intake stage that refused it, not %q", r.Refusal.Stage)
	}
	outcome := cmp.Or(r.Refusal.Outcome, domain.OutcomeFailed)
	var msg *string
	response := r.Refusal.Response
	if outcome == domain.OutcomeFailed {
		msg = &r.Refusal.Message
		if response == nil {
			response = domain.ErrorJSON(r.Refusal.Message)
		}
	}
	_, err := q.Exec(ctx, `
		WITH r AS (
			INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, headers, body, size_bytes, body_complete, replay_of,
			                              outcome, error, status_code, response, completed_at, duration_ms, refs, trace_id, stage,
			                              mapping_version, mapped_body)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $18, $11, $12, $13, clock_timestamp(),
			        (extract(epoch FROM clock_timestamp() - $5::timestamptz) * 1000)::int, $14, $16, $17, $19, $20) RETURNING org_id, id)
		`+insertRefKeys+`$15::text[]) k`,
		id, r.OrgID, r.EndpointID, r.Action, r.ReceivedAt, r.Headers, r.Body, r.Size, r.BodyComplete, r.ReplayOf,
		msg, r.Refusal.Status, string(response), refs, keys, w3c.TraceID(ctx), r.Refusal.Stage, outcome, r.MappingVersion, r.MappedBody)
	if err != nil {
		return id, err
	}
	if _, err := endpointOutcome(ctx, q, r.OrgID, r.EndpointID, outcome, nil); err != nil {
		return id, err
	}
	if outcome != domain.OutcomeFailed {
		return id, nil
	}
	return id, emitFor(ctx, q, r.OrgID, &id, domain.InboundReceiptFailed.New(domain.InboundReceiptFailedData{
		ReceiptID: id, EndpointID: r.EndpointID, Action: r.Action, Outcome: domain.OutcomeFailed, Error: msg}))
}

// receiptColumns are a receipt's columns in a query that names the table
// r: with a parked receipt's wait keys, which name the records it waits
// for ("order:SO-2026-0250"; "*", a post parked before posts named them,
// is none).
const receiptColumns = `r.id, r.org_id, r.endpoint_id, r.action, r.received_at, r.status_code, r.outcome, r.waiting_for, r.replay_of,
	r.workflow_id, r.error, r.size_bytes, r.completed_at, r.duration_ms, coalesce(r.refs, '{}'), r.trace_id, r.stage, r.mapping_version,
	CASE WHEN r.outcome = 'parked' THEN coalesce((SELECT array_agg(w.key ORDER BY w.key) FROM inbound_receipt_waits w
		WHERE w.org_id = r.org_id AND w.receipt_id = r.id AND w.key <> '*'), '{}') END,
	r.resolved_by, r.resolved_receipt, r.resolved_at`

func scanReceipt(row pgx.Row, extra ...any) (Receipt, error) {
	var r Receipt
	var by *string
	var byReceipt *uuid.UUID
	var at *domain.Timestamp
	dest := append([]any{&r.ID, &r.OrgID, &r.EndpointID, &r.Action, &r.ReceivedAt, &r.StatusCode, &r.Outcome, &r.WaitingFor,
		&r.ReplayOf, &r.WorkflowID, &r.Error, &r.SizeBytes, &r.CompletedAt, &r.DurationMS, &r.Refs, &r.TraceID, &r.Stage, &r.MappingVersion, &r.WaitingKeys,
		&by, &byReceipt, &at}, extra...)
	err := row.Scan(dest...)
	if by != nil && at != nil {
		r.Resolution = &Resolution{By: *by, ReceiptID: byReceipt, At: *at}
	}
	return r, err
}

// GetReceipt returns one receipt of the organisation with its answer, body
// and headers.
func (d *DB) GetReceipt(ctx context.Context, orgID, id uuid.UUID) (Receipt, error) {
	var response []byte
	var headers map[string]string
	var body, mapped []byte
	var complete bool
	r, err := scanReceipt(d.pool.QueryRow(ctx, `SELECT `+receiptColumns+`, r.response, r.headers, r.body, r.body_complete, r.mapped_body
		FROM inbound_receipts r WHERE r.org_id = $1 AND r.id = $2`, orgID, id), &response, &headers, &body, &complete, &mapped)
	if err != nil {
		return r, notFound(err, "receipt")
	}
	r.Response, r.Headers, r.body, r.bodyComplete, r.mappedBody = response, headers, body, complete, mapped
	if json.Valid(body) {
		r.Body = body
	}
	if json.Valid(mapped) {
		r.MappedBody = mapped
	}
	return r, nil
}
