package cursor

import (
	"encoding/base64"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

func TestCursorRoundTrip(t *testing.T) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	tok := c.Encode("products", "org1|search=bolt", "SKU-100")
	key, err := c.Decode(tok, "products", "org1|search=bolt", 1)
	if err != nil || len(key) != 1 || key[0] != "SKU-100" {
		t.Fatalf("Decode = %v, %v", key, err)
	}
}

func TestCursorRefusesMisuse(t *testing.T) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	tok := c.Encode("products", "org1|search=bolt", "SKU-100")
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	raw[3] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(raw)
	other := New([]byte("fedcba9876543210fedcba9876543210")).Encode("products", "org1|search=bolt", "SKU-100")
	cases := map[string]struct{ token, list, binding string }{
		"tampered":      {tampered, "products", "org1|search=bolt"},
		"other list":    {tok, "customers", "org1|search=bolt"},
		"other filters": {tok, "products", "org1|search=nut"},
		"other org":     {tok, "products", "org2|search=bolt"},
		"other key":     {other, "products", "org1|search=bolt"},
		"not base64":    {"!!!", "products", "org1|search=bolt"},
		"empty":         {"", "products", "org1|search=bolt"},
		"truncated":     {tok[:10], "products", "org1|search=bolt"},
	}
	for name, tc := range cases {
		if _, err := c.Decode(tc.token, tc.list, tc.binding, 1); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%s: Decode error = %v, want EINVALID", name, err)
		}
	}
	if _, err := c.Decode(tok, "products", "org1|search=bolt", 2); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("wrong key arity accepted: %v", err)
	}
}
