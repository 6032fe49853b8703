package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/domain"
)

// stockFixture is an organisation with Stock on, two locations and a product.
type stockFixture struct {
	*fixture
	product, main, other uuid.UUID
}

func newStockFixture(t *testing.T) *stockFixture {
	f := newFixture(t)
	f.seed(`{"locations": [{"code": "MAIN", "name": "Main", "is_default": true}, {"code": "BHX", "name": "Birmingham"}],
		"products": [{"sku": "BOLT", "title": "Bolt"}]}`)
	if _, err := f.db.SetAddon(context.Background(), f.org.ID, domain.AddonStock, true); err != nil {
		t.Fatal(err)
	}
	s := &stockFixture{fixture: f}
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT id FROM products WHERE sku = 'BOLT'`).Scan(&s.product)
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT id FROM stock_locations WHERE code = 'MAIN'`).Scan(&s.main)
	_ = f.db.Pool().QueryRow(context.Background(), `SELECT id FROM stock_locations WHERE code = 'BHX'`).Scan(&s.other)
	return s
}

func (s *stockFixture) move(body string) (int, api.MovementResult, string) {
	s.t.Helper()
	status, b := s.post("/api/v1/stock/movements", body)
	var r api.MovementResult
	_ = json.Unmarshal(b, &r)
	return status, r, string(b)
}

func (s *stockFixture) onHand(location uuid.UUID) float64 {
	s.t.Helper()
	var q float64
	_ = s.db.Pool().QueryRow(context.Background(), `SELECT coalesce((SELECT qty_on_hand FROM stock_lines WHERE product_id = $1 AND location_id = $2), 0)`,
		s.product, location).Scan(&q)
	return q
}

func TestStockMovementKinds(t *testing.T) {
	s := newStockFixture(t)
	p := s.product.String()
	// A receipt to a product with no line at the default location creates it.
	status, r, b := s.move(fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 10, "unit_cost_minor": 45, "reference": "GRN-1"}`, p))
	if status != 201 || r.Movement.BalanceAfter != 10 || len(r.Lines) != 1 || r.Lines[0].QtyOnHand != 10 ||
		r.Lines[0].LocationID != s.main || r.Lines[0].UnitCostMinor == nil || *r.Lines[0].UnitCostMinor != 45 {
		t.Fatalf("receipt: %d %s", status, b)
	}
	line := r.Lines[0].ID
	steps := []struct {
		body    string
		status  int
		balance float64
	}{
		{fmt.Sprintf(`{"kind": "adjustment", "line_id": %q, "qty": -2.5}`, line), 201, 7.5},
		{fmt.Sprintf(`{"kind": "adjustment", "line_id": %q, "qty": 1}`, line), 201, 8.5},
		{fmt.Sprintf(`{"kind": "scrap", "product_id": %q, "qty": 0.5}`, p), 201, 8},
		{fmt.Sprintf(`{"kind": "return", "product_id": %q, "location_id": %q, "qty": 2}`, p, s.main), 201, 10},
		{fmt.Sprintf(`{"kind": "transfer", "product_id": %q, "qty": 4, "to_location_id": %q}`, p, s.other), 201, 6},
	}
	for _, st := range steps {
		status, r, b := s.move(st.body)
		if status != st.status || r.Movement.BalanceAfter != st.balance {
			t.Fatalf("%s: %d %s", st.body, status, b)
		}
	}
	if s.onHand(s.main) != 6 || s.onHand(s.other) != 4 {
		t.Fatalf("after the transfer: main %v, other %v", s.onHand(s.main), s.onHand(s.other))
	}
	// The transfer answered both lines and names its destination.
	_, r, _ = s.move(fmt.Sprintf(`{"kind": "transfer", "product_id": %q, "location_id": %q, "qty": 1, "to_location_id": %q}`, p, s.other, s.main))
	if len(r.Lines) != 2 || r.Movement.ToLocationID == nil || *r.Movement.ToLocationID != s.main {
		t.Fatalf("transfer answer %+v", r)
	}
	if n := s.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'stock.movement.created'`); n != 7 {
		t.Fatalf("%d stock.movement.created events, want 7", n)
	}
	// Every balance_after agrees with the movements before it.
	if n := s.count(`SELECT count(*) FROM stock_movements WHERE org_id = $1 AND balance_after < 0`); n != 0 {
		t.Fatal("a negative balance_after")
	}
}

