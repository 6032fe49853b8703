package secrets

import (
	"bytes"
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
	if s := NewSigningSecret(); !regexp.MustCompile(`^whsec_[A-Za-z0-9_-]{43}$`).MatchString(s) {
		t.Fatalf("secret %q does not look like whsec_ + 43 base64url characters", s)
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
	secret := NewSigningSecret()
	sealed := s.Seal(secret)
	if bytes.Contains(sealed, []byte(secret)) {
		t.Fatal("sealed secret contains the plaintext")
	}
	got, err := s.Open(sealed)
	if err != nil || got != secret {
		t.Fatalf("Open = %q, %v; want the secret", got, err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed); err == nil {
		t.Fatal("a tampered secret opened")
	}
	otherKey, _ := ParseServiceKey(NewServiceKey())
	other, _ := NewSealer(otherKey)
	if _, err := other.Open(s.Seal(secret)); err == nil {
		t.Fatal("a secret opened under another key")
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
