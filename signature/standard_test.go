package signature

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test vector of the Standard Webhooks reference libraries: the same
// secret, id, time and body give their signature.
func TestStandardComputeMatchesTheReferenceVector(t *testing.T) {
	key, err := StandardKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := StandardCompute(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if got != "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %s", got)
	}
}

// A secret of the current format is read as standard base64; one of the
// earlier format (base64url, no padding) as base64url, and StandardSecret
// writes it the way Standard Webhooks libraries read it.
func TestStandardKeyReadsBothSecretFormats(t *testing.T) {
	raw := []byte{0xfb, 0xff, 0xbf, 0x00, 0x3e, 0x3f} // starts "+/+/" in standard base64, "-_-_" in base64url
	raw = append(raw, make([]byte, 26)...)
	current := "whsec_" + base64.StdEncoding.EncodeToString(raw)
	earlier := "whsec_" + base64.RawURLEncoding.EncodeToString(raw)
	for name, secret := range map[string]string{"current": current, "earlier": earlier} {
		key, err := StandardKey(secret)
		if err != nil || string(key) != string(raw) {
			t.Errorf("%s %s: key %x, %v", name, secret, key, err)
		}
		if s, err := StandardSecret(secret); err != nil || s != current {
			t.Errorf("%s: StandardSecret %q, %v; want %q", name, s, err, current)
		}
	}
	for _, bad := range []string{"", "whsec_", "whsec_not base64!", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if _, err := StandardKey(bad); !errors.Is(err, ErrSecret) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// SignRequest signs both schemes at the same second; each verifies on its
// own, and VerifyRequest names the values that matched.
func TestSignRequestSignsBothSchemes(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_800_000_000, 0)
	h := http.Header{}
	SignRequest(h, []string{secret}, "evt_1", now, body)
	if h.Get(HeaderWebhookID) != "evt_1" || h.Get(HeaderWebhookTimestamp) != "1800000000" || !strings.HasPrefix(h.Get(Header), "t=1800000000,") {
		t.Fatalf("headers %v", h)
	}
	key, _ := StandardKey(secret)
	if want := "v1," + StandardCompute(key, "evt_1", 1800000000, body); h.Get(HeaderWebhookSignature) != want {
		t.Fatalf("webhook-signature %s, want %s", h.Get(HeaderWebhookSignature), want)
	}
	signed, err := VerifyRequest(h.Get, secret, body, now, DefaultTolerance)
	if err != nil || len(signed.Values) != 2 || signed.MessageID != "evt_1" ||
		signed.Values[0] != Compute(secret, now.Unix(), body) || signed.Values[1] != h.Get(HeaderWebhookSignature) {
		t.Fatalf("%+v, %v", signed, err)
	}
	for name, drop := range map[string][]string{
		"X-Service-Signature alone": {HeaderWebhookID, HeaderWebhookTimestamp, HeaderWebhookSignature},
		"Standard Webhooks alone":   {Header},
	} {
		one := h.Clone()
		for _, k := range drop {
			one.Del(k)
		}
		if signed, err := VerifyRequest(one.Get, secret, body, now, DefaultTolerance); err != nil || len(signed.Values) != 1 {
			t.Errorf("%s: %+v, %v", name, signed, err)
		}
	}
	// A secret with no Standard Webhooks key signs X-Service-Signature only.
	plain := http.Header{}
	SignRequest(plain, []string{"not-a-whsec"}, "evt_1", now, body)
	if plain.Get(Header) == "" || plain.Get(HeaderWebhookSignature) != "" || plain.Get(HeaderWebhookID) != "" {
		t.Fatalf("headers %v", plain)
	}
}

func TestStandardVerifiedRefusals(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	key, _ := StandardKey(secret)
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	good := "v1," + StandardCompute(key, "evt_1", now.Unix(), body)
	other := "v1," + StandardCompute([]byte("another key"), "evt_1", now.Unix(), body)
	if v, err := StandardVerified("evt_1", ts, good, secret, body, now.Add(-5*time.Minute), DefaultTolerance); err != nil || v != good {
		t.Fatalf("good: %q, %v", v, err)
	}
	if v, err := StandardVerified("evt_1", ts, other+" v1a,ZWQyNTUxOQ== "+good, secret, body, now, DefaultTolerance); err != nil || v != good {
		t.Fatalf("one of several values matching: %q, %v", v, err)
	}
	cases := map[string]struct {
		id, ts, sig string
		body        []byte
		at          time.Time
		want        error
	}{
		"missing":          {"", "", "", body, now, ErrMissing},
		"no id":            {"", ts, good, body, now, ErrStandardHeaders},
		"no timestamp":     {"evt_1", "", good, body, now, ErrStandardHeaders},
		"no signature":     {"evt_1", ts, "", body, now, ErrStandardHeaders},
		"no v1":            {"evt_1", ts, "v1a,ZWQyNTUxOQ==", body, now, ErrStandardHeaders},
		"bad base64":       {"evt_1", ts, "v1,!!!", body, now, ErrStandardHeaders},
		"short value":      {"evt_1", ts, "v1,AAAA", body, now, ErrStandardHeaders},
		"id too long":      {strings.Repeat("x", MaxMessageID+1), ts, good, body, now, ErrStandardHeaders},
		"id not printable": {"evt\x00", ts, good, body, now, ErrStandardHeaders},
		"stale":            {"evt_1", ts, good, body, now.Add(5*time.Minute + time.Second), ErrStale},
		"future":           {"evt_1", ts, good, body, now.Add(-6 * time.Minute), ErrStale},
		"other key":        {"evt_1", ts, other, body, now, ErrMismatch},
		"other id":         {"evt_2", ts, good, body, now, ErrMismatch},
		"tampered body":    {"evt_1", ts, good, []byte(`{"id":"evt_2"}`), now, ErrMismatch},
	}
	for name, c := range cases {
		if _, err := StandardVerified(c.id, c.ts, c.sig, secret, c.body, c.at, DefaultTolerance); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// When neither scheme verifies, VerifyRequest says why by the scheme that
// was tried: missing when neither is there.
func TestVerifyRequestErrors(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	body := []byte(`{}`)
	now := time.Unix(1_800_000_000, 0)
	signed := http.Header{}
	SignRequest(signed, []string{secret}, "evt_1", now, body)
	standardOnly := signed.Clone()
	standardOnly.Del(Header)
	for name, c := range map[string]struct {
		h    http.Header
		body []byte
		want error
	}{
		"nothing":                 {http.Header{}, body, ErrMissing},
		"both, tampered":          {signed, []byte(`{"x":1}`), ErrMismatch},
		"Standard Webhooks stale": {standardOnly, body, ErrStale},
	} {
		at := now
		if name == "Standard Webhooks stale" {
			at = now.Add(time.Hour)
		}
		if s, err := VerifyRequest(c.h.Get, secret, c.body, at, DefaultTolerance); !errors.Is(err, c.want) || len(s.Values) != 0 || s.MessageID != "" {
			t.Errorf("%s: %+v, %v; want %v", name, s, err, c.want)
		}
	}
}
