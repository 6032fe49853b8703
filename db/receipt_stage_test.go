package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
)

// The receipts a release before intake stages stored are given the stage
// their post reached, read off what that release stored: when the schema is
// migrated (the refused posts it kept), and while one of its replicas still
// runs beside the new schema (a rolling upgrade), as it stores more.
func TestReceiptsOfAnEarlierReleaseAreGivenTheirStage(t *testing.T) {
	ctx := context.Background()
	u, conn, org, ep := olderSchema(t, 18, "erp_order_status")
	// What that release stored: a receipt with its answer, and a workflow
	// for an accepted post.
	store := func(status *int, complete bool, errText *string, workflow bool) uuid.UUID {
		t.Helper()
		id := uuid.New()
		var wf *string
		if workflow {
			w := "inbound/" + id.String()
			wf = &w
		}
		if _, err := conn.Exec(ctx, `INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes,
			body_complete, status_code, error, workflow_id, outcome)
			VALUES ($1, $2, $3, 'erp_order_status', now(), '{}', 2, $4, $5, $6, $7, CASE WHEN $7::text IS NULL THEN 'failed' ELSE 'applied' END)`,
			id, org, ep, complete, status, errText, wf); err != nil {
			t.Fatal(err)
		}
		return id
	}
	code := func(n int) *int { return &n }
	text := func(s string) *string { return &s }
	type kept struct {
		id   uuid.UUID
		want string
	}
	legacy := func() []kept {
		return []kept{
			{store(code(409), true, text("the endpoint is paused"), false), "paused"},
			{store(code(413), false, text("the body is over 1 MB"), false), "size"},
			{store(code(401), true, text("signature required and missing or wrong: no signature"), false), "signature"},
			{store(code(400), true, text("Idempotency-Key must be one value of 1 to 255 printable ASCII characters"), false), "sender_retry"},
			{store(code(400), true, text("order_ref or quote_ref is required"), false), "shape"},
			{store(code(413), true, text("at most 500 customers"), false), "shape"},
			{store(code(200), true, nil, true), "start"},
			{store(nil, true, nil, true), "start"},
		}
	}
	before := legacy()
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	during := legacy()
	for name, rows := range map[string][]kept{"migrated": before, "stored beside the new schema": during} {
		for i, k := range rows {
			var stage string
			if err := conn.QueryRow(ctx, `SELECT stage FROM inbound_receipts WHERE id = $1`, k.id).Scan(&stage); err != nil {
				t.Fatal(err)
			}
			if stage != k.want {
				t.Errorf("%s receipt %d: stage %s, want %s", name, i, stage, k.want)
			}
		}
	}
}
