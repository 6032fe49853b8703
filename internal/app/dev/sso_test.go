package dev

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// `commerce dev --sso` points the demo organisation at a development
// provider whose test users sign in to the console through its login
// page, each with the role their groups give; the printed lines name them.
func TestDevSSOSignsTheTestUsersIn(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	state, err := demoOrganisation(ctx, d.DB, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := secrets.ParseServiceKey(secrets.NewServiceKey())
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	cfg := devDefaults(config.Config{BaseURL: srv.URL, Console: "true"}, devOptions{})
	rt := &cli.Runtime{Cfg: cfg, DB: d.DB, ServiceKey: key}
	if handler, _, err = rt.APIHandler(); err != nil {
		t.Fatal(err)
	}
	idp, err := startDevSSO(ctx, d.DB, cfg, key, state.OrgID, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	var printed bytes.Buffer
	printSSO(&printed, idp, srv.URL)
	if !strings.Contains(printed.String(), "admin@demo.example (admin)") || !strings.Contains(printed.String(), srv.URL+"/console/sign-in") {
		t.Fatalf("printed: %s", printed.String())
	}
	for email, role := range map[string]string{"owner@demo.example": "owner", "admin@demo.example": "admin", "support@demo.example": "member"} {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		resp, err := c.PostForm(srv.URL+"/console/sign-in", url.Values{"email": {email}})
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(page)
		if resp.StatusCode != http.StatusOK || id == nil || !strings.HasPrefix(resp.Request.URL.String(), idp.Issuer+"/login") {
			t.Fatalf("the provider's login page: %d %s", resp.StatusCode, page)
		}
		resp, err = c.PostForm(idp.Issuer+"/login", url.Values{"id": {string(id[1])}, "email": {email}})
		if err != nil {
			t.Fatal(err)
		}
		page, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Signed in as "+email+" ("+role+") of Demo Trading Ltd") {
			t.Fatalf("sign-in of %s: %d %s", email, resp.StatusCode, page)
		}
	}
}
