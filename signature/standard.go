package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (standardwebhooks.com), the second scheme
// every delivery carries:
//
//	webhook-id: <message id>
//	webhook-timestamp: <unix seconds>
//	webhook-signature: v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<raw body>")>
//
// several space-separated values in webhook-signature when several keys
// sign. The key is the bytes the secret's part after "whsec_" encodes
// (StandardKey), not the secret string.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// MaxMessageID is the longest webhook-id a verified request may carry: a
// message id names a post for the sender's retries and is kept that long.
const MaxMessageID = 255

// Errors of the Standard Webhooks scheme besides ErrStale and ErrMismatch.
var (
	ErrStandardHeaders = errors.New("webhook-id, webhook-timestamp and webhook-signature must all be present and well formed")
	ErrSecret          = errors.New("the secret is not whsec_ followed by base64")
)

// StandardKey is the Standard Webhooks key of a signing secret: the bytes
// its part after "whsec_" encodes. Secrets are issued as standard base64
// with padding, as Standard Webhooks libraries read them. Secrets issued
// before were base64url without padding; they decode with that alphabet
// (the two never overlap: one always ends with "=", the other never
// carries it), and a receiver gives Standard Webhooks libraries the same
// bytes in standard base64 (StandardSecret).
func StandardKey(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok || rest == "" {
		return nil, ErrSecret
	}
	if key, err := base64.StdEncoding.DecodeString(rest); err == nil {
		return key, nil
	}
	if key, err := base64.RawURLEncoding.DecodeString(rest); err == nil {
		return key, nil
	}
	return nil, ErrSecret
}

// StandardSecret writes a signing secret the way Standard Webhooks
// libraries read it: a secret of the current format as it is, one of the
// earlier base64url format as "whsec_" + the standard base64 of its key.
func StandardSecret(secret string) (string, error) {
	key, err := StandardKey(secret)
	if err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// StandardCompute returns the standard base64 HMAC-SHA256 of
// "<id>.<t>.<body>" under key.
func StandardCompute(key []byte, id string, t int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte("."))
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignRequest sets on h the signature headers of both schemes for body,
// signed at t with each of secrets (during a rotation the new and the old
// secret both sign): X-Service-Signature with one v1 per secret, and
// webhook-id (id), webhook-timestamp and webhook-signature with one
// space-separated v1 per secret, at the same second. A secret with no
// Standard Webhooks key (not one the service issued) signs
// X-Service-Signature only.
func SignRequest(h http.Header, secrets []string, id string, t time.Time, body []byte) {
	h.Set(Header, SignAll(secrets, t, body))
	ts := t.Unix()
	var standard []string
	for _, secret := range secrets {
		if key, err := StandardKey(secret); err == nil {
			standard = append(standard, "v1,"+StandardCompute(key, id, ts, body))
		}
	}
	if len(standard) == 0 {
		return
	}
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderWebhookSignature, strings.Join(standard, " "))
}

// StandardVerified checks the Standard Webhooks header values of a request
// against body: the timestamp must be within tolerance of now, the id 1 to
// MaxMessageID printable ASCII characters, and one of the signature's v1
// values the body's under the secret's key (compared in constant time;
// values of other versions are passed over). It returns the value that
// matched, as "v1,<base64>".
func StandardVerified(id, timestamp, signatures, secret string, body []byte, now time.Time, tolerance time.Duration) (string, error) {
	id, timestamp, signatures = strings.TrimSpace(id), strings.TrimSpace(timestamp), strings.TrimSpace(signatures)
	if id == "" && timestamp == "" && signatures == "" {
		return "", ErrMissing
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || ts < 0 || !printableASCII(id, MaxMessageID) {
		return "", ErrStandardHeaders
	}
	var sigs [][]byte
	for part := range strings.FieldsSeq(signatures) {
		version, value, ok := strings.Cut(part, ",")
		if !ok || version != "v1" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(value)
		if err != nil || len(b) != sha256.Size {
			return "", ErrStandardHeaders
		}
		sigs = append(sigs, b)
	}
	if len(sigs) == 0 {
		return "", ErrStandardHeaders
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return "", ErrStale
	}
	key, err := StandardKey(secret)
	if err != nil {
		return "", ErrMismatch
	}
	value := StandardCompute(key, id, ts, body)
	want, _ := base64.StdEncoding.DecodeString(value)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return "v1," + value, nil
		}
	}
	return "", ErrMismatch
}

// printableASCII reports whether s is 1 to max printable ASCII characters.
func printableASCII(s string, max int) bool {
	if len(s) < 1 || len(s) > max {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Signed is what verified a request (VerifyRequest).
type Signed struct {
	// Values are the signature values that matched, one for each scheme
	// that verified: the hex v1 of X-Service-Signature, the "v1,<base64>"
	// of webhook-signature. The same post signed once carries the same
	// values, so a receiver can recognise it sent again.
	Values []string
	// MessageID is the webhook-id when the Standard Webhooks headers
	// verified: the sender keeps it for every retry of a message.
	MessageID string
}

// VerifyRequest checks the signatures of a request by both schemes, header
// giving a header's value by name: it verifies when the headers of either
// scheme do (X-Service-Signature, or webhook-id, webhook-timestamp and
// webhook-signature), each within tolerance of now. When neither does, the
// error is ErrMissing if no scheme's headers are there, else the first
// present scheme's.
func VerifyRequest(header func(name string) string, secret string, body []byte, now time.Time, tolerance time.Duration) (Signed, error) {
	var out Signed
	service, serviceErr := Verified(header(Header), secret, body, now, tolerance)
	if serviceErr == nil {
		out.Values = append(out.Values, service)
	}
	id := header(HeaderWebhookID)
	standard, standardErr := StandardVerified(id, header(HeaderWebhookTimestamp), header(HeaderWebhookSignature), secret, body, now, tolerance)
	if standardErr == nil {
		out.Values = append(out.Values, standard)
		out.MessageID = strings.TrimSpace(id)
	}
	switch {
	case len(out.Values) > 0:
		return out, nil
	case !errors.Is(serviceErr, ErrMissing):
		return out, serviceErr
	}
	return out, standardErr
}
