// Package receipts benchmarks the receipts list of the management API over
// a large organisation: GET /api/v1/inbound/receipts unfiltered, filtered by
// outcome, searched by reference (whole, in another case, by a prefix) and
// by receipt id, each answered through the API with its p50 and p99, next
// to a management read that costs only the API's own work measured in the same
// run, and to the body scan the reference search replaced, run as SQL.
package receipts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Options size a run.
type Options struct {
	// Receipts are the receipts of the organisation searched; Others the
	// receipts of ten other organisations together, with the same
	// references.
	Receipts, Others int
	// Requests is how many requests each query is timed over.
	Requests int
	// Keep keeps the seeded schema for the next run of the same size.
	Keep bool
	// Out is where the table is printed.
	Out io.Writer
	// Profile, when set, is where the CPU profile of the timed requests is
	// written; Profile+".allocs" gets the allocation profile.
	Profile string
}

// Row is one query's figures.
type Row struct {
	Name     string        `json:"name"`
	Query    string        `json:"query"`
	Found    int           `json:"found"`
	P50, P99 time.Duration `json:"-"`
	P50MS    float64       `json:"p50_ms"`
	P99MS    float64       `json:"p99_ms"`
}

// Result is a run's figures.
type Result struct {
	Baseline Row   `json:"baseline"`
	Rows     []Row `json:"rows"`
	// BodyScan is the search of the previous release (every body of the
	// organisation scanned for the text), run as SQL.
	BodyScan Row `json:"body_scan"`
}

// baseline names the baseline query: the webhook subscriptions list of an
// organisation with none, a management read that costs the API's own
// work (key, rate limit, one indexed query) and nothing of the receipts.
const baseline = "baseline"

// Targets are the latency targets of every row.
const (
	TargetP50 = 20 * time.Millisecond
	TargetP99 = 100 * time.Millisecond
)

