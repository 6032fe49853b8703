// Package console is the support console at /console
// (docs/design.md#the-support-console): server-rendered pages over the
// same application service as the management API (integrations.Service), signed in with a one-time link that becomes a session
// cookie. Pages work without JavaScript; the only script turns the UTC
// times into the viewer's time zone, and has the forms' time inputs take
// times in that zone (their tz field names it; without it they are UTC),
// and helps the mapping editor (pages_mapping.go) along.
// Templates, style and script are embedded in the binary.
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/sso"
)

// Prefix is the path the console is served under.
const Prefix = "/console"

// Cookie names: the session, and the one-shot message a page shows after
// an action redirected to it.
const (
	sessionCookie = "commerce_console"
	flashCookie   = "commerce_console_flash"
)

// csrfField is the name of every form's CSRF token field.
const csrfField = "csrf"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Deps are what the console needs.
type Deps struct {
	DB *db.DB
	// Service is the application service the API's management routes call.
	Service *integrations.Service
	Log     *zap.Logger
	// BaseURL is the public {base_url}: the inbound URLs shown are under it,
	// and over https the session cookie is Secure.
	BaseURL string
	// Sealer opens and seals organisations' identity provider client
	// secrets; without it, sign-in through a provider is unavailable.
	Sealer *secrets.Sealer
	// Targets is what requests to identity providers may reach (the
	// SSRF guard's COMMERCE_ALLOW_PRIVATE_TARGETS).
	Targets outbound.Targets
}

// LoginURL is the sign-in link of a console login token.
func LoginURL(baseURL, token string) string {
	return strings.TrimSuffix(baseURL, "/") + Prefix + "/login/" + url.PathEscape(token)
}

type console struct {
	Deps
	pages map[string]*template.Template
	// parties are the identity providers' relying parties, cached.
	parties *sso.Parties
	// router serves the console's pages; a refusal serves the page it
	// goes back to through it (refused).
	router http.Handler
}

// New returns the console's handler, to be mounted at Prefix.
func New(d Deps) http.Handler {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	c := &console{Deps: d, pages: parsePages(), parties: sso.NewParties(d.Targets)}
	r := chi.NewRouter()
	c.router = r
	r.Use(c.headers)
	r.Use(c.checkQuery)
	static, _ := fs.Sub(staticFiles, "static")
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", staticHandler(static)))
	r.Get("/login/{token}", c.loginPage)
	r.Post("/login/{token}", c.login)
	r.Get("/sign-in", c.ssoSignInPage)
	r.Post("/sign-in", c.ssoBegin)
	r.Get("/sso/callback", c.ssoCallback)
	r.Group(func(r chi.Router) {
		r.Use(c.signedIn)
		r.Get("/", endpointsPage.serve(c))
		r.Get("/endpoints/{id}/mapping", c.mappingPage)
		r.Get("/receipts", receiptsPage.serve(c))
		r.Get("/receipts/{id}", c.receipt)
		r.Get("/replays/new", c.newBulkReplay)
		r.Get("/replays/{id}", c.bulkReplay)
		r.Get("/bulk", c.bulkActions)
		r.Get("/resends/new", c.newBulkResend)
		r.Get("/resends/{id}", c.bulkResend)
		r.Get("/webhooks", subscriptionsPage.serve(c))
		r.Get("/webhooks/{id}", c.subscription)
		r.Get("/deliveries", deliveriesPage.serve(c))
		r.Get("/deliveries/{id}", c.delivery)
		r.Get("/events/{id}", c.event)
		r.Get("/audit", auditPage.serve(c))
		r.Get("/sessions", c.sessionsPage)
		r.With(c.ownerOnly).Get("/settings/sso", c.ssoSettingsPage)
		r.Group(func(r chi.Router) {
			r.Use(c.checkCSRF)
			r.Post("/logout", c.logout)
			r.Post("/sessions/{id}/end", c.endSession)
			r.With(c.ownerOnly).Post("/settings/sso", c.setSSO)
			r.With(c.ownerOnly).Post("/settings/sso/remove", c.removeSSO)
			// A test run stores nothing: members may try a mapping too.
			r.Post("/endpoints/{id}/mapping/run", c.runMapping)
			r.Group(func(r chi.Router) {
				// Members read; admins and owners act.
				r.Use(c.mayAct)
				r.Post("/endpoints", c.createEndpoint)
				r.Post("/endpoints/{id}/pause", c.setEndpointState(domain.EndpointPaused))
				r.Post("/endpoints/{id}/resume", c.setEndpointState(domain.EndpointActive))
				r.Post("/endpoints/{id}/mapping", c.saveMapping)
				r.Post("/endpoints/{id}/mapping/end", c.endMapping)
				r.Post("/receipts/{id}/dry-run", c.dryRun)
				r.Post("/receipts/{id}/replay", c.replay)
				r.Post("/receipts/{id}/cancel", c.cancel)
				r.Post("/replays", c.startBulkReplay)
				r.Post("/replays/{id}/stop", c.stopBulkReplay)
				r.Post("/resends", c.startBulkResend)
				r.Post("/webhooks", c.createSubscription)
				r.Post("/webhooks/{id}/recover", c.recover)
				r.Post("/webhooks/{id}/active", c.setSubscriptionActive)
				r.Post("/webhooks/{id}/settings", c.setSubscriptionSettings)
				r.Post("/deliveries/{id}/resend", c.resend)
				r.Post("/deliveries/{id}/skip", c.skip)
			})
		})
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no such page.")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusMethodNotAllowed, "That page does not take this method.")
	})
	return r
}

