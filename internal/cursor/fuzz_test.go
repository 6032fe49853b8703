package cursor

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// FuzzDecode: whatever token, list, binding and key arity Decode is given,
// it never panics, refuses with EINVALID, and accepts only a token whose
// content is exactly what Encode makes for that list, binding and key: a
// cursor cannot be forged, altered, or carried to another list, filter or
// organisation.
func FuzzDecode(f *testing.F) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	products := c.Encode("products", "org1|search=bolt", "SKU-100")
	orders := c.Encode("orders", "org1|", "2026-01-01T00:00:00.123Z", "01a20557-2bc7-773a-ae87-18d0947e309a")
	other := New([]byte("fedcba9876543210fedcba9876543210")).Encode("products", "org1|search=bolt", "SKU-100")
	for _, seed := range []struct {
		token, list, binding string
		want                 int
	}{
		{products, "products", "org1|search=bolt", 1},
		{products, "products", "org2|search=bolt", 1},
		{products, "customers", "org1|search=bolt", 1},
		{orders, "orders", "org1|", 2},
		{orders, "orders", "org1|", 1},
		{other, "products", "org1|search=bolt", 1},
		{products[:len(products)/2], "products", "org1|search=bolt", 1},
		{products[:len(products)-1], "products", "org1|search=bolt", 1},
		{products[:10] + "\n" + products[10:], "products", "org1|search=bolt", 1},
		{"\xff\xfe\xc3", "products", "org1|", 1},
		{strings.Repeat("A", 4096), "products", "org1|", 1},
		{products, "products", "org1|search=bolt", 1 << 62},
		{"", "", "", 0},
	} {
		f.Add(seed.token, seed.list, seed.binding, seed.want)
	}
	f.Fuzz(func(t *testing.T, token, list, binding string, want int) {
		key, err := c.Decode(token, list, binding, want)
		if err != nil {
			if domain.ErrorCode(err) != domain.EINVALID {
				t.Fatalf("Decode(%q) error %v, want EINVALID", token, err)
			}
			return
		}
		if len(key) != want {
			t.Fatalf("Decode(%q) gave %d key parts, want %d", token, len(key), want)
		}
		got, _ := base64.RawURLEncoding.DecodeString(token)
		made, _ := base64.RawURLEncoding.DecodeString(c.Encode(list, binding, key...))
		if !bytes.Equal(got, made) {
			t.Fatalf("Decode accepted %q for %s %q, which Encode does not make", token, list, binding)
		}
	})
}
