// Package bulk benchmarks POST /api/v1/products/bulk with 10,000 products in
// three cases (all new, all updated, none changed) next to a raw pgx COPY
// into a temporary table plus one upsert of the same rows, in the same run.
//
//	go run ./bench/bulk [-rounds 5]
//
// It uses BENCH_DATABASE_URL (default: database commerce_bench on the local
// server, created when missing) and drops its schema when done.
package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/cursor"
)

const (
	schema = "bench_bulk"
	batch  = 10000
)

var profileCase, profileFile string

// Options say how big a run is.
type Options struct {
	Rounds int // rounds per case; the median is reported
	// ProfileCase names the case whose API calls are profiled (CPU)
	// into ProfileFile.
	ProfileCase, ProfileFile string
}

// Case is one case's medians.
type Case struct {
	Name     string
	API, Raw time.Duration
}

// Run measures the three cases.
func Run(ctx context.Context, o Options) ([]Case, error) {
	profileCase, profileFile = o.ProfileCase, o.ProfileFile
	return run(ctx, o.Rounds)
}

func run(ctx context.Context, rounds int) ([]Case, error) {
	d, done, err := harness.Database(ctx, schema)
	if err != nil {
		return nil, err
	}
	defer done()

	apiOrg, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "API Ltd", OwnerEmail: "o@api.example"})
	if err != nil {
		return nil, err
	}
	rawOrg, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Raw Ltd"})
	if err != nil {
		return nil, err
	}
	_, key, err := d.CreateAPIKey(ctx, apiOrg.ID, "bench", []domain.Scope{domain.ScopeProductsWrite})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api.New(api.Deps{DB: d, Logger: zap.NewNop(), Cursors: cursor.New(make([]byte, 32))}).Handler()}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	endpoint := "http://" + l.Addr().String() + "/api/v1/products/bulk"

	original, updated := products(0), products(1)
	bodies := map[string][]byte{}
	for name, ps := range map[string][]domain.ProductInput{"original": original, "updated": updated} {
		b, _ := json.Marshal(map[string]any{"products": ps})
		bodies[name] = b
	}
	fmt.Printf("%d products per call (%d KB body); %d rounds, median reported\n\n", batch, len(bodies["original"])/1024, rounds)

	cases := []struct {
		name       string
		body, prev string // prev: what the catalogue holds before the call ("" = empty)
		rows       []domain.ProductInput
		prevRows   []domain.ProductInput
	}{
		{"all new", "original", "", original, nil},
		{"all updated", "updated", "original", updated, original},
		{"none changed", "original", "original", original, original},
	}
	var out []Case
	fmt.Printf("%-14s %12s %12s %8s\n", "case", "API", "raw pgx", "ratio")
	for _, c := range cases {
		var apiTimes, rawTimes []time.Duration
		for range rounds {
			// The API organisation, then the raw one, from the same start.
			if err := reset(ctx, d, apiOrg.ID, c.prevRows); err != nil {
				return nil, err
			}
			t, err := post(endpoint, key, bodies[c.body])
			if err != nil {
				return nil, err
			}
			apiTimes = append(apiTimes, t)
			if err := reset(ctx, d, rawOrg.ID, c.prevRows); err != nil {
				return nil, err
			}
			t, err = raw(ctx, d, rawOrg.ID, c.rows)
			if err != nil {
				return nil, err
			}
			rawTimes = append(rawTimes, t)
		}
		if err := profileCalls(ctx, c.name, d, apiOrg.ID, c.prevRows, func() error {
			_, err := post(endpoint, key, bodies[c.body])
			return err
		}); err != nil {
			return nil, err
		}
		a, r := median(apiTimes), median(rawTimes)
		fmt.Printf("%-14s %10.0fms %10.0fms %8.2f\n", c.name, ms(a), ms(r), float64(a)/float64(r))
		out = append(out, Case{Name: c.name, API: a, Raw: r})
	}
	return out, nil
}

