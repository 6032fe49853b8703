package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/signature"
)

var github = signature.HMAC{Header: "X-Hub-Signature-256", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}

func headers(m map[string]string) func(string) string {
	return func(name string) string { return m[name] }
}

// GitHub's documented example: the secret "It's a Secret to Everybody"
// and the payload "Hello, World!".
func TestHMACVerifiesGitHubsExample(t *testing.T) {
	h := map[string]string{"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}
	v, err := github.Verified(headers(h), "It's a Secret to Everybody", []byte("Hello, World!"), time.Now())
	if err != nil || v != "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Fatalf("Verified = %q, %v", v, err)
	}
	// The hex in upper case is the same signature, and the same value.
	h["X-Hub-Signature-256"] = "sha256=" + strings.ToUpper(strings.TrimPrefix(h["X-Hub-Signature-256"], "sha256="))
	if again, err := github.Verified(headers(h), "It's a Secret to Everybody", []byte("Hello, World!"), time.Now()); err != nil || again != v {
		t.Fatalf("upper-case hex = %q, %v", again, err)
	}
	for name, c := range map[string]struct {
		value, body string
		want        error
	}{
		"another body":      {h["X-Hub-Signature-256"], "Hello, World?", signature.ErrMismatch},
		"no prefix":         {strings.TrimPrefix(h["X-Hub-Signature-256"], "sha256="), "Hello, World!", signature.ErrHMACValue},
		"not hex":           {"sha256=zz", "Hello, World!", signature.ErrHMACValue},
		"a SHA-1 HMAC":      {"sha256=0123456789abcdef0123456789abcdef01234567", "Hello, World!", signature.ErrHMACValue},
		"no header at all":  {"", "Hello, World!", signature.ErrMissing},
		"only spaces in it": {"   ", "Hello, World!", signature.ErrMissing},
	} {
		_, err := github.Verified(headers(map[string]string{"X-Hub-Signature-256": c.value}), "It's a Secret to Everybody", []byte(c.body), time.Now())
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "X-Hub-Signature-256") {
			t.Errorf("%s: %v, want %v naming the header", name, err, c.want)
		}
	}
}

// Shopify's scheme: the standard base64 of the HMAC-SHA256 of the body.
func TestHMACVerifiesShopifysScheme(t *testing.T) {
	shopify := signature.HMAC{Header: "X-Shopify-Hmac-Sha256", Algorithm: "sha256", Encoding: "base64"}
	body := []byte(`{"id": 1}`)
	m := hmac.New(sha256.New, []byte("shpss_secret"))
	m.Write(body)
	value := base64.StdEncoding.EncodeToString(m.Sum(nil))
	if _, err := shopify.Verified(headers(map[string]string{"X-Shopify-Hmac-Sha256": value}), "shpss_secret", body, time.Now()); err != nil {
		t.Fatal(err)
	}
	signed, err := shopify.Sign("shpss_secret", time.Now(), body)
	if err != nil || signed["X-Shopify-Hmac-Sha256"] != value || len(signed) != 1 {
		t.Fatalf("Sign = %v, %v; want %s alone", signed, err, value)
	}
}

// With a timestamp header, the signed content is "<timestamp>.<body>" and
// a timestamp outside the tolerance is stale, signed or not.
func TestHMACWithATimestampSignsItAndRefusesItStale(t *testing.T) {
	s := signature.HMAC{Header: "X-Signature", Algorithm: "sha512", Encoding: "hex", TimestampHeader: "X-Timestamp", Tolerance: 5 * time.Minute}
	body := []byte(`{"order_ref": "SO-1"}`)
	now := time.Now()
	signed, err := s.Sign("k", now, body)
	if err != nil || signed["X-Timestamp"] != strconv.FormatInt(now.Unix(), 10) {
		t.Fatalf("Sign = %v, %v", signed, err)
	}
	if _, err := s.Verified(headers(signed), "k", body, now.Add(4*time.Minute)); err != nil {
		t.Fatalf("within the tolerance: %v", err)
	}
	if _, err := s.Verified(headers(signed), "k", body, now.Add(6*time.Minute)); !errors.Is(err, signature.ErrStale) {
		t.Fatalf("six minutes later: %v, want stale", err)
	}
	// The body alone, without the timestamp, is not what was signed.
	plain := s
	plain.TimestampHeader = ""
	bodyOnly, _ := plain.Sign("k", now, body)
	bodyOnly["X-Timestamp"] = signed["X-Timestamp"]
	if _, err := s.Verified(headers(bodyOnly), "k", body, now); !errors.Is(err, signature.ErrMismatch) {
		t.Fatalf("an HMAC of the body alone: %v, want a mismatch", err)
	}
	for _, ts := range []string{"", "yesterday", "-1"} {
		signed["X-Timestamp"] = ts
		if _, err := s.Verified(headers(signed), "k", body, now); !errors.Is(err, signature.ErrTimestamp) {
			t.Errorf("timestamp %q: %v, want ErrTimestamp", ts, err)
		}
	}
}