// headers sets what every console answer carries: nothing is cached or
// framed, scripts and styles come only from the console itself.
func (c *console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp("'self'"))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
			// The files change only with the binary.
			h.Set("Cache-Control", "public, max-age=86400")
		} else {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// csp is the console's Content-Security-Policy, its forms posting to
// formAction.
func csp(formAction string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"form-action " + formAction + "; frame-ancestors 'none'; base-uri 'none'"
}

// signInCSP is the policy of a page with the sign-in form: its POST is
// redirected to the organisation's identity provider, which a browser
// checks against form-action too. Providers are https, or http on a
// loopback address where private targets are allowed.
func (c *console) signInCSP() string {
	if c.Targets == outbound.PublicTargets {
		return csp("'self' https:")
	}
	return csp("'self' https: http://127.0.0.1:* http://[::1]:*")
}

// maxQueryValue bounds a filter value a page reads, and maxCallbackValue
// a value an identity provider sends back to the sign-in's callback.
const (
	maxQueryValue    = 200
	maxCallbackValue = 4096
)

// checkQuery answers 400, naming the filter, a query value no page can use:
// invalid UTF-8, a NUL or another control character, or one longer than
// maxQueryValue. Nothing behind it meets such a value (Postgres refuses a
// NUL or invalid UTF-8 in text).
func (c *console) checkQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := maxQueryValue
		if r.URL.Path == Prefix+"/sso/callback" {
			// A provider's authorization code can be a long sealed token.
			limit = maxCallbackValue
		}
		for key, values := range r.URL.Query() {
			for _, v := range values {
				if problem := badQueryValue(key, v, limit); problem != "" {
					c.fail(w, r, http.StatusBadRequest, problem)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func badQueryValue(key, v string, limit int) string {
	if len(v) > limit && utf8.ValidString(key) {
		return "The filter " + strconv.QuoteToASCII(key) + " is longer than " + strconv.Itoa(limit) + " characters."
	}
	return badText("filter", key, v)
}

// badText says what makes a value named key, of a filter or a form field
// (what), one nothing can store or search for: bytes that are not UTF-8,
// or a control character (Postgres refuses a NUL or invalid UTF-8 in
// text). The empty string for a value that is neither.
func badText(what, key, v string) string {
	name := strconv.QuoteToASCII(key)
	if !utf8.ValidString(key) || !utf8.ValidString(v) {
		return "The " + what + " " + name + " holds bytes that are not UTF-8 text."
	}
	for _, ch := range key + v {
		if unicode.IsControl(ch) {
			return "The " + what + " " + name + " holds a control character (such as NUL), which no value contains."
		}
	}
	return ""
}

// ---- sessions

type userKey struct{}

// viewer is the signed-in user of a request, with the session's CSRF token.
type viewer struct {
	db.ConsoleUser
	CSRF string
}

// CanAct says whether the viewer may replay, cancel, pause and the rest.
func (v viewer) CanAct() bool { return v.Role.CanManageEndpoints() }

func (v viewer) actor() integrations.Actor { return integrations.ConsoleActor(v.Email) }

func viewerOf(ctx context.Context) viewer {
	v, _ := ctx.Value(userKey{}).(viewer)
	return v
}

// csrfToken is a session's CSRF token: derived one way from the session
// token, so it names the session without revealing its cookie, and a page
// of another origin cannot know it.
func csrfToken(session string) string {
	sum := sha256.Sum256([]byte("commerce console csrf\x00" + session))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// secure says whether cookies must be Secure: over https.
func (c *console) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(c.BaseURL), "https://")
}

func (c *console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: c.secure(r)})
}

// loginPage is what opening a sign-in link shows: a button whose POST
// spends the link. A mail scanner that fetches the link does not press it.
func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "signin", map[string]any{"Action": Prefix + "/login/" + url.PathEscape(chi.URLParam(r, "token"))})
}