// products makes the batch; version changes every product's price and title.
func products(version int) []domain.ProductInput {
	out := make([]domain.ProductInput, batch)
	cats := []string{"Fasteners", "Abrasives", "Adhesives", "Hand tools"}
	for i := range out {
		price := int64(100 + i%900 + version*7)
		lead := 1 + i%10
		out[i] = domain.ProductInput{
			SKU: fmt.Sprintf("FST-%05d", i), Title: fmt.Sprintf("Hex bolt M%d x %dmm A2 stainless (v%d)", 4+i%8, 10+i%90, version),
			Category: &cats[i%len(cats)], UOM: "each", PriceMinor: &price, Currency: "GBP", LeadTimeDays: &lead,
			Attrs:  domain.ObjectOf(map[string]any{"thread": fmt.Sprintf("M%d", 4+i%8), "length_mm": 10 + i%90, "material": "A2 stainless"}),
			Status: domain.ProductActive,
		}
	}
	return out
}

// reset puts the organisation's catalogue in the state a case starts from.
func reset(ctx context.Context, d *db.DB, org uuid.UUID, rows []domain.ProductInput) error {
	if _, err := d.Pool().Exec(ctx, `DELETE FROM products WHERE org_id = $1`, org); err != nil {
		return err
	}
	if rows != nil {
		if _, err := d.UpsertProducts(ctx, org, rows); err != nil {
			return err
		}
	}
	_, err := d.Pool().Exec(ctx, `VACUUM ANALYZE products`)
	return err
}

// profiledCalls is how many API calls the CPU profile covers.
const profiledCalls = 20

// profileCalls profiles the CPU over profiledCalls more API calls of the
// chosen case, after its timed rounds, from the case's start. The calls
// follow one another: for "none changed", the case profiled by default,
// each finds the catalogue as the first did.
func profileCalls(ctx context.Context, caseName string, d *db.DB, org uuid.UUID, prev []domain.ProductInput, call func() error) error {
	if profileFile == "" || caseName != profileCase {
		return nil
	}
	if err := reset(ctx, d, org, prev); err != nil {
		return err
	}
	f, err := os.Create(profileFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	for range profiledCalls {
		if err := call(); err != nil {
			return err
		}
	}
	return nil
}

func post(endpoint, key string, body []byte) (time.Duration, error) {
	req, _ := http.NewRequest("POST", endpoint, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("bulk answered %d: %s", resp.StatusCode, b)
	}
	return elapsed, nil
}

// raw is the baseline: COPY the same rows into a temporary table, then one
// upsert with the same rule for unchanged rows, in one transaction.
func raw(ctx context.Context, d *db.DB, org uuid.UUID, rows []domain.ProductInput) (time.Duration, error) {
	start := time.Now()
	err := pgx.BeginFunc(ctx, d.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE incoming (id uuid, sku text COLLATE "C", title text, category text, uom text,
			price_minor bigint, currency text, stock_qty numeric, lead_time_days int, attrs jsonb, status text, external_id text) ON COMMIT DROP`); err != nil {
			return err
		}
		src := make([][]any, len(rows))
		for i, p := range rows {
			src[i] = []any{pgtype.UUID{Bytes: db.NewID(), Valid: true}, p.SKU, p.Title, p.Category, p.UOM, p.PriceMinor, p.Currency, p.StockQty, p.LeadTimeDays, string(p.Attrs), string(p.Status), p.ExternalID}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"incoming"}, []string{"id", "sku", "title", "category", "uom", "price_minor",
			"currency", "stock_qty", "lead_time_days", "attrs", "status", "external_id"}, pgx.CopyFromRows(src)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO products AS p (id, org_id, sku, title, category, uom, price_minor, currency, stock_qty, lead_time_days, attrs, status, external_id)
			SELECT id, $1, sku, title, category, uom, price_minor, currency, stock_qty, lead_time_days, attrs, status, external_id FROM incoming
			ON CONFLICT (org_id, sku) DO UPDATE SET title = excluded.title, category = excluded.category, uom = excluded.uom,
				price_minor = excluded.price_minor, currency = excluded.currency, stock_qty = excluded.stock_qty,
				lead_time_days = excluded.lead_time_days, attrs = excluded.attrs, status = excluded.status,
				external_id = excluded.external_id, updated_at = now()
			WHERE (p.title, p.category, p.uom, p.price_minor, p.currency, p.stock_qty, p.lead_time_days, p.attrs, p.status, p.external_id)
			      IS DISTINCT FROM (excluded.title, excluded.category, excluded.uom, excluded.price_minor, excluded.currency,
			                        excluded.stock_qty, excluded.lead_time_days, excluded.attrs, excluded.status, excluded.external_id)`, org)
		return err
	})
	return time.Since(start), err
}

func median(ts []time.Duration) time.Duration {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[len(ts)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
