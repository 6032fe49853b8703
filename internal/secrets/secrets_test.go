package secrets

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
)

func TestNewAPIKeyShape(t *testing.T) {
	key, prefix := NewAPIKey()
	if !regexp.MustCompile(`^ck_[A-Za-z0-9_-]{43}$`).MatchString(key) {
		t.Fatalf("key %q does not look like ck_ + 43 base64url characters", key)
	}
	if prefix != key[:9] || !strings.HasPrefix(key, prefix) {
		t.Fatalf("prefix %q is not the key's first 9 characters", prefix)
	}
	other, _ := NewAPIKey()
	if other == key {
		t.Fatal("two keys are equal")
	}
	if bytes.Equal(Hash(key), Hash(other)) || len(Hash(key)) != 32 {
		t.Fatal("hashes are not distinct 32-byte digests")
	}
}

func TestSigningSecretShape(t *testing.T) {
	s := NewSigningSecret()
	if !regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`).MatchString(s) {
		t.Fatalf("secret %q does not look like whsec_ + 44 standard base64 characters", s)
	}
	if key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SigningSecretPrefix)); err != nil || len(key) != 32 {
		t.Fatalf("secret %q is not whsec_ + the standard base64 of 32 bytes: %d bytes, %v", s, len(key), err)
	}
}

func TestSealerRoundTripAndTamper(t *testing.T) {
	key, err := ParseServiceKey(NewServiceKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	at := Binding{Table: "webhook_subscriptions", Row: "0193e3c0-0000-7000-8000-000000000001"}
	secret := NewSigningSecret()
	sealed := s.Seal(secret, at)
	if bytes.Contains(sealed, []byte(secret)) {
		t.Fatal("sealed secret contains the plaintext")
	}
	got, err := s.Open(sealed, at)
	if err != nil || got != secret {
		t.Fatalf("Open = %q, %v; want the secret", got, err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, at); err == nil {
		t.Fatal("a tampered secret opened")
	}
	otherKey, _ := ParseServiceKey(NewServiceKey())
	other, _ := NewSealer(otherKey)
	if _, err := other.Open(s.Seal(secret, at), at); err == nil {
		t.Fatal("a secret opened under another key")
	}
}

// A sealed value opens only in the row and table it was sealed for; one
// sealed before bindings existed (no associated data) still opens anywhere
// until it is sealed again, and Bound tells the two apart.
func TestSealedSecretOpensOnlyInItsOwnRow(t *testing.T) {
	s, _ := NewSealer(make([]byte, KeySize))
	secret := NewSigningSecret()
	row := Binding{Table: "inbound_endpoints", Row: "0193e3c0-0000-7000-8000-000000000001"}
	sealed := s.Seal(secret, row)
	if !Bound(sealed) {
		t.Fatal("a new sealed value is not in the bound format")
	}
	for _, elsewhere := range []Binding{
		{Table: "inbound_endpoints", Row: "0193e3c0-0000-7000-8000-000000000002"},
		{Table: "webhook_subscriptions", Row: row.Row},
		{Table: "inbound_endpoints", Row: ""},
	} {
		if got, err := s.Open(sealed, elsewhere); err == nil {
			t.Errorf("sealed for %v, opened at %v: %q", row, elsewhere, got)
		}
	}
	// Stripping the version prefix does not turn it into an unbound value.
	if _, err := s.Open(sealed[len(BoundPrefix()):], row); err == nil {
		t.Error("a bound value without its prefix opened")
	}

	nonce := make([]byte, s.aead.NonceSize())
	legacy := s.aead.Seal(nonce, nonce, []byte(secret), nil)
	if Bound(legacy) {
		t.Fatal("an unbound value is reported bound")
	}
	for _, at := range []Binding{row, {Table: "webhook_subscriptions", Row: "x"}} {
		if got, err := s.Open(legacy, at); err != nil || got != secret {
			t.Errorf("unbound value at %v: %q, %v; want the secret", at, got, err)
		}
	}
}

func TestParseServiceKey(t *testing.T) {
	hexKey := strings.Repeat("ab", 32)
	if k, err := ParseServiceKey(hexKey); err != nil || len(k) != 32 {
		t.Fatalf("hex key: %v", err)
	}
	if k, err := ParseServiceKey("q83vq83vq83vq83vq83vq83vq83vq83vq83vq83vq80="); err != nil || len(k) != 32 {
		t.Fatalf("base64 key: %v", err)
	}
	for _, bad := range []string{"", "abc", strings.Repeat("ab", 31), strings.Repeat("zz", 32)} {
		if _, err := ParseServiceKey(bad); err == nil {
			t.Errorf("ParseServiceKey(%q) accepted", bad)
		}
	}
}
