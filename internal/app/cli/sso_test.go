package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/internal/testdb"
)

// `org sso set` checks and stores the provider, sealing the client secret,
// which `show` never prints; a domain of another organisation and a
// non-https issuer are refused; `remove` forgets it.
func TestOrgSSOSetShowRemove(t *testing.T) {
	d := testdb.New(t)
	t.Setenv("COMMERCE_SECRET_KEY", strings.Repeat("ab", 32))
	newOrg := func(name, owner string) string {
		code, out, errOut := run(t, d.URL, "org", "create", "--name", name, "--owner-email", owner, "--json")
		if code != 0 {
			t.Fatalf("org create: %s", errOut)
		}
		var org struct {
			ID string `json:"id"`
		}
		mustJSON(t, out, &org)
		return org.ID
	}
	acme, other := newOrg("Acme", "owner@acme.example"), newOrg("Other", "owner@other.example")
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("the-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := func(org, issuer, domains string, extra ...string) (int, string, string) {
		return run(t, d.URL, append([]string{"org", "sso", "set", "--org", org, "--issuer", issuer, "--client-id", "console",
			"--client-secret-file", secretFile, "--domains", domains, "--allow-private-targets=loopback"}, extra...)...)
	}
	if code, _, errOut := set(acme, "http://idp.example", "acme.example"); code == 0 || !strings.Contains(errOut, "https") {
		t.Fatalf("an http issuer: exit %d %s", code, errOut)
	}
	if code, _, errOut := run(t, d.URL, "org", "sso", "set", "--org", acme, "--issuer", "http://127.0.0.1:9", "--client-id", "c",
		"--client-secret-file", secretFile, "--domains", "acme.example"); code == 0 || !strings.Contains(errOut, "loopback") {
		t.Fatalf("a loopback issuer without private targets allowed: exit %d %s", code, errOut)
	}
	code, out, errOut := set(acme, "http://127.0.0.1:9/", "Acme.example, acme.co.example", "--role-claim", "groups",
		"--owner-values", "owners", "--admin-values", "admins,ops", "--unmatched", "refuse")
	if code != 0 || !strings.Contains(out, "acme.co.example, acme.example") || strings.Contains(out, "the-client-secret") {
		t.Fatalf("set: exit %d %s %s", code, out, errOut)
	}
	var sealed []byte
	if err := d.Pool().QueryRow(context.Background(), `SELECT client_secret FROM org_sso`).Scan(&sealed); err != nil ||
		strings.Contains(string(sealed), "the-client-secret") {
		t.Fatalf("the secret is not sealed: %v", err)
	}
	if code, _, errOut := set(other, "http://127.0.0.1:9", "acme.example"); code == 0 || !strings.Contains(errOut, "another organisation") {
		t.Fatalf("a domain of another organisation: exit %d %s", code, errOut)
	}
	code, out, _ = run(t, d.URL, "org", "sso", "show", "--org", acme, "--json")
	var shown map[string]any
	mustJSON(t, out, &shown)
	if code != 0 || shown["issuer"] != "http://127.0.0.1:9" || shown["unmatched"] != "refuse" || strings.Contains(out, "secret\"") ||
		!strings.HasSuffix(shown["redirect_url"].(string), "/console/sso/callback") {
		t.Fatalf("show: %s", out)
	}
	if code, _, errOut := run(t, d.URL, "org", "sso", "remove", "--org", acme); code != 0 {
		t.Fatalf("remove: %s", errOut)
	}
	if code, _, errOut := run(t, d.URL, "org", "sso", "show", "--org", acme); code == 0 || !strings.Contains(errOut, "no identity provider") {
		t.Fatalf("show after remove: exit %d %s", code, errOut)
	}
	// The domain is free again.
	if code, _, errOut := set(other, "http://127.0.0.1:9", "acme.example"); code != 0 {
		t.Fatalf("the removed organisation's domain: %s", errOut)
	}
}

// `user disable` ends all the user's console sessions at once; `user
// enable` lets them sign in again.
func TestUserDisableEndsTheirSessions(t *testing.T) {
	d := testdb.New(t)
	code, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--owner-email", "owner@acme.example", "--json")
	var org struct {
		ID string `json:"id"`
	}
	mustJSON(t, out, &org)
	if code != 0 {
		t.Fatal(out)
	}
	ctx := context.Background()
	for range 2 {
		token, err := d.CreateConsoleLink(ctx, uuid.MustParse(org.ID), "owner@acme.example")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.StartConsoleSession(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, d.URL, "user", "disable", "--org", org.ID, "--email", "owner@acme.example")
	if code != 0 || !strings.Contains(out, "2 console sessions ended") {
		t.Fatalf("disable: exit %d %s %s", code, out, errOut)
	}
	var n int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("sessions left: %d %v", n, err)
	}
	if code, _, _ := run(t, d.URL, "console", "login", "--org", org.ID, "--as", "owner@acme.example"); code == 0 {
		t.Fatal("a link was made for a disabled user")
	}
	if code, _, errOut := run(t, d.URL, "user", "enable", "--org", org.ID, "--email", "owner@acme.example"); code != 0 {
		t.Fatalf("enable: %s", errOut)
	}
	if code, _, errOut := run(t, d.URL, "console", "login", "--org", org.ID, "--as", "owner@acme.example"); code != 0 {
		t.Fatalf("a link after enabling: %s", errOut)
	}
	if code, _, errOut := run(t, d.URL, "user", "disable", "--org", org.ID, "--email", "nobody@acme.example"); code == 0 ||
		!strings.Contains(errOut, "not a user") {
		t.Fatalf("disabling a stranger: exit %d %s", code, errOut)
	}
}