func TestStockMovementBelowZeroIsRefusedAndChangesNothing(t *testing.T) {
	s := newStockFixture(t)
	p := s.product.String()
	s.move(fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 3}`, p))
	before := s.count(`SELECT count(*) FROM stock_movements WHERE org_id = $1`)
	for _, body := range []string{
		fmt.Sprintf(`{"kind": "scrap", "product_id": %q, "qty": 3.5}`, p),
		fmt.Sprintf(`{"kind": "adjustment", "product_id": %q, "qty": -4}`, p),
		fmt.Sprintf(`{"kind": "transfer", "product_id": %q, "qty": 5, "to_location_id": %q}`, p, s.other),
		fmt.Sprintf(`{"kind": "scrap", "product_id": %q, "location_id": %q, "qty": 1}`, p, s.other), // no line there
	} {
		status, _, b := s.move(body)
		if status != 409 {
			t.Fatalf("%s: %d %s", body, status, b)
		}
		errorBody(t, []byte(b))
	}
	if s.onHand(s.main) != 3 || s.onHand(s.other) != 0 {
		t.Fatalf("balances changed: %v, %v", s.onHand(s.main), s.onHand(s.other))
	}
	if after := s.count(`SELECT count(*) FROM stock_movements WHERE org_id = $1`); after != before {
		t.Fatal("a refused movement was recorded")
	}
	// Taking exactly what is on hand is fine.
	if status, r, b := s.move(fmt.Sprintf(`{"kind": "scrap", "product_id": %q, "qty": 3}`, p)); status != 201 || r.Movement.BalanceAfter != 0 {
		t.Fatalf("to zero: %d %s", status, b)
	}
}

func TestStockMovementIdempotency(t *testing.T) {
	s := newStockFixture(t)
	body := fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 5, "idempotency_key": "GRN-77"}`, s.product)
	status1, first, b1 := s.move(body)
	status2, second, b2 := s.move(body)
	if status1 != 201 || status2 != 200 || b1 != b2 || first.Movement.ID != second.Movement.ID {
		t.Fatalf("first %d %s\nretry %d %s", status1, b1, status2, b2)
	}
	if s.onHand(s.main) != 5 {
		t.Fatalf("a retried key moved stock again: %v", s.onHand(s.main))
	}
	status, _, b := s.move(fmt.Sprintf(`{"kind": "receipt", "product_id": %q, "qty": 6, "idempotency_key": "GRN-77"}`, s.product))
	if status != 409 || !strings.Contains(b, "GRN-77") {
		t.Fatalf("same key, other body: %d %s", status, b)
	}
	if s.onHand(s.main) != 5 {
		t.Fatal("a reused key moved stock")
	}
}

