// Package signature signs and verifies the service's webhook and inbound
// signatures, by two schemes. The first is the header
//
//	X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
//
// the same construction as Stripe's, so existing verification code works. A
// header may carry several v1 values (during a secret rotation); any match
// passes. The HMAC key is the whole secret string, "whsec_" prefix included.
// The second is Standard Webhooks (standardwebhooks.com, standard.go),
// keyed with the bytes the secret encodes. Every delivery carries both
// (SignRequest); an inbound post verifies by either (VerifyRequest). An
// inbound endpoint may verify its sender's own scheme instead: an HMAC of
// the body in a header of the sender's choosing (HMAC, hmac.go), as GitHub
// and Shopify sign.
//
// Receivers of the service's webhooks can use this package directly:
//
//	// X-Service-Signature only:
//	err := signature.Verify(r.Header.Get(signature.Header), secret, body, time.Now(), signature.DefaultTolerance)
//	// either scheme:
//	_, err = signature.VerifyRequest(r.Header.Get, secret, body, time.Now(), signature.DefaultTolerance)
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the signature header's name.
const Header = "X-Service-Signature"

// DefaultTolerance is how far the signed time may be from the receiver's
// clock: older (or newer) signatures are refused, so a captured request
// cannot be replayed later.
const DefaultTolerance = 5 * time.Minute

// Errors Verify returns.
var (
	ErrMissing   = errors.New("signature header is missing")
	ErrMalformed = errors.New("signature header is not t=<unix>,v1=<hex>")
	ErrStale     = errors.New("signature timestamp is outside the tolerance")
	ErrMismatch  = errors.New("signature does not match")
)

// Compute returns the hex HMAC-SHA256 of "<t>.<body>" under secret.
func Compute(secret string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns the header value for body signed at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := t.Unix()
	return fmt.Sprintf("t=%d,v1=%s", ts, Compute(secret, ts, body))
}

// SignAll returns the header value for body signed at t with each of
// secrets, one v1 per secret: during a secret rotation both the new and the
// old secret sign, so a receiver holding either verifies.
func SignAll(secrets []string, t time.Time, body []byte) string {
	ts := t.Unix()
	v := fmt.Sprintf("t=%d", ts)
	for _, s := range secrets {
		v += ",v1=" + Compute(s, ts, body)
	}
	return v
}

// Verify checks a header value against body: its timestamp must be within
// tolerance of now and one of its v1 signatures must be the body's under
// secret (compared in constant time).
func Verify(header, secret string, body []byte, now time.Time, tolerance time.Duration) error {
	_, err := Verified(header, secret, body, now, tolerance)
	return err
}

// Verified checks a header value as Verify does and returns the v1 value
// that matched (hex): the same post signed once has the same value, so a
// receiver can recognise a post sent again.
func Verified(header, secret string, body []byte, now time.Time, tolerance time.Duration) (string, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", ErrMissing
	}
	var ts int64 = -1
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return "", ErrMalformed
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ts != -1 {
				return "", ErrMalformed
			}
			ts = n
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return "", ErrMalformed
			}
			sigs = append(sigs, b)
		}
	}
	if ts < 0 || len(sigs) == 0 {
		return "", ErrMalformed
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return "", ErrStale
	}
	value := Compute(secret, ts, body)
	want, _ := hex.DecodeString(value)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return value, nil
		}
	}
	return "", ErrMismatch
}
