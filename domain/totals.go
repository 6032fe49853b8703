package domain

import "math/big"

// QuoteLineAmount is the net value of a quote line: amount_override_minor
// when the seller pinned it, otherwise qty × unit_price_minor × (1 −
// discount_pct/100), rounded half-up once.
func QuoteLineAmount(qty float64, unitPriceMinor int64, discountPct *float64, overrideMinor *int64) int64 {
	if overrideMinor != nil {
		return *overrideMinor
	}
	v := new(big.Rat).Mul(Decimal(qty), new(big.Rat).SetInt64(unitPriceMinor))
	if discountPct != nil {
		keep := new(big.Rat).Sub(big.NewRat(1, 1), new(big.Rat).Quo(Decimal(*discountPct), big.NewRat(100, 1)))
		v.Mul(v, keep)
	}
	return mustMinor(v)
}

// OrderLineAmount is qty × unit_price_minor rounded half-up.
func OrderLineAmount(qty float64, unitPriceMinor int64) int64 {
	return mustMinor(new(big.Rat).Mul(Decimal(qty), new(big.Rat).SetInt64(unitPriceMinor)))
}

// Totals are the stored money figures of a quote or an order.
type Totals struct {
	SubtotalMinor int64
	DiscountMinor int64
	VATMinor      int64
	TotalMinor    int64
}

// DefaultVATPct is the VAT rate of a quote or order that does not name one.
const DefaultVATPct = 20.0

// ComputeTotals derives the totals from line amounts: subtotal is their sum;
// VAT is round_half_up((subtotal − discount) × vat_pct / 100); total is
// subtotal − discount + VAT.
func ComputeTotals(lineAmounts []int64, discountMinor int64, vatPct float64) Totals {
	var subtotal int64
	for _, a := range lineAmounts {
		subtotal += a
	}
	net := new(big.Rat).SetInt64(subtotal - discountMinor)
	vat := mustMinor(net.Mul(net, new(big.Rat).Quo(Decimal(vatPct), big.NewRat(100, 1))))
	return Totals{
		SubtotalMinor: subtotal,
		DiscountMinor: discountMinor,
		VATMinor:      vat,
		TotalMinor:    subtotal - discountMinor + vat,
	}
}

// Consistent reports whether given totals obey total = subtotal − discount + vat.
func (t Totals) Consistent() bool {
	return t.TotalMinor == t.SubtotalMinor-t.DiscountMinor+t.VATMinor
}
