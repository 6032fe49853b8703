package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The owner sets the organisation's provider on the settings page: the
// client secret is sealed and never shown again, an http issuer off
// loopback is refused, and a change without a secret keeps the stored one.
// Admins and members may not see the page.
func TestTheOwnerSetsTheProviderInTheConsole(t *testing.T) {
	f := newSSOFixture(t)
	ctx := context.Background()
	if _, err := f.d.Pool().Exec(ctx, `DELETE FROM org_sso`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.AddUser(ctx, f.org.ID, "admin@acme.example", "admin"); err != nil {
		t.Fatal(err)
	}
	admin, _ := f.signIn("admin@acme.example")
	if status, _ := admin.get("/console/settings/sso"); status != http.StatusForbidden {
		t.Fatalf("an admin opening the settings: %d", status)
	}
	owner, _ := f.signIn("owner@acme.example")
	status, page := owner.get("/console/settings/sso")
	if status != http.StatusOK || !strings.Contains(page, f.srv.URL+"/console/sso/callback") || !strings.Contains(page, "No identity provider is set") {
		t.Fatalf("the settings page: %d %s", status, page)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "issuer": {"http://idp.example.com"}, "client_id": {ssoClientID},
		"client_secret": {ssoClientSecret}, "domains": {"Acme.example"}, "role_claim": {"groups"},
		"owner_values": {"commerce-owners"}, "admin_values": {"commerce-admins, ops"}, "unmatched": {"member"}}
	if status, page := owner.post("/console/settings/sso", form); status != http.StatusBadRequest || !strings.Contains(page, "must be an https URL") {
		t.Fatalf("an http issuer: %d %s", status, page)
	}
	form.Set("issuer", f.idp.Issuer)
	status, page = owner.post("/console/settings/sso", form)
	if status != http.StatusOK || !strings.Contains(page, "Saved: users of acme.example sign in through "+f.idp.Issuer) ||
		strings.Contains(page, ssoClientSecret) {
		t.Fatalf("saving: %d %s", status, page)
	}
	var sealed []byte
	if err := f.d.Pool().QueryRow(ctx, `SELECT client_secret FROM org_sso`).Scan(&sealed); err != nil || strings.Contains(string(sealed), ssoClientSecret) {
		t.Fatalf("the secret is not sealed: %v", err)
	}
	// Changed without a secret: the stored one signs in still.
	form.Del("client_secret")
	form.Set("admin_values", "commerce-admins")
	if status, page := owner.post("/console/settings/sso", form); status != http.StatusOK || strings.Contains(page, ssoClientSecret) {
		t.Fatalf("a change without the secret: %d %s", status, page)
	}
	if status, page := f.ssoBrowser().signIn("ada@acme.example"); status != http.StatusOK || !strings.Contains(page, "(admin)") {
		t.Fatalf("a sign-in with the kept secret: %d %s", status, page)
	}
	var audited int
	if err := f.d.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'org.sso_set'`).Scan(&audited); err != nil || audited != 2 {
		t.Fatalf("settings audited: %d %v", audited, err)
	}
}

// The email form of the sign-in, posted from another site, is refused
// (login CSRF) before any state is made.
func TestASSOSignInFromAnotherSiteIsRefused(t *testing.T) {
	f := newSSOFixture(t)
	b := f.ssoBrowser()
	req := mustPost(t, f.srv.URL+"/console/sign-in", url.Values{"email": {"bob@acme.example"}})
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if status, page := b.do(req); status != http.StatusForbidden || !strings.Contains(page, "sent from another site") {
		t.Fatalf("%d %s", status, page)
	}
	var n int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM console_sso_states`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("states made: %d %v", n, err)
	}
}
