package domain

import (
	"math"
	"math/big"
	"strconv"
)

// ValidCurrency reports whether code looks like an ISO 4217 code: three
// upper-case letters.
func ValidCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	for i := range 3 {
		if code[i] < 'A' || code[i] > 'Z' {
			return false
		}
	}
	return true
}

// Decimal returns the exact decimal value of a quantity or percentage as it
// was written (2.5 is 5/2, not the nearest binary fraction).
func Decimal(f float64) *big.Rat {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'f', -1, 64))
	return r
}

// RoundHalfUp rounds r to the nearest integer, halves away from zero, the
// one rounding rule every money figure of the service uses. It reports
// false when the result does not fit in an int64.
func RoundHalfUp(r *big.Rat) (int64, bool) {
	num := new(big.Int).Abs(r.Num())
	den := r.Denom()
	// floor((2*num + den) / (2*den)) = floor(|r| + 1/2)
	q := new(big.Int).Lsh(num, 1)
	q.Add(q, den)
	q.Quo(q, new(big.Int).Lsh(den, 1))
	if r.Sign() < 0 {
		q.Neg(q)
	}
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// mustMinor rounds a money amount that cannot realistically overflow; an
// overflow saturates so that a check downstream rejects the record.
func mustMinor(r *big.Rat) int64 {
	v, ok := RoundHalfUp(r)
	if !ok {
		if r.Sign() < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return v
}
