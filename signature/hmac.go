package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// HMAC is a sender's own signature scheme, which an inbound endpoint may
// verify instead of the service's: an HMAC of the body as sent, keyed with
// the whole secret string, in a header of the sender's choosing, encoded
// in hex or base64 after an optional prefix. GitHub's is
//
//	HMAC{Header: "X-Hub-Signature-256", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}
//
// and Shopify's HMAC{Header: "X-Shopify-Hmac-Sha256", Algorithm: "sha256",
// Encoding: "base64"}. With TimestampHeader, the signed content is
// "<timestamp>.<body>", the timestamp (unix seconds) exactly as sent in
// that header, and one more than Tolerance from the clock is stale.
type HMAC struct {
	Header          string
	Algorithm       string // "sha256" or "sha512"
	Encoding        string // "hex" or "base64"
	Prefix          string
	TimestampHeader string
	Tolerance       time.Duration
}

// Errors of a sender's HMAC scheme besides ErrStale and ErrMismatch.
var (
	ErrHMACScheme = errors.New("the HMAC scheme's algorithm must be sha256 or sha512 and its encoding hex or base64")
	// ErrHMACValue: the header's value is not the prefix and an encoded
	// HMAC of the algorithm's size.
	ErrHMACValue = errors.New("is not the expected prefix followed by an encoded HMAC")
	// ErrTimestamp: the timestamp header is missing or not unix seconds.
	ErrTimestamp = errors.New("must carry the time it was signed, in unix seconds")
)

func (h HMAC) hash() (func() hash.Hash, error) {
	switch h.Algorithm {
	case "sha256":
		return sha256.New, nil
	case "sha512":
		return sha512.New, nil
	}
	return nil, ErrHMACScheme
}

// mac is the HMAC of the signed content: the body, or "<ts>.<body>".
func (h HMAC) mac(secret, ts string, body []byte) ([]byte, error) {
	newHash, err := h.hash()
	if err != nil {
		return nil, err
	}
	m := hmac.New(newHash, []byte(secret))
	if h.TimestampHeader != "" {
		m.Write([]byte(ts))
		m.Write([]byte("."))
	}
	m.Write(body)
	return m.Sum(nil), nil
}

// Sign returns the headers a sender of the scheme sends with body, signed
// at t: the signature header, and the timestamp header when the scheme
// signs one.
func (h HMAC) Sign(secret string, t time.Time, body []byte) (map[string]string, error) {
	ts := strconv.FormatInt(t.Unix(), 10)
	sum, err := h.mac(secret, ts, body)
	if err != nil {
		return nil, err
	}
	var value string
	switch h.Encoding {
	case "hex":
		value = hex.EncodeToString(sum)
	case "base64":
		value = base64.StdEncoding.EncodeToString(sum)
	default:
		return nil, ErrHMACScheme
	}
	out := map[string]string{h.Header: h.Prefix + value}
	if h.TimestampHeader != "" {
		out[h.TimestampHeader] = ts
	}
	return out, nil
}

// Verified checks a request's signature by the scheme, header giving a
// header's value by name: its timestamp, when the scheme signs one, within
// Tolerance of now, and its value the HMAC of the signed content under
// secret (compared in constant time). It returns the value that matched,
// as hex whatever the encoding: the same post signed once has the same
// value, so a receiver can recognise it sent again. An error names the
// header at fault.
func (h HMAC) Verified(header func(name string) string, secret string, body []byte, now time.Time) (string, error) {
	newHash, err := h.hash()
	if err != nil {
		return "", err
	}
	raw := strings.TrimSpace(header(h.Header))
	if raw == "" {
		return "", fmt.Errorf("%s: %w", h.Header, ErrMissing)
	}
	if len(raw) < len(h.Prefix) || !strings.EqualFold(raw[:len(h.Prefix)], h.Prefix) {
		return "", fmt.Errorf("%s %w", h.Header, ErrHMACValue)
	}
	got, ok := decodeHMAC(h.Encoding, raw[len(h.Prefix):], newHash().Size())
	if !ok {
		return "", fmt.Errorf("%s %w", h.Header, ErrHMACValue)
	}
	var ts string
	if h.TimestampHeader != "" {
		ts = strings.TrimSpace(header(h.TimestampHeader))
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			return "", fmt.Errorf("%s %w", h.TimestampHeader, ErrTimestamp)
		}
		if d := now.Sub(time.Unix(n, 0)); d > h.Tolerance || d < -h.Tolerance {
			return "", fmt.Errorf("%s: %w (%s)", h.TimestampHeader, ErrStale, h.Tolerance)
		}
	}
	want, err := h.mac(secret, ts, body)
	if err != nil {
		return "", err
	}
	if !hmac.Equal(got, want) {
		return "", fmt.Errorf("%s: %w", h.Header, ErrMismatch)
	}
	return hex.EncodeToString(want), nil
}

// decodeHMAC decodes an HMAC of size bytes written in encoding: hex in
// either case, base64 standard or URL-safe, padded or not.
func decodeHMAC(encoding, s string, size int) ([]byte, bool) {
	var b []byte
	var err error
	switch encoding {
	case "hex":
		b, err = hex.DecodeString(s)
	case "base64":
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err = enc.DecodeString(s); err == nil {
				break
			}
		}
	default:
		return nil, false
	}
	return b, err == nil && len(b) == size
}
