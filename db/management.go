package db

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// EndpointSummary is an endpoint as support lists it: never its token or
// secret, with the last four characters of its token and what its posts of
// the last 24 hours came to.
type EndpointSummary struct {
	Endpoint
	TokenHint *string
	// Counts are the receipts of the last 24 hours by outcome.
	Counts map[domain.Outcome]int
}

// endpointSummarySelect reads endpoints (e) as support lists them, with
// their last 24 hours of receipts counted by outcome.
const endpointSummarySelect = `SELECT e.id, e.org_id, e.name, e.action, e.require_signature, e.state, e.rate_limited_count,
		e.created_at, e.token_hint, e.failing_since, e.verification, e.verification_config,
		coalesce((SELECT jsonb_object_agg(outcome, n) FROM (
			SELECT r.outcome, count(*) AS n FROM inbound_receipts r
			WHERE r.org_id = e.org_id AND r.endpoint_id = e.id AND r.received_at > now() - interval '24 hours'
			GROUP BY r.outcome) c), '{}')
		FROM inbound_endpoints e`

func scanEndpointSummary(r pgx.Row) (EndpointSummary, error) {
	var s EndpointSummary
	err := r.Scan(&s.ID, &s.OrgID, &s.Name, &s.Action, &s.RequireSignature, &s.State, &s.RateLimitedCount,
		&s.CreatedAt, &s.TokenHint, &s.FailingSince, &s.Verification, &s.VerificationConfig, &s.Counts)
	return s, err
}

// ListEndpointSummaries lists the organisation's endpoints, newest first,
// with their last 24 hours of receipts counted by outcome.
func (d *DB) ListEndpointSummaries(ctx context.Context, orgID uuid.UUID, p Page) ([]EndpointSummary, error) {
	c := newConds()
	c.add("e.org_id = ?", orgID)
	return listPage(ctx, d.pool, endpointSummarySelect, "inbound_endpoints", "e", c, p, scanEndpointSummary)
}

// GetEndpointSummary returns one of the organisation's endpoints (deleted
// ones too) as ListEndpointSummaries lists it.
func (d *DB) GetEndpointSummary(ctx context.Context, orgID, id uuid.UUID) (EndpointSummary, error) {
	s, err := scanEndpointSummary(d.pool.QueryRow(ctx, endpointSummarySelect+` WHERE e.org_id = $1 AND e.id = $2`, orgID, id))
	return s, notFound(err, "endpoint")
}

// OrgReceiptFilter narrows the organisation's receipt list.
type OrgReceiptFilter struct {
	EndpointID     *uuid.UUID
	Outcomes       []domain.Outcome
	ReceivedAfter  *time.Time
	ReceivedBefore *time.Time
	// Ref keeps the receipt with that id, and the receipts with a
	// reference that is Ref or, when Ref has at least domain.MinRefPrefix
	// characters, starts with it; in any case (docs/design.md#references).
	Ref string
	// Resolved keeps only the receipts something resolved (true) or only
	// those nothing has (false); nil keeps both.
	Resolved *bool
	// ExceptReplayed leaves out the receipts a replay resolved.
	ExceptReplayed bool
}

func (f OrgReceiptFilter) conds(orgID uuid.UUID) *conds {
	c := f.condsBut(orgID)
	c.addIf(len(f.Outcomes) > 0, "r.outcome = ANY(?)", f.Outcomes)
	return c
}

// condsBut are the conditions of the filter but its outcomes.
func (f OrgReceiptFilter) condsBut(orgID uuid.UUID) *conds {
	c := newConds()
	org := c.param(orgID)
	c.parts = append(c.parts, "r.org_id = "+org)
	c.addIf(f.EndpointID != nil, "r.endpoint_id = ?", f.EndpointID)
	c.addIf(f.ReceivedAfter != nil, "r.received_at > ?", f.ReceivedAfter)
	c.addIf(f.ReceivedBefore != nil, "r.received_at < ?", f.ReceivedBefore)
	if f.Resolved != nil {
		c.parts = append(c.parts, map[bool]string{true: "r.resolved_at IS NOT NULL", false: "r.resolved_at IS NULL"}[*f.Resolved])
	}
	if f.ExceptReplayed {
		c.parts = append(c.parts, "r.resolved_by IS DISTINCT FROM 'replay'")
	}
	if f.Ref != "" {
		c.parts = append(c.parts, "r.id IN ("+refSearch(c, org, f.Ref)+")")
	}
	return c
}

// refSearch is a query for the ids of the receipts a search for ref finds:
// by the index of references, a whole key or a range of keys (a prefix),
// and the receipt whose id ref is.
func refSearch(c *conds, org, ref string) string {
	key := domain.RefKey(ref)
	q := "SELECT x.receipt_id FROM inbound_receipt_refs x WHERE x.org_id = " + org + " AND "
	if utf8.RuneCountInString(key) >= domain.MinRefPrefix {
		// In byte order every key that starts with key sorts from key up to
		// key followed by the greatest code point.
		q += "x.ref >= " + c.param(key) + " AND x.ref < " + c.param(key+"\U0010FFFF")
	} else {
		q += "x.ref = " + c.param(key)
	}
	if id, err := uuid.Parse(strings.TrimSpace(ref)); err == nil {
		q += " UNION ALL SELECT " + c.param(id) + "::uuid"
	}
	return q
}

