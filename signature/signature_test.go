package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestSignAndVerify(t *testing.T) {
	secret := "whsec_test"
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_800_000_000, 0)
	h := Sign(secret, now, body)
	// The construction, written out: HMAC-SHA256(secret, "<t>.<body>") in hex.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("1800000000." + string(body)))
	if h != "t=1800000000,v1="+hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("header %s", h)
	}
	if err := Verify(h, secret, body, now.Add(4*time.Minute), DefaultTolerance); err != nil {
		t.Fatalf("fresh signature refused: %v", err)
	}
	other := Compute("whsec_old", now.Unix(), body)
	rotated := fmt.Sprintf("t=%d,v1=%s,v1=%s", now.Unix(), other, Compute(secret, now.Unix(), body))
	if err := Verify(rotated, secret, body, now, DefaultTolerance); err != nil {
		t.Fatalf("one of several v1 values matching was refused: %v", err)
	}
	cases := map[string]struct {
		header, secret string
		body           []byte
		at             time.Time
		want           error
	}{
		"missing":       {"", secret, body, now, ErrMissing},
		"garbage":       {"nonsense", secret, body, now, ErrMalformed},
		"no v1":         {"t=1800000000", secret, body, now, ErrMalformed},
		"bad hex":       {"t=1800000000,v1=zz", secret, body, now, ErrMalformed},
		"two t":         {h + ",t=1800000000", secret, body, now, ErrMalformed},
		"stale":         {h, secret, body, now.Add(5*time.Minute + time.Second), ErrStale},
		"future":        {h, secret, body, now.Add(-6 * time.Minute), ErrStale},
		"wrong secret":  {h, "whsec_other", body, now, ErrMismatch},
		"tampered body": {h, secret, []byte(`{"id":"evt_2"}`), now, ErrMismatch},
	}
	for name, c := range cases {
		if err := Verify(c.header, c.secret, c.body, c.at, DefaultTolerance); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// Verified names the v1 value that matched, whichever of several it is, so
// that the same signed post sent again can be recognised by it.
func TestVerifiedReturnsTheMatchingValue(t *testing.T) {
	secret := "whsec_test"
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_800_000_000, 0)
	mine := Compute(secret, now.Unix(), body)
	for name, header := range map[string]string{
		"one value":           Sign(secret, now, body),
		"rotation, new first": fmt.Sprintf("t=%d,v1=%s,v1=%s", now.Unix(), mine, Compute("whsec_old", now.Unix(), body)),
		"rotation, new last":  fmt.Sprintf("t=%d,v1=%s,v1=%s", now.Unix(), Compute("whsec_old", now.Unix(), body), mine),
	} {
		got, err := Verified(header, secret, body, now, DefaultTolerance)
		if err != nil || got != mine {
			t.Errorf("%s: %q, %v; want %q", name, got, err, mine)
		}
	}
	if got, err := Verified(Sign(secret, now, body), "whsec_other", body, now, DefaultTolerance); got != "" || !errors.Is(err, ErrMismatch) {
		t.Errorf("wrong secret: %q, %v", got, err)
	}
}
