package domain

import (
	"net/http"
	"strings"
	"time"
)

// Verification is how an inbound endpoint tells that a post comes from its
// sender (docs/design.md#sender-verification).
type Verification string

// The kinds of verification.
const (
	// VerifyService is the service's own signature, either scheme of
	// docs/design.md#signatures, on an endpoint made to require one; an
	// endpoint made without takes unsigned posts. The default.
	VerifyService Verification = "service"
	// VerifyHMAC is the sender's own HMAC of the body as sent, in a header
	// the endpoint names, with a secret the service makes (HMACConfig).
	VerifyHMAC Verification = "hmac"
	// VerifyBasic is HTTP Basic authentication with a username the
	// endpoint names and a password the service makes.
	VerifyBasic Verification = "basic"
	// VerifyNone verifies nothing: the token in the URL is the only
	// credential.
	VerifyNone Verification = "none"
)

// Verifications lists the kinds of verification.
var Verifications = []Verification{VerifyService, VerifyHMAC, VerifyBasic, VerifyNone}

// Valid reports whether v is a known kind.
func (v Verification) Valid() bool {
	switch v {
	case VerifyService, VerifyHMAC, VerifyBasic, VerifyNone:
		return true
	}
	return false
}

// HasSecret reports whether the kind verifies with a secret of its own
// (the HMAC key, the Basic password), made by the service and kept sealed.
func (v Verification) HasSecret() bool { return v == VerifyHMAC || v == VerifyBasic }

// The HMAC algorithms and encodings a sender may use.
const (
	HMACSHA256 = "sha256"
	HMACSHA512 = "sha512"
	HMACHex    = "hex"
	HMACBase64 = "base64"
)

// DefaultHMACTolerance is how far a signed timestamp may be from the clock
// when the endpoint sets no tolerance of its own.
const DefaultHMACTolerance = 300

// MaxHMACTolerance is the widest tolerance an endpoint may set: a day.
const MaxHMACTolerance = 86400

// HMACConfig is how a sender signs its posts with an HMAC: the header
// carrying the signature, its algorithm and encoding, and a prefix before
// the encoded value (GitHub's "sha256="). With TimestampHeader, the signed
// content is "<timestamp>.<body>", the timestamp (unix seconds) as sent in
// that header, and a timestamp more than ToleranceSeconds from the clock
// is refused; without, the signed content is the body as sent.
type HMACConfig struct {
	Header           string `json:"header"`
	Algorithm        string `json:"algorithm"`
	Encoding         string `json:"encoding"`
	Prefix           string `json:"prefix,omitempty"`
	TimestampHeader  string `json:"timestamp_header,omitempty"`
	ToleranceSeconds int    `json:"tolerance_seconds,omitempty"`
}

// Tolerance is how far the signed timestamp may be from the clock.
func (c HMACConfig) Tolerance() time.Duration { return time.Duration(c.ToleranceSeconds) * time.Second }

// VerificationConfig is the part of an endpoint's verification that is not
// secret, as the endpoint keeps it and its reads show it: the HMAC scheme
// of an hmac endpoint, the username of a basic one; empty for the others.
type VerificationConfig struct {
	HMAC     *HMACConfig `json:"hmac,omitempty"`
	Username string      `json:"username,omitempty"`
}

// SenderHeaders are the headers of a post that are the service's own
// business, which an endpoint's HMAC scheme may not name: those a receipt
// keeps for another purpose, and the credentials and routing of the
// request.
var SenderHeaders = []string{"Authorization", "Cookie", "Host", "Content-Type", "Content-Length", "Transfer-Encoding",
	"User-Agent", "X-Request-Id", "X-Forwarded-For", "X-Service-Signature", "Webhook-Id", "Webhook-Timestamp",
	"Webhook-Signature", IdempotencyKeyHeader}

// maxHeaderName bounds a configured header's name.
const maxHeaderName = 100

// maxPrefix bounds a configured signature prefix.
const maxPrefix = 50

// maxUsername bounds a basic endpoint's username.
const maxUsername = 200

