package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// receiptsOf stores posts (and replays) of one endpoint of org.
type receiptsOf struct {
	t   *testing.T
	d   *testdb.DB
	org uuid.UUID
	ep  uuid.UUID
	at  time.Time
}

func newReceiptsOf(t *testing.T, d *testdb.DB, org uuid.UUID) *receiptsOf {
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	ep, err := d.CreateEndpoint(context.Background(), sealer, db.NewEndpoint{OrgID: org, AsEmail: "o@acme.example", Name: "erp", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	return &receiptsOf{t: t, d: d, org: org, ep: ep.ID, at: time.Now().Add(-time.Hour)}
}

// post stores a post (a replay of replayOf, when not nil) that ends with
// outcome.
func (r *receiptsOf) post(replayOf *uuid.UUID, outcome domain.Outcome) uuid.UUID {
	r.t.Helper()
	ctx := context.Background()
	r.at = r.at.Add(time.Second)
	in := db.NewReceipt{OrgID: r.org, EndpointID: r.ep, Action: domain.ActionERPOrderStatus,
		ReceivedAt: r.at, Body: []byte(`{}`), Size: 2, BodyComplete: true, ReplayOf: replayOf}
	var id uuid.UUID
	var err error
	if replayOf == nil {
		id, err = r.d.StoreReceipt(ctx, in)
	} else {
		id, _, err = r.d.StoreReplay(ctx, in)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.d.UpdateReceipt(ctx, r.org, id, db.ReceiptUpdate{Outcome: outcome}); err != nil {
		r.t.Fatal(err)
	}
	return id
}

func (r *receiptsOf) resolution(id uuid.UUID) *db.Resolution {
	r.t.Helper()
	got, err := r.d.GetReceipt(context.Background(), r.org, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return got.Resolution
}

func (r *receiptsOf) list(f db.OrgReceiptFilter) []uuid.UUID {
	r.t.Helper()
	rows, err := r.d.ListOrgReceipts(context.Background(), r.org, f, db.Page{Limit: 50})
	if err != nil {
		r.t.Fatal(err)
	}
	var ids []uuid.UUID
	for _, x := range rows {
		ids = append(ids, x.ID)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return ids
}

func sortedIDs(ids ...uuid.UUID) []uuid.UUID {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return ids
}

// A failed post whose replay applies is resolved by that replay, and so
// are its replays that failed before; a parked post cancelled on purpose
// is resolved by the cancellation; one whose replay failed too is not.
// The lists of failures filter by resolution, and a bulk replay leaves out
// what a replay resolved unless asked.
func TestReplayedAndCancelledFailuresAreResolved(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "o@acme.example"})
	r := newReceiptsOf(t, d, org.ID)

	original := r.post(nil, domain.OutcomeFailed)
	failedReplay := r.post(&original, domain.OutcomeFailed)
	if res := r.resolution(original); res != nil {
		t.Fatalf("a failed post whose replay failed too reads resolved %+v", res)
	}
	fix := r.post(&original, domain.OutcomeApplied)
	for _, id := range []uuid.UUID{original, failedReplay} {
		res := r.resolution(id)
		if res == nil || res.By != "replay" || res.ReceiptID == nil || *res.ReceiptID != fix || res.At.IsZero() {
			t.Fatalf("receipt %s after its replay %s applied: resolution %+v, want by replay naming it", id, fix, res)
		}
	}
	if res := r.resolution(fix); res != nil {
		t.Fatalf("the replay that applied reads resolved %+v", res)
	}

	stillFailing := r.post(nil, domain.OutcomeError)
	parked := r.post(nil, domain.OutcomeParked)
	if err := d.UpdateReceipt(ctx, org.ID, parked, db.ReceiptUpdate{Outcome: domain.OutcomeCancelled}); err != nil {
		t.Fatal(err)
	}
	if res := r.resolution(parked); res == nil || res.By != "cancel" || res.ReceiptID != nil {
		t.Fatalf("a parked post cancelled on purpose: resolution %+v, want by cancel", res)
	}

	failures := []domain.Outcome{domain.OutcomeFailed, domain.OutcomeError}
	no, yes := false, true
	if got, want := r.list(db.OrgReceiptFilter{Outcomes: failures, Resolved: &no}), sortedIDs(stillFailing); !slices.Equal(got, want) {
		t.Fatalf("unresolved failures %v, want %v", got, want)
	}
	if got, want := r.list(db.OrgReceiptFilter{Outcomes: failures, Resolved: &yes}), sortedIDs(original, failedReplay); !slices.Equal(got, want) {
		t.Fatalf("resolved failures %v, want %v", got, want)
	}
	if got, want := r.list(db.OrgReceiptFilter{Outcomes: failures}), sortedIDs(original, failedReplay, stillFailing); !slices.Equal(got, want) {
		t.Fatalf("all failures %v, want %v", got, want)
	}

	batch := db.NewReplayBatch{OrgID: org.ID, Outcomes: failures}
	if n, err := d.CountReplaySelection(ctx, batch); err != nil || n != 1 {
		t.Fatalf("a bulk replay of failures takes %d (%v), want 1: the one no replay resolved", n, err)
	}
	batch.IncludeResolved = true
	if n, err := d.CountReplaySelection(ctx, batch); err != nil || n != 2 {
		t.Fatalf("a bulk replay of failures asked to include resolved ones takes %d (%v), want 2 originals", n, err)
	}
}

// A failed or exhausted delivery that a resend, a recover or a bulk resend
// then delivers is resolved by it (a bulk resend named); one delivered by
// its own next retry is not; the deliveries list filters by resolution.
func TestResentFailedDeliveriesAreResolved(t *testing.T) {
	ctx := context.Background()
	f := newOpsFixture(t)
	f.subscribe(domain.EventCustomerCreated)
	f.customersCreated(4)
	refs := f.claim()
	if len(refs) != 4 {
		t.Fatalf("%d deliveries, want 4", len(refs))
	}
	attempt := func(id uuid.UUID, n int, status domain.WebhookStatus) {
		t.Helper()
		code := 200
		if status != domain.WebhookSucceeded {
			code = 503
		}
		if _, err := f.d.RecordWebhookAttempt(ctx, db.WebhookAttemptRecord{OrgID: f.org, DeliveryID: id, Attempt: n,
			StartedAt: time.Now(), StatusCode: &code, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	resent, recovered, retried, bulk := refs[0].ID, refs[1].ID, refs[2].ID, refs[3].ID
	batch := uuid.New()
	for _, id := range []uuid.UUID{resent, recovered, bulk} {
		attempt(id, 1, domain.WebhookExhausted)
	}
	attempt(retried, 1, domain.WebhookFailed)
	for by, id := range map[string]uuid.UUID{db.ResentBySupport: resent, db.ResentByRecover: recovered} {
		if err := f.d.MarkDeliveriesResent(ctx, f.org, []uuid.UUID{id}, by, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.d.MarkDeliveriesResent(ctx, f.org, []uuid.UUID{bulk}, db.ResentByBulk, &batch); err != nil {
		t.Fatal(err)
	}
	if x, _ := f.d.GetWebhookDelivery(ctx, f.org, resent); x.Resolution != nil {
		t.Fatalf("a resent delivery not delivered yet reads resolved %+v", x.Resolution)
	}
	for _, id := range []uuid.UUID{resent, recovered, retried, bulk} {
		attempt(id, 2, domain.WebhookSucceeded)
	}
	want := map[uuid.UUID]string{resent: db.ResentBySupport, recovered: db.ResentByRecover, bulk: db.ResentByBulk}
	for _, id := range []uuid.UUID{resent, recovered, retried, bulk} {
		x, err := f.d.GetWebhookDelivery(ctx, f.org, id)
		if err != nil {
			t.Fatal(err)
		}
		switch by, ok := want[id]; {
		case !ok && x.Resolution != nil:
			t.Fatalf("a delivery its own retry delivered reads resolved %+v", x.Resolution)
		case ok && (x.Resolution == nil || x.Resolution.By != by || x.Resolution.At.IsZero()):
			t.Fatalf("delivery %s: resolution %+v, want by %s", id, x.Resolution, by)
		case ok && by == db.ResentByBulk && (x.Resolution.BatchID == nil || *x.Resolution.BatchID != batch):
			t.Fatalf("a bulk resend's delivery names batch %v, want %s", x.Resolution.BatchID, batch)
		}
	}
	yes := true
	rows, err := f.d.ListWebhookDeliveriesPage(ctx, f.org, db.DeliveryListFilter{Resolved: &yes}, db.Page{Limit: 10})
	if err != nil || len(rows) != 3 {
		t.Fatalf("resolved deliveries %d (%v), want 3", len(rows), err)
	}
}

// Every post applied resolves its original's failures, so the statement
// must cost the same however many posts the organisation has had refused:
// with 2,000 failed receipts, and planned as a prepared statement is (a
// generic plan) and with fresh statistics, it reads a few receipts, not
// the failed ones. Its plan is read from Postgres.
func TestResolvingAnAppliedPostReadsOnlyItsOriginalsReceipts(t *testing.T) {
	f := newOpsFixture(t)
	d, ctx := f.d, context.Background()
	r := newReceiptsOf(t, d, f.org)
	failed := r.post(nil, domain.OutcomeFailed)
	if _, err := d.Pool().Exec(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, outcome)
		SELECT gen_random_uuid(), $1, $2, 'erp_order_status', now() - interval '1 day', '\x7b7d', 2, 'failed' FROM generate_series(1, 2000)`,
		f.org, r.ep); err != nil {
		t.Fatal(err)
	}
	replay := r.post(&failed, domain.OutcomePending)
	for i, mode := range []string{"force_generic_plan", "force_custom_plan", "force_generic_plan", "force_custom_plan"} {
		analyzed := i >= 2
		func() {
			read := 0.0
			tx, err := d.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			stmts := []string{`SET LOCAL plan_cache_mode = ` + mode}
			if analyzed {
				stmts = append([]string{`ANALYZE inbound_receipts`}, stmts...)
			}
			for k, sql := range db.ResolveByReplaySQL {
				stmts = append(stmts, fmt.Sprintf(`PREPARE resolve%d_%d (uuid, uuid) AS %s`, i, k, sql))
			}
			for _, q := range stmts {
				if _, err := tx.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			var plansRead []string
			for k := range db.ResolveByReplaySQL {
				var raw []byte
				explain := fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE resolve%d_%d ('%s', '%s')`, i, k, f.org, replay)
				if err := tx.QueryRow(ctx, explain).Scan(&raw); err != nil {
					t.Fatalf("%s: %v", explain, err)
				}
				var plans []struct {
					Plan map[string]any `json:"Plan"`
				}
				if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
					t.Fatalf("EXPLAIN answered %s (%v)", raw, err)
				}
				read += rowsRead(plans[0].Plan, "inbound_receipts")
				plansRead = append(plansRead, string(raw))
			}
			if read > 10 {
				t.Errorf("%s, analyzed %v: resolving read %.0f receipts with 2,001 failed, want the original and its replays; the plans: %s", mode, analyzed, read, plansRead)
			}
			var resolved int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND resolved_receipt = $2`, f.org, replay).Scan(&resolved); err != nil {
				t.Fatal(err)
			}
			if resolved != 1 {
				t.Errorf("%s: %d receipts resolved by the replay, want its original", mode, resolved)
			}
		}()
	}
}
