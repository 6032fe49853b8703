package domain

import (
	"fmt"
	"math/big"
)

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
// subtotal − discount + VAT. Figures beyond an int64 saturate (and are then
// refused as beyond MaxMoneyMinor), rather than wrapping round.
func ComputeTotals(lineAmounts []int64, discountMinor int64, vatPct float64) Totals {
	sum := new(big.Int)
	for _, a := range lineAmounts {
		sum.Add(sum, big.NewInt(a))
	}
	net := new(big.Rat).SetInt(new(big.Int).Sub(sum, big.NewInt(discountMinor)))
	vat := mustMinor(new(big.Rat).Mul(net, new(big.Rat).Quo(Decimal(vatPct), big.NewRat(100, 1))))
	total := new(big.Int).Add(net.Num(), big.NewInt(vat))
	return Totals{
		SubtotalMinor: mustMinor(new(big.Rat).SetInt(sum)),
		DiscountMinor: discountMinor,
		VATMinor:      vat,
		TotalMinor:    mustMinor(new(big.Rat).SetInt(total)),
	}
}

// MaxMoneyMinor bounds a quote's or an order's figures: ten trillion major
// units, far beyond any real document and far inside an int64.
const MaxMoneyMinor int64 = 1e15

// Problem names what is wrong with totals, or "" when they are sound: none
// below zero, the discount within the subtotal, none beyond MaxMoneyMinor.
func (t Totals) Problem() string {
	switch {
	case t.DiscountMinor > t.SubtotalMinor && t.SubtotalMinor >= 0:
		return fmt.Sprintf("discount_minor %d is more than the subtotal %d", t.DiscountMinor, t.SubtotalMinor)
	case t.SubtotalMinor < 0 || t.VATMinor < 0 || t.TotalMinor < 0:
		return fmt.Sprintf("totals must be zero or more (subtotal_minor %d, vat_minor %d, total_minor %d)", t.SubtotalMinor, t.VATMinor, t.TotalMinor)
	case t.SubtotalMinor > MaxMoneyMinor || t.TotalMinor > MaxMoneyMinor:
		return fmt.Sprintf("the totals pass %d minor units, the most a document may carry", MaxMoneyMinor)
	}
	return ""
}

// Consistent reports whether given totals obey total = subtotal − discount + vat.
func (t Totals) Consistent() bool {
	return t.TotalMinor == t.SubtotalMinor-t.DiscountMinor+t.VATMinor
}
