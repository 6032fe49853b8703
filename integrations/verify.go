package integrations

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/signature"
)

// How an inbound endpoint verifies its sender
// (docs/design.md#sender-verification): the intake's signature stage and a
// replay's check both ask verify, with the post's headers and the clock to
// judge its timestamps by.

// basicChallenge is the WWW-Authenticate of a basic endpoint's 401.
const basicChallenge = `Basic realm="inbound endpoint", charset="UTF-8"`

// checkSignature verifies a post as its endpoint verifies its sender: the
// service's signature (either scheme) on a service endpoint that requires
// one, the sender's HMAC on an hmac endpoint, Basic credentials on a basic
// one; nothing on a none endpoint. What verified a signature names the
// post for its sender's retries (senderRetryKeys), so that a captured
// signed post sent again runs nothing; Basic credentials are the same on
// every post and name none.
func (p *Posts) checkSignature(_ context.Context, in *post) (*Answer, error) {
	v, err := verify(p.Sealer, in.endpoint, in.Header.Get, in.body, time.Now())
	var refused *unverified
	switch {
	case errors.As(err, &refused):
		a := refuse(http.StatusUnauthorized, refused.Error())
		a.Challenge = refused.challenge
		return a, nil
	case err != nil:
		return nil, err
	}
	in.signed = v
	return nil, nil
}

// unverified is a post its endpoint's verification refuses: what was
// required (a signature, Basic credentials), what was wrong with what came,
// and for Basic the 401's WWW-Authenticate.
type unverified struct{ what, reason, challenge string }

func (u *unverified) Error() string { return u.what + " required and missing or wrong: " + u.reason }

// verify checks a post's headers and body as ep verifies its sender, at
// now: an *unverified error when they do not pass, any other error for a
// fault of the service (a secret that cannot be opened).
func verify(sealer *secrets.Sealer, ep db.Endpoint, header func(string) string, body []byte, now time.Time) (signature.Signed, error) {
	switch ep.Verification {
	case domain.VerifyNone:
		return signature.Signed{}, nil
	case domain.VerifyHMAC:
		secret, err := VerificationSecret(sealer, ep)
		if err != nil {
			return signature.Signed{}, err
		}
		value, err := HMACScheme(ep).Verified(header, secret, body, now)
		if err != nil {
			return signature.Signed{}, &unverified{what: "signature", reason: err.Error()}
		}
		return signature.Signed{Values: []string{value}}, nil
	case domain.VerifyBasic:
		password, err := VerificationSecret(sealer, ep)
		if err != nil {
			return signature.Signed{}, err
		}
		if msg := checkBasic(header("Authorization"), ep.VerificationConfig.Username, password); msg != "" {
			return signature.Signed{}, &unverified{what: "HTTP Basic credentials", reason: msg, challenge: basicChallenge}
		}
		return signature.Signed{}, nil
	case domain.VerifyService:
		if !ep.RequireSignature {
			return signature.Signed{}, nil
		}
		secret, err := EndpointSecret(sealer, ep)
		if err != nil {
			return signature.Signed{}, err
		}
		signed, err := signature.VerifyRequest(header, secret, body, now, signature.DefaultTolerance)
		if err != nil {
			return signed, &unverified{what: "signature", reason: err.Error()}
		}
		return signed, nil
	}
	return signature.Signed{}, fmt.Errorf("endpoint %s has an unknown verification %q", ep.ID, ep.Verification)
}

// HMACScheme is the sender's HMAC scheme an hmac endpoint verifies.
func HMACScheme(ep db.Endpoint) signature.HMAC {
	c := ep.VerificationConfig.HMAC
	if c == nil {
		return signature.HMAC{}
	}
	return signature.HMAC{Header: c.Header, Algorithm: c.Algorithm, Encoding: c.Encoding, Prefix: c.Prefix,
		TimestampHeader: c.TimestampHeader, Tolerance: c.Tolerance()}
}

