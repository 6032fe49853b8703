package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/devoidc"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/sso"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// ssoFixture is the console served at its own base URL (so the provider's
// redirects reach it), an organisation whose provider is a real OpenID
// Provider (internal/devoidc, zitadel's op) running beside it, and that
// provider's users.
type ssoFixture struct {
	*fixture
	idp *devoidc.Provider
}

const (
	ssoClientID     = "commerce-console"
	ssoClientSecret = "s3cret-of-the-console-client"
)

func newSSOFixture(t *testing.T) *ssoFixture {
	t.Helper()
	return newSSOFixtureReaching(t, outbound.LoopbackTargets)
}

// newSSOFixtureReaching is newSSOFixture with the console's requests to
// providers reaching what targets allows.
func newSSOFixtureReaching(t *testing.T, targets outbound.Targets) *ssoFixture {
	t.Helper()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(key)
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	service := integrations.New(integrations.Deps{DB: d.DB, Sealer: sealer, BaseURL: srv.URL})
	s := api.New(api.Deps{DB: d.DB, Service: service, Cursors: cursor.New(key), BaseURL: srv.URL})
	s.Mount(console.Prefix, console.New(console.Deps{DB: d.DB, Service: service, BaseURL: srv.URL, Sealer: sealer,
		Targets: targets}))
	handler = s.Handler()
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", Currency: "GBP", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	idp, err := devoidc.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Close() })
	idp.AutoApprove = true
	idp.AddClient(ssoClientID, ssoClientSecret, sso.RedirectURL(srv.URL))
	idp.AddUser(devoidc.User{Email: "owner@acme.example", Groups: []string{"commerce-owners"}})
	idp.AddUser(devoidc.User{Email: "ada@acme.example", Groups: []string{"staff", "commerce-admins"}})
	idp.AddUser(devoidc.User{Email: "bob@acme.example", Groups: []string{"staff"}})
	idp.AddUser(devoidc.User{Email: "eve@acme.example", Unverified: true})
	idp.AddUser(devoidc.User{Email: "mallory@elsewhere.example"})
	cfg := db.OrgSSO{OrgID: org.ID, Issuer: idp.Issuer, ClientID: ssoClientID, ClientSecret: ssoClientSecret,
		Domains: []string{"acme.example"}, RoleClaim: "groups", OwnerValues: []string{"commerce-owners"},
		AdminValues: []string{"commerce-admins"}, Unmatched: "member"}
	if err := sso.Check(ctx, &cfg, outbound.LoopbackTargets); err != nil {
		t.Fatal(err)
	}
	if err := d.SetOrgSSO(ctx, sealer, cfg); err != nil {
		t.Fatal(err)
	}
	return &ssoFixture{fixture: &fixture{t: t, d: d, srv: srv, org: org, svc: service}, idp: idp}
}

// ssoBrowser is a client with its own cookies that follows redirects
// (through the provider and back), noting the callback URL it was sent to.
type ssoBrowser struct {
	f        *ssoFixture
	c        *http.Client
	callback string
}

func (f *ssoFixture) ssoBrowser() *ssoBrowser {
	jar, _ := cookiejar.New(nil)
	b := &ssoBrowser{f: f}
	b.c = &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.Path, sso.CallbackPath) {
			b.callback = r.URL.String()
		}
		return nil
	}}
	return b
}

