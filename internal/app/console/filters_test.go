package console_test

import (
	"net/http"
	"strings"
	"testing"

	guuid "github.com/google/uuid"
)

// A filter that cannot match is a 400 page that names the value and shows
// the request id, never a silent empty list; a 401 page names its request
// too.
func TestFiltersThatCannotMatchAreRefusedNamingTheValue(t *testing.T) {
	f := newFixture(t)
	owner, _ := f.signIn("owner@acme.example")
	unknown := guuid.NewString()
	for _, c := range []struct{ path, want string }{
		{"/console/receipts?outcome=bogus&outcome=failed", `names an outcome that does not exist: &#34;bogus&#34; (one of `},
		{"/console/receipts?endpoint=not-a-uuid", `names no endpoint: &#34;not-a-uuid&#34; is not an endpoint id`},
		{"/console/receipts?endpoint=" + unknown, "names no endpoint of this organisation: " + unknown},
		{"/console/receipts?after=2026-11-02T10:00&before=2026-11-01T10:00", "From (2026-11-02 10:00 UTC) is later than To (2026-11-01 10:00 UTC): no receipt can match."},
		{"/console/deliveries?subscription=not-a-uuid", `names no subscription: &#34;not-a-uuid&#34; is not a subscription id`},
		{"/console/deliveries?subscription=" + unknown, "names no subscription of this organisation: " + unknown},
	} {
		status, page := owner.get(c.path)
		if status != http.StatusBadRequest || !strings.Contains(page, c.want) || !strings.Contains(page, `id="request-id"`) {
			t.Errorf("%s: %d, want 400 saying %q with the request id:\n%s", c.path, status, c.want, page)
		}
	}
	// The endpoint the organisation has still filters.
	if status, _ := owner.get("/console/receipts?endpoint=" + f.endpoint); status != http.StatusOK {
		t.Errorf("the organisation's own endpoint: %d", status)
	}
	// Not signed in, and a link used up: 401 pages with the request id.
	_, token := f.signIn("member@acme.example")
	for _, do := range []func() (int, string){
		func() (int, string) { return f.browser().get("/console/receipts") },
		func() (int, string) { return f.browser().post("/console/login/"+token, nil) },
	} {
		if status, page := do(); status != http.StatusUnauthorized || !strings.Contains(page, `id="request-id"`) {
			t.Errorf("a 401 page: %d, request id shown: %v", status, strings.Contains(page, `id="request-id"`))
		}
	}
}
