// Package secrets makes and checks the service's credentials: API keys and
// inbound tokens (stored only as SHA-256), signing secrets (sealed with
// AES-GCM under the service key) and the service key itself.
package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Prefixes that make a credential recognisable in logs and secret scanners.
const (
	APIKeyPrefix        = "ck_"
	InboundTokenPrefix  = "in_"
	SigningSecretPrefix = "whsec_"
	// displayChars is how much of a key (after its prefix) is kept for display.
	displayChars = 6
)

func randomBytes() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // cannot happen on supported platforms
	}
	return b
}

func random(prefix string) string {
	return prefix + base64.RawURLEncoding.EncodeToString(randomBytes())
}

// Hash is the SHA-256 of a key or token: the only form in which one is stored.
func Hash(credential string) []byte {
	h := sha256.Sum256([]byte(credential))
	return h[:]
}

// NewAPIKey returns a new API key ("ck_" + 43 base64url characters) and the
// display prefix kept beside its hash.
func NewAPIKey() (key, prefix string) {
	key = random(APIKeyPrefix)
	return key, DisplayPrefix(key)
}

// DisplayPrefix is the part of a credential shown in listings.
func DisplayPrefix(credential string) string {
	i := strings.IndexByte(credential, '_') + 1
	if len(credential) < i+displayChars {
		return credential
	}
	return credential[:i+displayChars]
}

// NewInboundToken returns a new inbound endpoint token for its URL.
func NewInboundToken() string { return random(InboundTokenPrefix) }

// NewSigningSecret returns a new signing secret: "whsec_" + the standard
// base64 (with padding, 44 characters) of 32 random bytes, the form
// Standard Webhooks libraries read. X-Service-Signature's HMAC key is the
// whole string, prefix included; the Standard Webhooks key is the 32 bytes
// (signature.StandardKey). Secrets issued before were "whsec_" + 43
// base64url characters, and still sign both schemes.
func NewSigningSecret() string {
	return SigningSecretPrefix + base64.StdEncoding.EncodeToString(randomBytes())
}

// Prefixes of the secrets an inbound endpoint verifies its sender with.
const (
	HMACSecretPrefix    = "hmac_"
	BasicPasswordPrefix = "pw_"
)

// NewHMACSecret returns a new key for a sender's HMAC of its posts:
// "hmac_" + 43 base64url characters (256 random bits), used as the HMAC key
// whole, prefix included, as GitHub and Shopify use the secret string.
func NewHMACSecret() string { return random(HMACSecretPrefix) }

// NewBasicPassword returns a new HTTP Basic password for an inbound
// endpoint: "pw_" + 43 base64url characters (256 random bits).
func NewBasicPassword() string { return random(BasicPasswordPrefix) }

// KeySize is the length of the service key in bytes.
const KeySize = 32

// NewServiceKey returns a new random service key, hex-encoded.
func NewServiceKey() string {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// ParseServiceKey reads a 32-byte service key written as 64 hex digits or as
// standard or URL-safe base64.
func ParseServiceKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, errors.New("the service key must be 32 bytes, written as 64 hex digits or base64")
}

// Sealer encrypts and decrypts signing secrets at rest with AES-256-GCM.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a Sealer under a 32-byte service key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("service key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Binding names where a sealed value is kept: the table and the row. It is
// the value's associated data, so a sealed secret copied to another row,
// or to another table, does not open there.
type Binding struct{ Table, Row string }

// boundV1 starts a value sealed to its Binding. Values sealed before
// bindings existed are nonce || ciphertext || tag, with no associated data;
// a random nonce starts with these bytes once in 2^32, and Open still opens
// such a value as the older format.
var boundV1 = []byte("cs1\x00")

// BoundPrefix is how every value sealed to a Binding starts (a copy, for
// finding older values in storage).
func BoundPrefix() []byte { return slices.Clone(boundV1) }

// associatedData ties a value to the format and the place it is sealed for.
func (b Binding) associatedData() []byte {
	return []byte(string(boundV1) + b.Table + "\x00" + b.Row)
}

// Seal encrypts plaintext for the place at: boundV1 || nonce || ciphertext || tag.
func (s *Sealer) Seal(plaintext string, at Binding) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	out := append(BoundPrefix(), nonce...)
	return s.aead.Seal(out, nonce, []byte(plaintext), at.associatedData())
}

// Open decrypts a value Seal sealed for the place at; one sealed for
// another place does not open. A value of the older, unbound format opens
// wherever it is (Bound reports it, so it can be sealed again).
func (s *Sealer) Open(sealed []byte, at Binding) (string, error) {
	if Bound(sealed) {
		if plain, err := s.open(sealed[len(boundV1):], at.associatedData()); err == nil {
			return plain, nil
		}
	}
	return s.open(sealed, nil)
}

// Sealed is a value sealed for a place, as the place keeps it: what a
// holder of the service key opens (OpenSealed).
type Sealed struct {
	Value []byte
	At    Binding
}

// OpenSealed decrypts a Sealed value (Open).
func (s *Sealer) OpenSealed(v Sealed) (string, error) { return s.Open(v.Value, v.At) }

// Bound reports whether sealed is in the format bound to a place.
func Bound(sealed []byte) bool { return bytes.HasPrefix(sealed, boundV1) }

func (s *Sealer) open(sealed, associated []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("sealed secret is too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], associated)
	if err != nil {
		return "", errors.New("sealed secret cannot be opened here with this service key")
	}
	return string(plain), nil
}

// NewConsoleToken returns a new token for a console sign-in link or
// session cookie: 256 random bits, base64url.
func NewConsoleToken() string { return random("cs_") }