// ListOrgReceipts lists the organisation's receipts, newest first (by
// received_at, then id), keyset-paged like every list. Filtered by
// outcomes, it reads each outcome's receipts in the order of the index by
// outcome and merges them, instead of sorting every receipt of them.
func (d *DB) ListOrgReceipts(ctx context.Context, orgID uuid.UUID, f OrgReceiptFilter, p Page) ([]Receipt, error) {
	c := f.condsBut(orgID)
	if p.After != nil {
		c.parts = append(c.parts, "(r.received_at, r.id) < ("+c.param(p.After.At)+", "+c.param(p.After.ID)+")")
	}
	limit := c.param(p.Limit + 1)
	order := ` ORDER BY r.received_at DESC, r.id DESC LIMIT ` + limit
	query := `SELECT ` + receiptColumns + ` FROM inbound_receipts r WHERE ` + c.where() + order
	if len(f.Outcomes) > 0 {
		outcomes := slices.Clone(f.Outcomes)
		slices.Sort(outcomes)
		outcomes = slices.Compact(outcomes)
		branches := make([]string, len(outcomes))
		for i, o := range outcomes {
			branches[i] = `(SELECT r.* FROM inbound_receipts r WHERE ` + c.where() + ` AND r.outcome = ` + c.param(o) + order + `)`
		}
		query = `SELECT ` + receiptColumns + ` FROM (` + strings.Join(branches, " UNION ALL ") + `) r` + order
	}
	rows, err := d.pool.Query(ctx, query, c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) { return scanReceipt(r) })
}

// TraceEvent is an event an inbound post's effect emitted, with the
// deliveries of it.
type TraceEvent struct {
	ID         uuid.UUID
	Type       string
	CreatedAt  domain.Timestamp
	Data       domain.JSONObject
	Deliveries []TraceDelivery
}

// TraceDelivery is a delivery of a traced event and its latest status.
// ReceiptTrace reads each as a JSON object its statement builds, whose keys
// are the json tags.
type TraceDelivery struct {
	ID             uuid.UUID `json:"id"`
	SubscriptionID uuid.UUID `json:"subscription_id"`
	// SubscriptionURL is the subscription's receiver, for the console to
	// name it by (without its path and query).
	SubscriptionURL string               `json:"subscription_url"`
	Status          domain.WebhookStatus `json:"status"`
	Attempts        int                  `json:"attempts"`
	LastStatusCode  *int                 `json:"last_status_code"`
	UpdatedAt       domain.Timestamp     `json:"updated_at"`
}

// Trace is what a post did: the changes its effect made (the effect of the
// original post, for a replay), the events they emitted and those events'
// deliveries.
type Trace struct {
	// EffectOf is the receipt the effect is keyed by: the original post.
	EffectOf uuid.UUID
	// Applied says whether the effect was recorded.
	Applied bool
	Changes []domain.Change
	Events  []TraceEvent
}

// ReceiptTrace returns the trace of one of the organisation's receipts and
// the ids of its replays, oldest first.
func (d *DB) ReceiptTrace(ctx context.Context, orgID uuid.UUID, r Receipt) (Trace, []uuid.UUID, error) {
	t := Trace{EffectOf: r.ID, Changes: []domain.Change{}, Events: []TraceEvent{}}
	if r.ReplayOf != nil {
		t.EffectOf = *r.ReplayOf
	}
	var result []byte
	err := d.pool.QueryRow(ctx, `SELECT result FROM inbound_effects WHERE org_id = $1 AND receipt_id = $2`, orgID, t.EffectOf).Scan(&result)
	switch {
	case err == nil:
		var res domain.InboundResult
		if err := json.Unmarshal(result, &res); err != nil {
			return t, nil, err
		}
		t.Applied = true
		if res.Changes != nil {
			t.Changes = res.Changes
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return t, nil, err
	}
	rows, err := d.pool.Query(ctx, `
		SELECT e.id, e.type, e.created_at, e.data,
		       coalesce((SELECT jsonb_agg(jsonb_build_object('id', w.id, 'subscription_id', w.subscription_id,
		                     'subscription_url', (SELECT s.url FROM webhook_subscriptions s WHERE s.org_id = w.org_id AND s.id = w.subscription_id), 'status', w.status,
		                     'attempts', w.attempts, 'last_status_code', w.last_status_code,
		                     'updated_at', to_char(w.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
		                   ORDER BY w.created_at, w.id)
		                 FROM webhook_deliveries w WHERE w.org_id = e.org_id AND w.event_id = e.id), '[]')
		FROM events e WHERE e.org_id = $1 AND e.receipt_id IN ($2, $3) ORDER BY e.created_at, e.id`, orgID, t.EffectOf, r.ID)
	if err != nil {
		return t, nil, err
	}
	t.Events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (TraceEvent, error) {
		var e TraceEvent
		var deliveries []byte
		if err := row.Scan(&e.ID, &e.Type, &e.CreatedAt, &e.Data, &deliveries); err != nil {
			return e, err
		}
		err := json.Unmarshal(deliveries, &e.Deliveries)
		return e, err
	})
	if err != nil {
		return t, nil, err
	}
	if t.Events == nil {
		t.Events = []TraceEvent{}
	}
	rows, err = d.pool.Query(ctx, `SELECT id FROM inbound_receipts WHERE org_id = $1 AND replay_of = $2 ORDER BY received_at, id`, orgID, r.ID)
	if err != nil {
		return t, nil, err
	}
	replays, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if replays == nil {
		replays = []uuid.UUID{}
	}
	return t, replays, err
}