// checkBasic compares Basic credentials with the endpoint's, each in
// constant time (their SHA-256, so that not even their lengths tell): ""
// when they match, else what is wrong.
func checkBasic(authorization, username, password string) string {
	scheme, encoded, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "send an Authorization: Basic header with the endpoint's username and password"
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil {
		return "the Authorization header is not Basic base64(username:password)"
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "the Authorization header is not Basic base64(username:password)"
	}
	gotUser, wantUser := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(username))
	gotPass, wantPass := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(password))
	if subtle.ConstantTimeCompare(gotUser[:], wantUser[:])&subtle.ConstantTimeCompare(gotPass[:], wantPass[:]) != 1 {
		return "the username or password is wrong"
	}
	return ""
}

// VerificationSecret opens an hmac or basic endpoint's secret (the HMAC
// key, the Basic password) with the service key's sealer.
func VerificationSecret(sealer *secrets.Sealer, ep db.Endpoint) (string, error) {
	sealed, ok := ep.SealedVerificationSecret()
	if !ok {
		return "", fmt.Errorf("the endpoint verifies by %s and has no secret", ep.Verification)
	}
	if sealer == nil {
		return "", errors.New("opening the endpoint's verification secret needs COMMERCE_SECRET_KEY")
	}
	return sealer.OpenSealed(sealed)
}

// signedHeaders are the headers an endpoint's own scheme reads besides the
// fixed ones a receipt keeps: an hmac endpoint's signature header and
// timestamp header, which its receipts keep too, so a replay verifies them
// again. A basic endpoint's Authorization is never kept: it is the same
// password on every post.
func signedHeaders(ep db.Endpoint) []string {
	c := ep.VerificationConfig.HMAC
	if ep.Verification != domain.VerifyHMAC || c == nil {
		return nil
	}
	if c.TimestampHeader == "" {
		return []string{c.Header}
	}
	return []string{c.Header, c.TimestampHeader}
}

// plainHeaders are the headers a receipt keeps whose values are not
// credentials, shown as they came.
var plainHeaders = []string{"Content-Type", "Content-Length", "User-Agent", "X-Request-Id", "X-Forwarded-For",
	signature.HeaderWebhookID, signature.HeaderWebhookTimestamp, domain.IdempotencyKeyHeader}

// MaskedHeaders is a post's or receipt's kept headers as they may be shown
// (support's receipts, a mapping's input): the values of the headers that
// carry a credential masked with "***". Of X-Service-Signature it keeps t
// and the names of the values (t=...,v1=***), of webhook-signature the
// versions (v1,*** v1,***); the hmac header ep names, Authorization, and any
// header not known to be plain (one an earlier scheme of the endpoint
// named) are "***" whole. A kept signature is a credential for the body it
// signs: within its tolerance, or for good when it signs no timestamp.
func MaskedHeaders(ep db.Endpoint, h map[string]string) map[string]string {
	plain := func(name string) bool {
		for _, p := range plainHeaders {
			if strings.EqualFold(p, name) {
				return true
			}
		}
		c := ep.VerificationConfig.HMAC
		return c != nil && c.TimestampHeader != "" && strings.EqualFold(c.TimestampHeader, name)
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		switch {
		case strings.EqualFold(k, signature.Header):
			parts := strings.Split(v, ",")
			for i, p := range parts {
				if name, _, ok := strings.Cut(strings.TrimSpace(p), "="); ok && name != "t" {
					parts[i] = name + "=***"
				}
			}
			v = strings.Join(parts, ",")
		case strings.EqualFold(k, signature.HeaderWebhookSignature):
			values := strings.Fields(v)
			for i, p := range values {
				version, _, _ := strings.Cut(p, ",")
				values[i] = version + ",***"
			}
			v = strings.Join(values, " ")
		case !plain(k):
			v = "***"
		}
		out[k] = v
	}
	return out
}

// keptHeader reads a header of a receipt's kept headers by name, in any
// case.
func keptHeader(h map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := h[name]; ok {
			return v
		}
		for k, v := range h {
			if strings.EqualFold(k, name) {
				return v
			}
		}
		return ""
	}
}