// Run seeds (or reuses) the organisations and times the queries.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Requests <= 0 {
		o.Requests = 200
	}
	schema := fmt.Sprintf("bench_receipts_%d_%d", o.Receipts, o.Others)
	d, done, err := harness.ReusedDatabase(ctx, schema, o.Keep)
	if err != nil {
		return Result{}, err
	}
	defer done()
	org, err := seed(ctx, d, o)
	if err != nil {
		return Result{}, err
	}
	keys, err := harness.APIKeys(ctx, d, org, 20, domain.ScopeInboundRead, domain.ScopeWebhooksRead)
	if err != nil {
		return Result{}, err
	}
	log := zap.NewNop()
	service := integrations.New(integrations.Deps{DB: d, Log: log, BaseURL: "http://bench"})
	base, stop, err := harness.Serve(api.New(api.Deps{DB: d, Service: service, Logger: log, Cursors: cursor.New(make([]byte, 32)),
		BaseURL: "http://bench"}).Handler())
	if err != nil {
		return Result{}, err
	}
	defer stop()

	var anyID uuid.UUID
	if err := d.Pool().QueryRow(ctx, `SELECT id FROM inbound_receipts WHERE org_id = $1
		ORDER BY received_at DESC, id DESC OFFSET $2 LIMIT 1`, org, o.Receipts/3).Scan(&anyID); err != nil {
		return Result{}, fmt.Errorf("a receipt to search by id: %w", err)
	}
	ref := fmt.Sprintf("SO-%06d", o.Receipts*7/9) // SO-777777 of a million
	queries := []struct {
		name, query string
		// want is how many receipts the first page must hold (-1: a full
		// page of 50).
		want int
	}{
		{"list, newest first", "", -1},
		{"outcome=failed", "outcome=failed", -1},
		{"outcome=parked", "outcome=parked", -1},
		{"outcome=failed,parked", "outcome=failed,parked", -1},
		{"ref, whole", "ref=" + ref, 1},
		{"ref, lower case", "ref=" + url.QueryEscape(lower(ref)), 1},
		{"ref, a prefix (100 receipts)", "ref=" + ref[:len(ref)-2], -1},
		{"ref, a receipt id", "ref=" + anyID.String(), 1},
		{"ref, a prefix every receipt has (SO-)", "ref=SO-", -1},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	get := func(q string, i int) (int, time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/inbound/receipts?limit=50&"+q, nil)
		if q == baseline {
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/webhooks/subscriptions?limit=50", nil)
		}
		req.Header.Set("Authorization", "Bearer "+keys[i%len(keys)])
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		var page struct {
			Receipts      []json.RawMessage `json:"receipts"`
			Subscriptions []json.RawMessage `json:"subscriptions"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		took := time.Since(t0)
		if resp.StatusCode != http.StatusOK || err != nil {
			return 0, 0, fmt.Errorf("GET ?%s answered %d (%v)", q, resp.StatusCode, err)
		}
		return len(page.Receipts) + len(page.Subscriptions), took, nil
	}
	time1 := func(name, q string, want int) (Row, error) {
		row := Row{Name: name, Query: q}
		lat := make([]time.Duration, 0, o.Requests)
		for i := range o.Requests + o.Requests/10 {
			n, took, err := get(q, i)
			if err != nil {
				return row, err
			}
			row.Found = n
			if i >= o.Requests/10 { // the first tenth warms up
				lat = append(lat, took)
			}
		}
		if want == -1 {
			want = 50
		}
		if q != baseline && row.Found != want {
			return row, fmt.Errorf("%s found %d receipts, want %d", name, row.Found, want)
		}
		row.P50, row.P99 = percentiles(lat)
		row.P50MS, row.P99MS = ms(row.P50), ms(row.P99)
		return row, nil
	}
	var res Result
	stopProfile := harness.CPUProfile(o.Profile)
	if res.Baseline, err = time1("subscriptions list, empty (baseline)", baseline, 0); err != nil {
		return res, err
	}
	for _, q := range queries {
		row, err := time1(q.name, q.query, q.want)
		if err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, row)
	}
	stopProfile()
	if o.Profile != "" {
		if err := writeAllocs(o.Profile + ".allocs"); err != nil {
			return res, err
		}
	}
	if res.BodyScan, err = bodyScan(ctx, d.Pool(), org, ref); err != nil {
		return res, err
	}
	print(o.Out, o, res)
	return res, nil
}

// bodyScan times the previous release's reference search: every body of
// the organisation scanned for the text, newest first.
func bodyScan(ctx context.Context, pool *pgxpool.Pool, org uuid.UUID, ref string) (Row, error) {
	row := Row{Name: "ref, whole: the previous body scan (SQL)", Query: "position(ref IN body)"}
	var lat []time.Duration
	for range 5 {
		t0 := time.Now()
		rows, err := pool.Query(ctx, `SELECT id FROM inbound_receipts r
			WHERE r.org_id = $1 AND position(convert_to($2::text, 'UTF8') IN r.body) > 0
			ORDER BY r.received_at DESC, r.id DESC LIMIT 51`, org, ref)
		if err != nil {
			return row, err
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		lat = append(lat, time.Since(t0))
		row.Found = n
	}
	row.P50, row.P99 = percentiles(lat)
	row.P50MS, row.P99MS = ms(row.P50), ms(row.P99)
	return row, nil
}

func print(w io.Writer, o Options, res Result) {
	fmt.Fprintf(w, "receipts: %d in the organisation searched, %d in ten others; %d requests per query, one client\n\n",
		o.Receipts, o.Others, o.Requests)
	fmt.Fprintf(w, "| query | found | p50 | p99 | p50 / baseline | target p50 <= %v, p99 <= %v |\n|---|---|---|---|---|---|\n",
		TargetP50, TargetP99)
	fmt.Fprintf(w, "| %s | %d | %.1f ms | %.1f ms | 1.00 | |\n", res.Baseline.Name, res.Baseline.Found, res.Baseline.P50MS, res.Baseline.P99MS)
	for _, r := range res.Rows {
		met := "met"
		if r.P50 > TargetP50 || r.P99 > TargetP99 {
			met = "NOT met"
		}
		fmt.Fprintf(w, "| %s | %d | %.1f ms | %.1f ms | %.2f | %s |\n", r.Name, r.Found, r.P50MS, r.P99MS, r.P50MS/res.Baseline.P50MS, met)
	}
	fmt.Fprintf(w, "| %s | %d | %.1f ms | %.1f ms | %.2f | (5 runs) |\n", res.BodyScan.Name, res.BodyScan.Found, res.BodyScan.P50MS,
		res.BodyScan.P99MS, res.BodyScan.P50MS/res.Baseline.P50MS)
}

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func percentiles(lat []time.Duration) (time.Duration, time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seed makes the organisation searched and ten others, once per schema:
// receipts a second apart, newest now, 1 in 100 failed and 1 in 200
// parked, each naming an order (SO-000001 ...) and a delivery, as a
// delivery_status post does; the others' receipts name the same orders.
func seed(ctx context.Context, d *db.DB, o Options) (uuid.UUID, error) {
	var org uuid.UUID
	err := d.Pool().QueryRow(ctx, `SELECT id FROM organisations WHERE name = 'bench receipts'`).Scan(&org)
	if err == nil {
		fmt.Fprintf(o.Out, "receipts: reusing the seeded schema\n")
		return org, nil
	}
	sealer, err := secrets.NewSealer(make([]byte, 32))
	if err != nil {
		return org, err
	}
	make1 := func(name string, n int) (uuid.UUID, error) {
		owner := "owner@" + uuid.NewString()[:8] + ".example"
		org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: name, Currency: "EUR", OwnerEmail: owner})
		if err != nil {
			return uuid.Nil, err
		}
		ep, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: owner, Name: "carrier", Action: domain.ActionDeliveryStatus})
		if err != nil {
			return uuid.Nil, err
		}
		const chunk = 100_000
		for lo := 1; lo <= n; lo += chunk {
			hi := min(lo+chunk-1, n)
			t0 := time.Now()
			if _, err := d.Pool().Exec(ctx, `
				WITH ins AS (
					INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, outcome, status_code,
					                              completed_at, workflow_id, refs)
					SELECT gen_random_uuid(), $1, $2, 'delivery_status', now() - make_interval(secs => $5 - i),
					       convert_to(format('{"delivery_ref":"DL-%s","order_ref":"SO-%s","status":"shipped"}', i, lpad(i::text, 6, '0')), 'UTF8'),
					       80, CASE WHEN i % 100 = 0 THEN 'failed' WHEN i % 200 = 1 THEN 'parked' ELSE 'applied' END,
					       CASE WHEN i % 100 = 0 THEN 422 ELSE 200 END, now() - make_interval(secs => $5 - i), 'inbound-' || i,
					       ARRAY['DL-' || i, 'SO-' || lpad(i::text, 6, '0')]
					FROM generate_series($3::int, $4::int) i
					RETURNING org_id, id, refs)
				INSERT INTO inbound_receipt_refs (org_id, ref, receipt_id)
				SELECT ins.org_id, lower(k), ins.id FROM ins, unnest(ins.refs) k`, org.ID, ep.ID, lo, hi, n); err != nil {
				return uuid.Nil, fmt.Errorf("seed %s: %w", name, err)
			}
			fmt.Fprintf(o.Out, "receipts: %s: %d of %d stored (%v)\n", name, hi, n, time.Since(t0).Round(time.Millisecond))
		}
		return org.ID, nil
	}
	for i := range 10 {
		if o.Others/10 > 0 {
			if _, err := make1(fmt.Sprintf("bench other %d", i), o.Others/10); err != nil {
				return org, err
			}
		}
	}
	if org, err = make1("bench receipts", o.Receipts); err != nil {
		return org, err
	}
	_, err = d.Pool().Exec(ctx, `ANALYZE inbound_receipts; ANALYZE inbound_receipt_refs`)
	return org, err
}
