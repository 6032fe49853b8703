package domain

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestRoundHalfUpRoundsHalvesAwayFromZero(t *testing.T) {
	cases := []struct {
		num, den int64
		want     int64
	}{
		{5, 2, 3}, {-5, 2, -3}, {3, 2, 2}, {-3, 2, -2},
		{249, 100, 2}, {250, 100, 3}, {251, 100, 3},
		{-249, 100, -2}, {-250, 100, -3},
		{0, 1, 0}, {1, 3, 0}, {2, 3, 1}, {-1, 3, 0},
	}
	for _, c := range cases {
		got, ok := RoundHalfUp(big.NewRat(c.num, c.den))
		if !ok || got != c.want {
			t.Errorf("RoundHalfUp(%d/%d) = %d, want %d", c.num, c.den, got, c.want)
		}
	}
	huge := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 70))
	if _, ok := RoundHalfUp(huge); ok {
		t.Error("RoundHalfUp(2^70) reported a fit in int64")
	}
}

func TestQuoteLineAmount(t *testing.T) {
	pct := func(f float64) *float64 { return &f }
	pin := func(v int64) *int64 { return &v }
	cases := []struct {
		name     string
		qty      float64
		unit     int64
		discount *float64
		override *int64
		want     int64
	}{
		{"plain", 3, 1250, nil, nil, 3750},
		{"fractional qty rounds half up", 2.5, 333, nil, nil, 833},    // 832.5 → 833
		{"decimal qty is exact", 0.1, 5, nil, nil, 1},                 // 0.5 → 1, not 0.49999…
		{"discount", 10, 999, pct(12.5), nil, 8741},                   // 8741.25
		{"discount rounding at half", 1, 3, pct(50), nil, 2},          // 1.5 → 2
		{"override pins the line", 3, 1250, pct(10), pin(3000), 3000}, // not 3375
		{"override of zero pins zero", 5, 100, nil, pin(0), 0},
		{"note line", 0, 0, nil, nil, 0},
	}
	for _, c := range cases {
		if got := QuoteLineAmount(c.qty, c.unit, c.discount, c.override); got != c.want {
			t.Errorf("%s: QuoteLineAmount = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestComputeTotals(t *testing.T) {
	got := ComputeTotals([]int64{3750, 833, 3000}, 500, 20)
	// subtotal 7583; net 7083; vat 1416.6 → 1417; total 8500
	want := Totals{SubtotalMinor: 7583, DiscountMinor: 500, VATMinor: 1417, TotalMinor: 8500}
	if got != want {
		t.Fatalf("ComputeTotals = %+v, want %+v", got, want)
	}
	if !got.Consistent() {
		t.Fatal("computed totals are not consistent")
	}
	zeroVAT := ComputeTotals([]int64{1001}, 0, 0)
	if zeroVAT.VATMinor != 0 || zeroVAT.TotalMinor != 1001 {
		t.Fatalf("zero VAT totals = %+v", zeroVAT)
	}
	half := ComputeTotals([]int64{1}, 0, 50) // 0.5 → 1
	if half.VATMinor != 1 {
		t.Fatalf("VAT on 1 at 50%% = %d, want 1", half.VATMinor)
	}
	if (Totals{SubtotalMinor: 100, VATMinor: 20, TotalMinor: 121}).Consistent() {
		t.Fatal("inconsistent totals reported consistent")
	}
}

func TestOrderLineAmount(t *testing.T) {
	if got := OrderLineAmount(1.5, 999); got != 1499 { // 1498.5 → 1499
		t.Fatalf("OrderLineAmount(1.5, 999) = %d, want 1499", got)
	}
}

func TestValidCurrency(t *testing.T) {
	for _, ok := range []string{"GBP", "EUR", "USD"} {
		if !ValidCurrency(ok) {
			t.Errorf("%s rejected", ok)
		}
	}
	for _, bad := range []string{"gbp", "GB", "GBPX", "", "G1P"} {
		if ValidCurrency(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Totals never wrap round: figures past an int64 saturate, and Problem
// refuses them, as it refuses negative figures and a discount beyond the
// subtotal.
func TestTotalsSaturateAndAreChecked(t *testing.T) {
	huge := ComputeTotals([]int64{math.MaxInt64, math.MaxInt64}, 0, 20)
	if huge.SubtotalMinor != math.MaxInt64 || huge.TotalMinor != math.MaxInt64 || huge.Problem() == "" {
		t.Fatalf("overflowing totals %+v, problem %q", huge, huge.Problem())
	}
	if ok := ComputeTotals([]int64{1000, 250}, 50, 20); ok != (Totals{SubtotalMinor: 1250, DiscountMinor: 50, VATMinor: 240, TotalMinor: 1440}) || ok.Problem() != "" {
		t.Fatalf("totals %+v, problem %q", ok, ok.Problem())
	}
	if p := ComputeTotals([]int64{100}, 500, 20).Problem(); !strings.Contains(p, "discount_minor 500 is more than the subtotal 100") {
		t.Fatalf("discount beyond the subtotal: %q", p)
	}
	if p := (Totals{SubtotalMinor: -1, TotalMinor: -1}).Problem(); !strings.Contains(p, "zero or more") {
		t.Fatalf("negative totals: %q", p)
	}
}