func TestStockMovementValidationAndGating(t *testing.T) {
	s := newStockFixture(t)
	p := s.product.String()
	for body, want := range map[string]int{
		`{"kind": "teleport", "product_id": "` + p + `", "qty": 1}`:                                              400,
		`{"kind": "adjustment", "product_id": "` + p + `", "qty": 0}`:                                            400,
		`{"kind": "scrap", "product_id": "` + p + `", "qty": -1}`:                                                400,
		`{"kind": "transfer", "product_id": "` + p + `", "qty": 1}`:                                              400,
		`{"kind": "receipt", "product_id": "` + p + `", "qty": 1, "to_location_id": "` + s.other.String() + `"}`: 400,
		`{"kind": "scrap", "product_id": "` + p + `", "qty": 1, "unit_cost_minor": 3}`:                           400,
		`{"kind": "receipt", "qty": 1}`:                                                                          400,
		`{"kind": "receipt", "product_id": "` + p + `", "qty": 1.7e308}`:                                         400,
		`{"kind": "adjustment", "product_id": "` + p + `", "qty": -1e13}`:                                        400,
		`{"kind": "transfer", "product_id": "` + p + `", "qty": 1, "to_location_id": "` + s.main.String() + `"}`: 400,
		`{"kind": "receipt", "product_id": "` + uuid.NewString() + `", "qty": 1}`:                                404,
		`{"kind": "receipt", "line_id": "` + uuid.NewString() + `", "qty": 1}`:                                   404,
		`{"kind": "receipt", "product_id": "` + p + `", "location_id": "` + uuid.NewString() + `", "qty": 1}`:    404,
	} {
		if status, _, b := s.move(body); status != want {
			t.Errorf("%s: %d %s, want %d", body, status, b, want)
		}
	}
	// With Stock off, a movement answers 404 even though rows are held.
	s.move(`{"kind": "receipt", "product_id": "` + p + `", "qty": 1}`)
	_, _ = s.db.SetAddon(context.Background(), s.org.ID, domain.AddonStock, false)
	if status, _, b := s.move(`{"kind": "receipt", "product_id": "` + p + `", "qty": 1}`); status != http.StatusNotFound {
		t.Fatalf("stock off: %d %s", status, b)
	}
	if status, _, _ := s.do("GET", "/api/v1/stock/movements", s.key, nil); status != 200 {
		t.Fatalf("reads with stock off but rows held: %d", status)
	}
}

