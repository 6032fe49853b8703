package cli_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// `console login` prints a one-time link under the base URL; the handler
// serve and dev run signs it in once; COMMERCE_CONSOLE=false takes the
// console away.
func TestConsoleLoginPrintsALinkTheServerSignsIn(t *testing.T) {
	d := testdb.New(t)
	code, out, errOut := run(t, d.URL, "org", "create", "--name", "Acme Ltd", "--owner-email", "owner@acme.example", "--json")
	if code != 0 {
		t.Fatalf("org create exited %d: %s", code, errOut)
	}
	var org struct {
		ID string `json:"id"`
	}
	mustJSON(t, out, &org)
	if code, _, errOut := run(t, d.URL, "console", "login", "--org", org.ID, "--as", "nobody@acme.example"); code != 1 ||
		!strings.Contains(errOut, "not a user of organisation") {
		t.Fatalf("login as a stranger: exit %d %s", code, errOut)
	}

	handler := func(console string) http.Handler {
		rt := &cli.Runtime{Cfg: config.Config{BaseURL: "http://commerce.test", Console: console}, DB: d.DB, ServiceKey: make([]byte, 32)}
		h, _, err := rt.APIHandler()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	srv := httptest.NewServer(handler("true"))
	defer srv.Close()
	code, out, errOut = run(t, d.URL, "console", "login", "--org", org.ID, "--as", "owner@acme.example", "--base-url", srv.URL, "--json")
	if code != 0 {
		t.Fatalf("console login exited %d: %s", code, errOut)
	}
	var link struct {
		URL       string `json:"url"`
		ExpiresAt string `json:"expires_at"`
	}
	mustJSON(t, out, &link)
	if !strings.HasPrefix(link.URL, srv.URL+"/console/login/cs_") || link.ExpiresAt == "" {
		t.Fatalf("console login printed %s", out)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// Opening the link shows the sign-in button; its POST signs in, once.
	if resp, err := noRedirect.Get(link.URL); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("opening the link: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} { // once only
		resp, err := noRedirect.PostForm(link.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("use %d of the link answered %d, want %d", i+1, resp.StatusCode, want)
		}
	}

	off := httptest.NewServer(handler("false"))
	defer off.Close()
	resp, err := http.Get(off.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/console with COMMERCE_CONSOLE=false answered %d", resp.StatusCode)
	}
}
