package db_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// refsFixture is an organisation with an endpoint to store posts on.
type refsFixture struct {
	t   *testing.T
	d   *testdb.DB
	org uuid.UUID
	ep  uuid.UUID
	at  time.Time
}

func newRefsFixture(t *testing.T, d *testdb.DB, name string) *refsFixture {
	t.Helper()
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: name, Currency: "EUR", OwnerEmail: "o@" + name + ".example"})
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	ep, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: "o@" + name + ".example", Name: "erp",
		Action: domain.ActionDeliveryStatus})
	if err != nil {
		t.Fatal(err)
	}
	return &refsFixture{t: t, d: d, org: org.ID, ep: ep.ID, at: time.Now().Add(-time.Hour)}
}

// post stores a post with body, a second after the one before.
func (f *refsFixture) post(body string) uuid.UUID {
	f.t.Helper()
	f.at = f.at.Add(time.Second)
	id, err := f.d.StoreReceipt(context.Background(), db.NewReceipt{OrgID: f.org, EndpointID: f.ep, Action: domain.ActionDeliveryStatus,
		ReceivedAt: f.at, Body: []byte(body), Size: len(body), BodyComplete: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// find lists the receipts a filter finds, newest first, by id.
func (f *refsFixture) find(filter db.OrgReceiptFilter, limit int) []uuid.UUID {
	f.t.Helper()
	var ids []uuid.UUID
	page := db.Page{Limit: limit}
	for {
		rows, err := f.d.ListOrgReceipts(context.Background(), f.org, filter, page)
		if err != nil {
			f.t.Fatalf("ListOrgReceipts(%+v): %v", filter, err)
		}
		more := len(rows) > limit
		rows = rows[:min(len(rows), limit)]
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if !more {
			return ids
		}
		last := rows[len(rows)-1]
		page.After = &db.Key{At: last.ReceivedAt.Time, ID: last.ID}
	}
}

func TestReceiptRefsAreExtractedAndSearchedByIndex(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	f := newRefsFixture(t, d, "acme")
	other := newRefsFixture(t, d, "other")
	a := f.post(`{"delivery_ref":"DL-1","order_ref":"SO-2026-0202","status":"shipped"}`)
	b := f.post(`{"order_ref":"SO-2026-0250","status":"shipped"}`)
	c := f.post(`{"consignment_ref":"so","status":"shipped"}`)
	refused := f.post(`not json, order_ref SO-2026-0202`)
	theirs := other.post(`{"order_ref":"SO-2026-0202","status":"shipped"}`)

	r, err := d.GetReceipt(ctx, f.org, a)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Refs, []string{"DL-1", "SO-2026-0202"}) {
		t.Fatalf("refs = %q", r.Refs)
	}
	cases := []struct {
		ref  string
		want []uuid.UUID
	}{
		{"SO-2026-0202", []uuid.UUID{a}},
		{"so-2026-0202", []uuid.UUID{a}},         // in any case
		{"  So-2026-0202 ", []uuid.UUID{a}},      // trimmed
		{"so-2026", []uuid.UUID{b, a}},           // a prefix of 3 or more, newest first
		{"SO", []uuid.UUID{c}},                   // under 3 characters: whole references only
		{"DL", nil},                              // not a prefix search under 3
		{"2026-0202", nil},                       // not a search of the body's text
		{a.String(), []uuid.UUID{a}},             // the receipt id X-Receipt-Id gave
		{refused.String(), []uuid.UUID{refused}}, // even with no references
		{theirs.String(), nil},                   // another organisation's receipt
		{"SO-2026-0202-and-more", nil},           // a key longer than any reference
	}
	for _, tc := range cases {
		if got := f.find(db.OrgReceiptFilter{Ref: tc.ref}, 10); !slices.Equal(got, tc.want) {
			t.Errorf("ref %q found %v, want %v", tc.ref, got, tc.want)
		}
	}
	if got := other.find(db.OrgReceiptFilter{Ref: "so-2026-0202"}, 10); !slices.Equal(got, []uuid.UUID{theirs}) {
		t.Errorf("the other organisation's search found %v, want only its own %v", got, theirs)
	}
}

func TestReceiptsFilteredByOutcomesComeNewestFirstAcrossPages(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	f := newRefsFixture(t, d, "acme")
	outcomes := []domain.Outcome{domain.OutcomeFailed, domain.OutcomeParked, domain.OutcomeApplied}
	want := map[domain.Outcome][]uuid.UUID{}
	for i := range 12 {
		id := f.post(fmt.Sprintf(`{"order_ref":"SO-%d","status":"shipped"}`, i))
		o := outcomes[i%3]
		u := db.ReceiptUpdate{Outcome: o}
		if o == domain.OutcomeParked {
			what := "order SO"
			u.WaitingFor, u.WaitingKeys = &what, []string{domain.WaitKey(domain.WaitOrder, fmt.Sprintf("SO-%d", i))}
		}
		if err := d.UpdateReceipt(ctx, f.org, id, u); err != nil {
			t.Fatal(err)
		}
		want[o] = append([]uuid.UUID{id}, want[o]...)
	}
	// failed and parked, merged newest first: 8 receipts over pages of 3.
	var merged []uuid.UUID
	for i := 11; i >= 0; i-- {
		if o := outcomes[i%3]; o != domain.OutcomeApplied {
			merged = append(merged, want[o][len(want[o])-1-i/3])
		}
	}
	got := f.find(db.OrgReceiptFilter{Outcomes: []domain.Outcome{domain.OutcomeParked, domain.OutcomeFailed}}, 3)
	if !slices.Equal(got, merged) {
		t.Fatalf("failed+parked = %v, want %v", got, merged)
	}
	if got := f.find(db.OrgReceiptFilter{Outcomes: []domain.Outcome{domain.OutcomeFailed, domain.OutcomeFailed}}, 3); !slices.Equal(got, want[domain.OutcomeFailed]) {
		t.Fatalf("failed named twice = %v, want each failed receipt once: %v", got, want[domain.OutcomeFailed])
	}
	rows, err := d.ListOrgReceipts(ctx, f.org, db.OrgReceiptFilter{Outcomes: []domain.Outcome{domain.OutcomeParked}}, db.Page{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || !slices.Equal(rows[0].WaitingKeys, []string{"order:SO-10"}) {
		t.Fatalf("the newest parked receipt waits for %v, want [order:SO-10]", rows)
	}
}

// olderSchema makes a schema of its own at version, as an older release
// left it, with an organisation, its owner and an endpoint of action as
// that release stored them; it returns the schema's URL, a connection to
// it, and the organisation's and endpoint's ids.
func olderSchema(t *testing.T, version int32, action string) (string, *pgx.Conn, uuid.UUID, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	u, _ := testdb.Empty(t)
	if _, err := db.MigrateTo(ctx, u, version); err != nil {
		t.Fatal(err)
	}
	org, ep, owner := uuid.New(), uuid.New(), uuid.New()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO organisations (id, name, currency) VALUES ($1, 'Acme', 'EUR')`, []any{org}},
		{`INSERT INTO users (id, org_id, email, role) VALUES ($1, $2, 'o@acme.example', 'owner')`, []any{owner, org}},
		{`INSERT INTO inbound_endpoints (id, org_id, name, action, token_hash, created_by) VALUES ($1, $2, 'erp', $3, sha256('t'), $4)`,
			[]any{ep, org, action, owner}},
	} {
		if _, err := conn.Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("the organisation: %s: %v", st.sql, err)
		}
	}
	return u, conn, org, ep
}

// TestRefsBackfillOf100000ReceiptsLetsWritersThrough brings a schema to
// the version before references with 100,000 receipts in it, migrates it,
// and backfills their refs while a writer updates receipts and stores new
// posts: every write goes through while the backfill runs (each waits at
// most for one batch, well under its lock timeout), and at the end every
// receipt is found by its reference.
func TestRefsBackfillOf100000ReceiptsLetsWritersThrough(t *testing.T) {
	const receipts = 100000
	ctx := context.Background()
	u, conn, org, ep := olderSchema(t, 8, "delivery_status")
	if _, err := conn.Exec(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, outcome)
		SELECT gen_random_uuid(), $1, $2, 'delivery_status', now() - make_interval(secs => $3 - i),
		       convert_to(format('{"order_ref":"SO-%s","delivery_ref":"DL-%s","status":"shipped"}', i, i), 'UTF8'), 60, 'applied'
		FROM generate_series(1, $3) i`, org, ep, receipts); err != nil {
		t.Fatalf("seed receipts: %v", err)
	}
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatalf("migrate over %d receipts: %v", receipts, err)
	}
	d, err := db.Connect(ctx, u, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n, err := d.RefsMissing(ctx); err != nil || n != receipts {
		t.Fatalf("refs missing before the backfill = %d, %v; want %d", n, err, receipts)
	}

	var ids []uuid.UUID
	rows, _ := conn.Query(ctx, `SELECT id FROM inbound_receipts ORDER BY id DESC LIMIT 200`)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	var progress []db.RefsBackfillProgress
	var backfillDone time.Time
	backfill := make(chan error, 1)
	go func() {
		ran, err := d.BackfillReceiptRefs(ctx, db.RefsBackfillBatch, func(p db.RefsBackfillProgress) {
			progress = append(progress, p)
			once.Do(func() { close(started) })
		})
		backfillDone = time.Now()
		if err == nil && !ran {
			err = fmt.Errorf("the backfill did not run")
		}
		backfill <- err
	}()
	<-started
	// The writer: updates receipts the backfill has not reached (the
	// newest ids, read last) and stores new posts, each statement under a
	// lock timeout it would exceed if the backfill held the table.
	w, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	if _, err := w.Exec(ctx, `SET lock_timeout = '3s'`); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:100] {
		if _, err := w.Exec(ctx, `UPDATE inbound_receipts SET outcome = 'failed' WHERE id = $1`, id); err != nil {
			t.Fatalf("a writer's update during the backfill: %v", err)
		}
	}
	var newID uuid.UUID
	if err := w.QueryRow(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, refs)
		VALUES (gen_random_uuid(), $1, $2, 'delivery_status', now(), '{}', 2, '{}') RETURNING id`, org, ep).Scan(&newID); err != nil {
		t.Fatalf("a writer's insert during the backfill: %v", err)
	}
	writerDone := time.Now()
	if err := <-backfill; err != nil {
		t.Fatal(err)
	}
	if !writerDone.Before(backfillDone) {
		t.Fatalf("the writer finished after the backfill: the test did not write while it ran")
	}
	last := progress[len(progress)-1]
	if last.Done != receipts || last.Left != 0 || len(progress) < receipts/db.RefsBackfillBatch {
		t.Fatalf("progress: %d reports, last %+v; want %d batches ending at %d done", len(progress), last, receipts/db.RefsBackfillBatch, receipts)
	}
	if n, err := d.RefsMissing(ctx); err != nil || n != 0 {
		t.Fatalf("refs missing after the backfill = %d, %v", n, err)
	}
	for _, i := range []int{4242, 77777, receipts} {
		got, err := d.ListOrgReceipts(ctx, org, db.OrgReceiptFilter{Ref: fmt.Sprintf("so-%d", i)}, db.Page{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		// so-4242 is also the prefix of so-42420 to so-42429: the whole
		// reference is among them.
		found := slices.ContainsFunc(got, func(r db.Receipt) bool {
			return slices.Equal(r.Refs, []string{fmt.Sprintf("SO-%d", i), fmt.Sprintf("DL-%d", i)})
		})
		if !found {
			t.Errorf("SO-%d not found after the backfill: %d receipts", i, len(got))
		}
	}
	// A second run finds nothing to do.
	if ran, err := d.BackfillReceiptRefs(ctx, db.RefsBackfillBatch, func(db.RefsBackfillProgress) { t.Error("progress on a second run") }); err != nil || !ran {
		t.Fatalf("second run: ran %v, %v", ran, err)
	}
}
