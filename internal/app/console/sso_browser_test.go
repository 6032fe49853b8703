package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/commerce-integration/commerce/internal/browsertest"
)

// ssoSignInTab signs email in through the provider's login page in a
// browser of its own: the email typed at /console/sign-in, the provider's
// page, its button, and back to the console.
func (f *ssoFixture) ssoSignInTab(email, says string) {
	f.t.Helper()
	b := browsertest.New(f.t, f.srv.URL, repoRoot)()
	if status := b.Open("/console/sign-in"); status != http.StatusOK {
		f.t.Fatalf("the sign-in page: %d", status)
	}
	b.Screenshot("sign-in")
	b.Run("type the email", chromedp.SetValue("#sso-signin input[name=email]", email, chromedp.ByQuery))
	if status := b.Click("#sso-signin button"); status != http.StatusOK || b.Text("h1") != "Development identity provider" {
		f.t.Fatalf("the provider's login page: %d %q", status, b.Text("h1"))
	}
	if status := b.Click("#idp-login button"); status != http.StatusOK || !strings.Contains(b.Text("#flash"), says) {
		f.t.Fatalf("back at the console: %d %q", status, b.Text("#flash"))
	}
	if !strings.Contains(b.Text("header .who"), email) {
		f.t.Fatalf("the console's header does not name %s", email)
	}
}

// A browser signs in through the provider end to end; the provider then
// rotates its signing key, and the next sign-in (signed with a key id the
// console has not seen) verifies after the console fetches the JWKS
// again; a third, with nothing new, uses the cached keys.
func TestSSOSignInInABrowserAcrossAKeyRotation(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.AutoApprove = false
	f.ssoSignInTab("ada@acme.example", "Signed in as ada@acme.example (admin) of Acme")
	if n := f.idp.KeySetServed(); n != 1 {
		t.Fatalf("JWKS served %d times for one sign-in", n)
	}
	old := f.idp.KeyID()
	if _, err := f.idp.RotateKey(); err != nil {
		t.Fatal(err)
	}
	if f.idp.KeyID() == old {
		t.Fatal("the key did not change")
	}
	f.ssoSignInTab("owner@acme.example", "Signed in as owner@acme.example (owner) of Acme")
	if n := f.idp.KeySetServed(); n != 2 {
		t.Fatalf("JWKS served %d times: the new key id did not make the console fetch it again, once", n)
	}
	f.idp.AutoApprove = true
	if status, page := f.ssoBrowser().signIn("bob@acme.example"); status != http.StatusOK || !strings.Contains(page, "(member)") {
		t.Fatalf("a third sign-in: %d %s", status, page)
	}
	if n := f.idp.KeySetServed(); n != 2 {
		t.Fatalf("JWKS served %d times: the keys were not cached", n)
	}
}

// The sessions page and the provider settings in a browser, on a phone's
// screen (nothing scrolls sideways; axe-core on every page): the owner
// ends another session, and saves the provider without its secret, which
// keeps the stored one.
func TestSessionsAndProviderSettingsInABrowser(t *testing.T) {
	f := newSSOFixture(t)
	other, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.d.StartConsoleSession(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	b := f.newTab(390)
	f.signInTab(b, "owner@acme.example")
	if status := b.Open("/console/sessions"); status != http.StatusOK {
		t.Fatalf("the sessions page: %d", status)
	}
	var rows int
	b.Eval("count the sessions", `document.querySelectorAll("#sessions tbody tr form").length`, &rows)
	if rows != 2 || !strings.Contains(b.Text("#sessions"), "(this one)") {
		t.Fatalf("%d sessions listed: %s", rows, b.Text("#sessions"))
	}
	b.Screenshot("sessions")
	// The row that is not this one.
	b.Run("pick the other session", chromedp.Evaluate(`(() => { for (const tr of document.querySelectorAll("#sessions tbody tr")) {
		if (!tr.textContent.includes("(this one)")) { tr.querySelector("button").id = "end-other"; } } })()`, nil))
	if status := b.Click("#end-other"); status != http.StatusOK || !strings.Contains(b.Text("#flash"), "Ended a session of owner@acme.example") {
		t.Fatalf("ending the other session: %d %q", status, b.Text("#flash"))
	}
	if status := b.Open("/console/settings/sso"); status != http.StatusOK || !strings.Contains(b.Text("#sso-current"), f.idp.Issuer) {
		t.Fatalf("the settings page: %d %q", status, b.Text("#sso-current"))
	}
	b.Screenshot("sso-settings")
	b.Run("change the admin values", chromedp.SetValue("#sso-form input[name=admin_values]", "commerce-admins, ops", chromedp.ByQuery))
	if status := b.Click("#sso-form button"); status != http.StatusOK || !strings.Contains(b.Text("#flash"), "Saved") {
		t.Fatalf("saving: %d %q", status, b.Text("#flash"))
	}
	if status, page := f.ssoBrowser().signIn("ada@acme.example"); status != http.StatusOK || !strings.Contains(page, "(admin)") {
		t.Fatalf("a sign-in after the change: %d", status)
	}
}