// TestConcurrentMovementsNeverGoBelowZero: 64 goroutines make 2,000
// movements on one stock line, adds and removes mixed, a fifth of them
// repeating an earlier idempotency key. Afterwards no balance was ever
// negative, no key was applied twice, and the balance is the sum of the
// movements applied.
// 64 writers make 2,000 movements of every kind on one stock line (adds:
// receipts, returns, positive adjustments; removes: scraps, negative
// adjustments, transfers out to another location), a fifth of them repeats
// of an earlier idempotency key with its body. Afterwards: no balance was
// ever negative, no key was applied twice and every repeat of an applied key
// answered 200 with the first movement, and the line's ledger adds up.
func TestConcurrentMovementsNeverGoBelowZero(t *testing.T) {
	s := newStockFixture(t)
	const total, workers = 2000, 64
	type op struct {
		key, body string
		delta     float64 // the change it makes to the main line
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ops := make([]op, total)
	for i := range ops {
		if i > 0 && rng.IntN(5) == 0 { // 20% repeat an earlier key, with its body
			ops[i] = ops[rng.IntN(i)]
			continue
		}
		key := fmt.Sprintf("k-%d", i)
		q := float64(rng.IntN(5) + 1)
		var kind, extra string
		delta := q
		// Removals slightly ahead, so the balance keeps meeting zero.
		switch r := rng.IntN(100); {
		case r < 20:
			kind = "receipt"
			extra = `, "unit_cost_minor": 250`
		case r < 30:
			kind = "return"
		case r < 45:
			kind = "adjustment"
		case r < 65:
			kind, delta = "adjustment", -q
		case r < 85:
			kind, delta = "scrap", -q
		default:
			kind, delta = "transfer", -q
			extra = fmt.Sprintf(`, "to_location_id": %q`, s.other)
		}
		shown := q
		if kind == "adjustment" {
			shown = delta
		}
		ops[i] = op{key: key, delta: delta, body: fmt.Sprintf(`{"kind": %q, "product_id": %q, "qty": %v, "idempotency_key": %q%s}`,
			kind, s.product, shown, key, extra)}
	}
	// Enough keys that the rate limit (600 a minute each) stays out of it.
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = s.newKey(domain.ScopeStockWrite)
	}
	type answer struct {
		status   int
		movement uuid.UUID
	}
	answers := make([]answer, total)
	var mu sync.Mutex
	var next int
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= total {
					return
				}
				status, _, b := s.do("POST", "/api/v1/stock/movements", keys[i%len(keys)], strings.NewReader(ops[i].body))
				var r api.MovementResult
				_ = json.Unmarshal(b, &r)
				answers[i] = answer{status, r.Movement.ID}
			}
		})
	}
	wg.Wait()
	statuses := map[int]int{}
	byKey := map[string][]answer{}
	for i, a := range answers {
		statuses[a.status]++
		byKey[ops[i].key] = append(byKey[ops[i].key], a)
	}
	t.Logf("answers: %v", statuses)
	for status := range statuses {
		if status != 201 && status != 200 && status != 409 {
			t.Errorf("unexpected status %d", status)
		}
	}
	if statuses[409] == 0 || statuses[201] == 0 || statuses[200] == 0 {
		t.Fatalf("the mix did not exercise every outcome: %v", statuses)
	}
	// Each key: at most one 201; a 200 only after its 201, naming the same
	// movement; the movement stored iff the key was applied.
	applied := map[string]uuid.UUID{}
	for key, as := range byKey {
		var first uuid.UUID
		created := 0
		for _, a := range as {
			if a.status == 201 {
				created++
				first = a.movement
			}
		}
		for _, a := range as {
			if a.status == 200 && (created != 1 || a.movement != first) {
				t.Fatalf("key %s: a repeat answered movement %s, the first use %s (%d created)", key, a.movement, first, created)
			}
		}
		if created > 1 {
			t.Fatalf("key %s applied %d times", key, created)
		}
		if created == 1 {
			applied[key] = first
		}
	}
	rows, err := s.db.Pool().Query(context.Background(), `SELECT idempotency_key, id FROM stock_movements WHERE org_id = $1`, s.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]uuid.UUID{}
	for rows.Next() {
		var k string
		var id uuid.UUID
		_ = rows.Scan(&k, &id)
		if _, dup := stored[k]; dup {
			t.Fatalf("key %s stored twice", k)
		}
		stored[k] = id
	}
	if rows.Err() != nil || len(stored) != len(applied) {
		t.Fatalf("%d movements stored, %d keys answered 201 (%v)", len(stored), len(applied), rows.Err())
	}
	for k, id := range applied {
		if stored[k] != id {
			t.Fatalf("key %s: answered movement %s, stored %s", k, id, stored[k])
		}
	}
	if n := s.count(`SELECT count(*) FROM stock_movements WHERE org_id = $1 AND (balance_after < 0 OR to_balance_after < 0)`); n != 0 {
		t.Fatalf("%d movements recorded a negative balance", n)
	}
	// The balances equal the sums of the applied movements.
	var sum, moved float64
	for k := range applied {
		for _, o := range ops {
			if o.key == k {
				sum += o.delta
				if strings.Contains(o.body, `"transfer"`) {
					moved -= o.delta
				}
				break
			}
		}
	}
	if got := s.onHand(s.main); got != sum || got < 0 {
		t.Fatalf("main balance %v, sum of applied movements %v", got, sum)
	}
	if got := s.onHand(s.other); got != moved {
		t.Fatalf("destination balance %v, transferred %v", got, moved)
	}
	// Replaying the main line's ledger in order reproduces every
	// balance_after: movements are ordered as they were applied.
	rows, err = s.db.Pool().Query(context.Background(), `
		SELECT CASE WHEN kind IN ('scrap', 'transfer') THEN -qty ELSE qty END, balance_after
		FROM stock_movements WHERE org_id = $1 ORDER BY created_at, id`, s.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ delta, after float64 }
	ledger, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (entry, error) {
		var e entry
		err := r.Scan(&e.delta, &e.after)
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var running float64
	for i, e := range ledger {
		running += e.delta
		if running != e.after {
			t.Fatalf("movement %d: balance_after %v but the movements before add up to %v", i, e.after, running)
		}
	}
}