// login spends a one-time link and starts a session. A sign-in sent from
// another site is refused before the link is looked at, so it stays
// unused: otherwise a page elsewhere could post an attacker's own link and
// sign the victim's browser into the attacker's session (login CSRF).
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	if c.crossSite(r) {
		c.fail(w, r, http.StatusForbidden, "Refused: the sign-in was sent from another site. Open the link again and press Sign in.")
		return
	}
	token, u, err := c.DB.StartConsoleSession(r.Context(), chi.URLParam(r, "token"))
	if err != nil {
		if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
			c.render(w, r, http.StatusUnauthorized, "signin", map[string]any{"Message": domain.ErrorMessage(err)})
			return
		}
		c.internal(w, r, err)
		return
	}
	c.auditSignIn(r, u, "link")
	c.setCookie(w, r, sessionCookie, token, int(db.ConsoleSessionTTL.Seconds()))
	c.flash(w, r, "Signed in as "+u.Email+" ("+string(u.Role)+") of "+u.OrgName+".")
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// crossSite reports whether a browser says r was sent by a page of another
// origin. A browser that sends Sec-Fetch-Site is believed: anything but
// same-origin or none (a link typed or opened from a mail) is another site.
// Its Origin is not, because a page under Referrer-Policy: no-referrer, as
// the console's pages are, makes Chromium send "Origin: null" for its own
// forms. Without Sec-Fetch-Site, an Origin that is neither the console's
// public origin (COMMERCE_BASE_URL) nor the host the request was sent to,
// "null" included, is another site. A client that sends neither header is
// no browser acting for a page.
func (c *console) crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "":
	case "same-origin", "none":
		return false
	default:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	own := "http://"
	if c.secure(r) {
		own = "https://"
	}
	return !strings.EqualFold(origin, own+r.Host) && !strings.EqualFold(origin, originOf(c.BaseURL))
}

// originOf is a URL's scheme://host[:port], or "" when it has none.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func (c *console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if err := c.DB.EndConsoleSession(r.Context(), ck.Value); err != nil {
			c.internal(w, r, err)
			return
		}
	}
	c.setCookie(w, r, sessionCookie, "", -1)
	c.render(w, r, http.StatusOK, "signin", map[string]any{"Message": "Signed out."})
}

// signedIn lets through requests with a live session.
func (c *console) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			if r.ContentLength != 0 {
				closeUnread(w) // the form is not read
			}
			c.render(w, r, http.StatusUnauthorized, "signin", nil)
			return
		}
		u, err := c.DB.ConsoleSession(r.Context(), ck.Value)
		if err != nil {
			if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
				c.setCookie(w, r, sessionCookie, "", -1)
				c.render(w, r, http.StatusUnauthorized, "signin", map[string]any{"Message": "Your session is over; sign in again."})
				return
			}
			c.internal(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), userKey{}, viewer{ConsoleUser: u, CSRF: csrfToken(ck.Value)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// mayAct refuses members.
func (c *console) mayAct(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := viewerOf(r.Context()); !v.CanAct() {
			c.fail(w, r, http.StatusForbidden, "Refused: "+v.Email+" is a "+string(v.Role)+"; this needs the admin or owner role.")
			return
		}
		next.ServeHTTP(w, r)
	})
}