func (b *ssoBrowser) do(req *http.Request) (int, string) {
	b.f.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// signIn types email into /console/sign-in and follows the flow to its end.
func (b *ssoBrowser) signIn(email string) (int, string) {
	b.f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.f.srv.URL+"/console/sign-in", strings.NewReader(url.Values{"email": {email}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

func (b *ssoBrowser) get(u string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (f *ssoFixture) sessions() int {
	f.t.Helper()
	var n int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM console_sessions WHERE org_id = $1`, f.org.ID).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *ssoFixture) role(email string) domain.UserRole {
	f.t.Helper()
	var r domain.UserRole
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT role FROM users WHERE org_id = $1 AND email = $2`, f.org.ID, email).Scan(&r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

// Signing in through the provider provisions the user with the role the
// groups claim maps to, updates it at the next sign-in, starts a session
// of the console, and is audited.
func TestSSOSignInProvisionsTheUserWithTheMappedRole(t *testing.T) {
	f := newSSOFixture(t)
	status, page := f.ssoBrowser().signIn("ada@acme.example")
	if status != http.StatusOK || !strings.Contains(page, "Signed in as ada@acme.example (admin) of Acme") {
		t.Fatalf("sign-in: %d %s", status, page)
	}
	if f.role("ada@acme.example") != domain.UserAdmin {
		t.Fatalf("ada is %s", f.role("ada@acme.example"))
	}
	// The provider moves her out of the admins: the next sign-in makes her
	// a member.
	f.idp.AddUser(devoidc.User{Email: "ada@acme.example", Groups: []string{"staff"}})
	b := f.ssoBrowser()
	if status, page := b.signIn("ada@acme.example"); status != http.StatusOK || !strings.Contains(page, "(member)") {
		t.Fatalf("second sign-in: %d %s", status, page)
	}
	if f.role("ada@acme.example") != domain.UserMember {
		t.Fatalf("ada is %s after the second sign-in", f.role("ada@acme.example"))
	}
	if status, _ := b.get(f.srv.URL + "/console/receipts"); status != http.StatusOK {
		t.Fatalf("the session does not open the console: %d", status)
	}
	if status, page := f.ssoBrowser().signIn("owner@acme.example"); status != http.StatusOK || !strings.Contains(page, "(owner)") {
		t.Fatalf("the owner's sign-in: %d %s", status, page)
	}
	var audited int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'console.sign_in'
		AND detail->>'via' = 'sso'`, f.org.ID).Scan(&audited); err != nil || audited != 3 {
		t.Fatalf("audited sign-ins: %d %v", audited, err)
	}
}

// refusedSignIn asserts a 400 page naming what was refused, no session,
// and the refusal audited with its reason.
func (f *ssoFixture) refusedSignIn(status int, page, says, reason string) {
	f.t.Helper()
	if status != http.StatusBadRequest || !strings.Contains(page, says) {
		f.t.Fatalf("want a 400 page saying %q, got %d %s", says, status, page)
	}
	if n := f.sessions(); n != 0 {
		f.t.Fatalf("a refused sign-in made %d sessions", n)
	}
	if reason == "" {
		return
	}
	var n int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE org_id = $1
		AND action = 'console.sign_in_refused' AND detail->>'reason' = $2`, f.org.ID, reason).Scan(&n); err != nil || n != 1 {
		f.t.Fatalf("refusals audited with reason %s: %d %v", reason, n, err)
	}
}

func TestSSORefusesAReplayedState(t *testing.T) {
	f := newSSOFixture(t)
	b := f.ssoBrowser()
	if status, _ := b.signIn("bob@acme.example"); status != http.StatusOK {
		t.Fatalf("sign-in: %d", status)
	}
	if _, err := f.d.Pool().Exec(context.Background(), `DELETE FROM console_sessions`); err != nil {
		t.Fatal(err)
	}
	// The provider's answer, with its state and code, sent again.
	status, page := b.get(b.callback)
	f.refusedSignIn(status, page, "state was used already", "state")
}

func TestSSORefusesAnUnknownState(t *testing.T) {
	f := newSSOFixture(t)
	status, page := f.ssoBrowser().get(f.srv.URL + sso.CallbackPath + "?state=made-up&code=whatever")
	f.refusedSignIn(status, page, "state is unknown", "")
}

func TestSSORefusesAStateFromAnotherBrowser(t *testing.T) {
	f := newSSOFixture(t)
	b := f.ssoBrowser()
	b.c.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.Path, sso.CallbackPath) {
			b.callback = r.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}
	b.signIn("bob@acme.example")
	status, page := f.ssoBrowser().get(b.callback)
	f.refusedSignIn(status, page, "started in another browser", "state")
}

func TestSSORefusesAWrongAudience(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.SetTamper(devoidc.Tamper{Audience: "another-application"})
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "issued to another application", "audience")
}

func TestSSORefusesAWrongIssuer(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.SetTamper(devoidc.Tamper{Issuer: "https://impostor.example"})
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "issued by another issuer", "issuer")
}

func TestSSORefusesAnExpiredToken(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.SetTamper(devoidc.Tamper{Lifetime: -time.Hour})
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "has expired", "expired")
}

func TestSSORefusesABadSignature(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.SetTamper(devoidc.Tamper{StrangerKey: true})
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "signature does not verify", "signature")
}

