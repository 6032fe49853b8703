package api_test

import (
	"net/http"
	"testing"
)

// Text that is not UTF-8 (or holds a NUL) in a query value or name is the
// caller's 400, after the key is checked; a path id that is not UTF-8 is not
// a UUID, and answers 404 as any such id does.
func TestURLTextThatIsNotUTF8IsRefused(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/api/v1/products?search=%C3", 400},
		{"/api/v1/customers?search=%FF", 400},
		{"/api/v1/products?sku=%ED%A0%80", 400},
		{"/api/v1/products?category=ok&%FF=1", 400},
		{"/api/v1/requests?cursor=%FF", 400},
		{"/api/v1/products?search=a%00b", 400},
		{"/api/v1/customers/%FF", 404},
		{"/api/v1/orders/%C3%28", 404},
		{"/api/v1/customers/%00", 404},
	} {
		status, hdr, b := f.do(http.MethodGet, c.path, f.key, nil)
		if status != c.status || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want %d", c.path, status, b, c.status)
			continue
		}
		errorBody(t, b)
		if status, _, _ := f.do(http.MethodGet, c.path, "", nil); status != http.StatusUnauthorized {
			t.Errorf("%s without a key: %d, want 401 first", c.path, status)
		}
	}
	if status, _, b := f.do(http.MethodGet, "/api/v1/products?search=%C3%A9", f.key, nil); status != http.StatusOK {
		t.Errorf("a valid é: %d %s", status, b)
	}
}