// CheckVerification reads a verification to set on an endpoint: kind, and
// for hmac its scheme (cfg.HMAC), for basic its username (cfg.Username),
// and nothing else. It returns the configuration to keep, normalised (the
// header names in their canonical form, the algorithm and encoding in lower
// case, the default tolerance when a timestamp is signed), or EINVALID
// naming the field that is wrong.
func CheckVerification(kind Verification, cfg VerificationConfig) (VerificationConfig, error) {
	if !kind.Valid() {
		return cfg, Errorf(EINVALID, "kind %q is not one of %s", kind, JoinValues(Verifications))
	}
	if kind != VerifyHMAC && cfg.HMAC != nil {
		return cfg, Errorf(EINVALID, "hmac is only for kind hmac")
	}
	if kind != VerifyBasic && cfg.Username != "" {
		return cfg, Errorf(EINVALID, "username is only for kind basic")
	}
	switch kind {
	case VerifyHMAC:
		if cfg.HMAC == nil {
			return cfg, Errorf(EINVALID, "hmac is required for kind hmac: {header, algorithm, encoding, prefix?, timestamp_header?, tolerance_seconds?}")
		}
		h, err := checkHMAC(*cfg.HMAC)
		return VerificationConfig{HMAC: &h}, err
	case VerifyBasic:
		u, err := checkUsername(cfg.Username)
		return VerificationConfig{Username: u}, err
	}
	return VerificationConfig{}, nil
}

func checkHMAC(c HMACConfig) (HMACConfig, error) {
	var err error
	if c.Header, err = checkHeaderName("hmac.header", c.Header); err != nil {
		return c, err
	}
	if c.Algorithm = strings.ToLower(strings.TrimSpace(c.Algorithm)); c.Algorithm != HMACSHA256 && c.Algorithm != HMACSHA512 {
		return c, Errorf(EINVALID, "hmac.algorithm must be %s or %s", HMACSHA256, HMACSHA512)
	}
	if c.Encoding = strings.ToLower(strings.TrimSpace(c.Encoding)); c.Encoding != HMACHex && c.Encoding != HMACBase64 {
		return c, Errorf(EINVALID, "hmac.encoding must be %s or %s", HMACHex, HMACBase64)
	}
	if len(c.Prefix) > maxPrefix || !printable(c.Prefix) || strings.TrimSpace(c.Prefix) != c.Prefix {
		return c, Errorf(EINVALID, "hmac.prefix must be at most %d printable ASCII characters, without surrounding spaces", maxPrefix)
	}
	if c.TimestampHeader == "" {
		if c.ToleranceSeconds != 0 {
			return c, Errorf(EINVALID, "hmac.tolerance_seconds needs hmac.timestamp_header: without a signed timestamp there is nothing to be stale")
		}
		return c, nil
	}
	if c.TimestampHeader, err = checkHeaderName("hmac.timestamp_header", c.TimestampHeader); err != nil {
		return c, err
	}
	if c.TimestampHeader == c.Header {
		return c, Errorf(EINVALID, "hmac.timestamp_header must not be hmac.header")
	}
	switch {
	case c.ToleranceSeconds == 0:
		c.ToleranceSeconds = DefaultHMACTolerance
	case c.ToleranceSeconds < 1 || c.ToleranceSeconds > MaxHMACTolerance:
		return c, Errorf(EINVALID, "hmac.tolerance_seconds must be 1 to %d", MaxHMACTolerance)
	}
	return c, nil
}

// checkHeaderName reads a header name a sender's scheme names: an HTTP
// token, not one of SenderHeaders, in its canonical form.
func checkHeaderName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > maxHeaderName || !httpToken(name) {
		return "", Errorf(EINVALID, "%s must be a header name of 1 to %d letters, digits and - (an HTTP token)", field, maxHeaderName)
	}
	name = http.CanonicalHeaderKey(name)
	for _, h := range SenderHeaders {
		if strings.EqualFold(h, name) {
			return "", Errorf(EINVALID, "%s may not be %s: the service reads that header for itself", field, h)
		}
	}
	return name, nil
}

func checkUsername(u string) (string, error) {
	if u == "" || len(u) > maxUsername || !printable(u) || strings.Contains(u, ":") || strings.TrimSpace(u) != u {
		return "", Errorf(EINVALID, "username is required for kind basic: 1 to %d printable ASCII characters, no colon, without surrounding spaces", maxUsername)
	}
	return u, nil
}

// httpToken reports whether s is an HTTP token (RFC 9110 tchar).
func httpToken(s string) bool {
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// printable reports whether s is printable ASCII.
func printable(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