func TestSSORefusesAnUnsignedToken(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.SetTamper(devoidc.Tamper{Unsigned: true})
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "signature does not verify", "signature")
}

func TestSSORefusesANonceMismatch(t *testing.T) {
	f := newSSOFixture(t)
	f.idp.SetTamper(devoidc.Tamper{Nonce: "a-nonce-of-another-sign-in"})
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "nonce is not the one", "nonce")
}

func TestSSORefusesAnUnverifiedEmail(t *testing.T) {
	f := newSSOFixture(t)
	status, page := f.ssoBrowser().signIn("eve@acme.example")
	f.refusedSignIn(status, page, "does not say eve@acme.example is verified", "unverified")
}

// The provider signs in someone of another domain (the email typed found
// the organisation; the provider answered for another account).
func TestSSORefusesAnEmailOutsideTheDomains(t *testing.T) {
	f := newSSOFixture(t)
	b := f.ssoBrowser()
	f.idp.AutoApprove = false
	b.c.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if r.URL.Path == "/login" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/console/sign-in", strings.NewReader("email=bob%40acme.example"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	login, _ := resp.Location()
	b.c.CheckRedirect = nil
	status, page := b.do(mustPost(t, login.String(), url.Values{"id": {login.Query().Get("id")}, "email": {"mallory@elsewhere.example"}}))
	f.refusedSignIn(status, page, "mallory@elsewhere.example is outside the organisation&#39;s email domains", "domain")
}

func mustPost(t *testing.T, u string, form url.Values) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

func TestSSORefusesWhenTheRoleClaimRefuses(t *testing.T) {
	f := newSSOFixture(t)
	if _, err := f.d.Pool().Exec(context.Background(), `UPDATE org_sso SET unmatched = 'refuse'`); err != nil {
		t.Fatal(err)
	}
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	f.refusedSignIn(status, page, "role claim groups gives bob@acme.example no role", "role")
}

// An email whose domain no organisation signs in with is told to ask for
// a one-time link.
func TestSSOSignInOfAnUnknownDomainSaysSo(t *testing.T) {
	f := newSSOFixture(t)
	status, page := f.ssoBrowser().signIn("someone@nowhere.example")
	if status != http.StatusBadRequest || !strings.Contains(page, "no organisation signs in with an identity provider for nowhere.example") {
		t.Fatalf("%d %s", status, page)
	}
}

// The provider's discovery goes through the SSRF-guarded client: a
// console that may reach public addresses only does not reach a provider
// on loopback (stored while loopback was allowed), and says so.
func TestSSODiscoveryGoesThroughTheSSRFGuard(t *testing.T) {
	f := newSSOFixtureReaching(t, outbound.PublicTargets)
	status, page := f.ssoBrowser().signIn("bob@acme.example")
	if status != http.StatusBadGateway || !strings.Contains(page, "identity provider could not be reached") {
		t.Fatalf("%d %s", status, page)
	}
	if f.idp.KeySetServed() != 0 || f.sessions() != 0 {
		t.Fatal("the provider was reached")
	}
}

// A sign-in that comes back after its ten minutes is refused.
func TestSSORefusesAnExpiredState(t *testing.T) {
	f := newSSOFixture(t)
	b := f.ssoBrowser()
	b.c.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.Path, sso.CallbackPath) {
			b.callback = r.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}
	b.signIn("bob@acme.example")
	if _, err := f.d.Pool().Exec(context.Background(), `UPDATE console_sso_states SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	b.c.CheckRedirect = nil
	status, page := b.get(b.callback)
	f.refusedSignIn(status, page, "took over ten minutes", "state")
}
