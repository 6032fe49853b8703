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
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/logging"
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
}

// LoginURL is the sign-in link of a console login token.
func LoginURL(baseURL, token string) string {
	return strings.TrimSuffix(baseURL, "/") + Prefix + "/login/" + url.PathEscape(token)
}

type console struct {
	Deps
	pages map[string]*template.Template
	// router serves the console's pages; a refusal serves the page it
	// goes back to through it (refused).
	router http.Handler
}

// New returns the console's handler, to be mounted at Prefix.
func New(d Deps) http.Handler {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	c := &console{Deps: d, pages: parsePages()}
	r := chi.NewRouter()
	c.router = r
	r.Use(c.headers)
	r.Use(c.checkQuery)
	static, _ := fs.Sub(staticFiles, "static")
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", staticHandler(static)))
	r.Get("/login/{token}", c.loginPage)
	r.Post("/login/{token}", c.login)
	r.Group(func(r chi.Router) {
		r.Use(c.signedIn)
		r.Get("/", endpointsPage.serve(c))
		r.Get("/endpoints/{id}/mapping", c.mappingPage)
		r.Get("/receipts", receiptsPage.serve(c))
		r.Get("/receipts/{id}", c.receipt)
		r.Get("/replays/new", c.newBulkReplay)
		r.Get("/replays/{id}", c.bulkReplay)
		r.Get("/webhooks", subscriptionsPage.serve(c))
		r.Get("/deliveries", deliveriesPage.serve(c))
		r.Get("/deliveries/{id}", c.delivery)
		r.Get("/audit", auditPage.serve(c))
		r.Group(func(r chi.Router) {
			r.Use(c.checkCSRF)
			r.Post("/logout", c.logout)
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
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
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

// maxQueryValue bounds a filter value a page reads.
const maxQueryValue = 200

// checkQuery answers 400, naming the filter, a query value no page can use:
// invalid UTF-8, a NUL or another control character, or one longer than
// maxQueryValue. Nothing behind it meets such a value (Postgres refuses a
// NUL or invalid UTF-8 in text).
func (c *console) checkQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for key, values := range r.URL.Query() {
			for _, v := range values {
				if problem := badQueryValue(key, v); problem != "" {
					c.fail(w, r, http.StatusBadRequest, problem)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func badQueryValue(key, v string) string {
	if len(v) > maxQueryValue && utf8.ValidString(key) {
		return "The filter " + strconv.QuoteToASCII(key) + " is longer than " + strconv.Itoa(maxQueryValue) + " characters."
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
	c.setCookie(w, r, sessionCookie, token, int(db.ConsoleSessionTTL.Seconds()))
	c.flash(w, r, "Signed in as "+u.Email+" ("+string(u.Role)+") of "+u.OrgName+".")
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// crossSite reports whether a browser says r was sent by a page of another
// origin: Sec-Fetch-Site other than same-origin or none (a link typed or
// opened from a mail), or an Origin that is neither the console's public
// origin (COMMERCE_BASE_URL) nor the host the request was sent to ("null",
// what a sandboxed or privacy-minded page sends, is another origin). A
// client that sends neither header is no browser acting for a page.
func (c *console) crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
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

// ---- answers

// flash keeps a message for the next page shown.
func (c *console) flash(w http.ResponseWriter, r *http.Request, msg string) {
	c.setCookie(w, r, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(msg)), 60)
}

// takeFlash reads and clears the message kept for this page.
func (c *console) takeFlash(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	c.setCookie(w, r, flashCookie, "", -1)
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return ""
	}
	return string(b)
}

// done answers an action by going to a page that says what happened.
func (c *console) done(w http.ResponseWriter, r *http.Request, to, msg string) {
	c.flash(w, r, msg)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// page is what every template gets.
type page struct {
	// RequestID names the request on an error page, for the service log.
	RequestID string
	Title     string
	Nav       string
	Viewer    viewer
	Flash     string
	Error     string
	Refresh   int
	Data      any
}

func (c *console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	c.renderPage(w, r, status, name, page{Data: data})
}

func (c *console) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := c.pages[name]
	if !ok {
		c.internal(w, r, errors.New("no console template "+name))
		return
	}
	p.Viewer = viewerOf(r.Context())
	if refusal, ok := r.Context().Value(refusalKey{}).(string); ok {
		p.Flash = refusal
		p.RequestID = middleware.GetReqID(r.Context())
	}
	if p.Flash == "" && r.Method == http.MethodGet {
		p.Flash = c.takeFlash(w, r)
	}
	if p.Title == "" {
		p.Title = titles[name]
	}
	if p.Nav == "" {
		p.Nav = name
	}
	if status >= 400 && p.RequestID == "" {
		// Every refusal names its request, the sign-in page's 401 too.
		p.RequestID = middleware.GetReqID(r.Context())
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		logging.From(r.Context(), c.Log).Error("rendering a console page", zap.String("page", name), zap.Error(err))
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// confirmData is a confirmation page: the question, and the form that
// posts the action again with confirm=yes.
type confirmData struct {
	Question, Action, Button, Back string
	Fields                         url.Values
	// Selection, for a bulk replay, is what it would take.
	Selection *selectionData
}

// confirmed says whether an action's POST carries its confirmation. When
// it does not, it answers a page that asks the question (naming what the
// action acts on, and how many records) with a button that posts the same
// form confirmed, and a way back.
func (c *console) confirmed(w http.ResponseWriter, r *http.Request, question, button, back string) bool {
	return c.confirmedShowing(w, r, question, button, back, nil)
}

// confirmedShowing is confirmed, the question page also showing the
// records a bulk action would take.
func (c *console) confirmedShowing(w http.ResponseWriter, r *http.Request, question, button, back string, sel *selectionData) bool {
	if r.PostForm.Get("confirm") == "yes" {
		return true
	}
	fields := url.Values{}
	for k, vs := range r.PostForm {
		if k != "confirm" {
			fields[k] = vs
		}
	}
	c.renderPage(w, r, http.StatusOK, "confirm", page{Nav: "confirm", Data: confirmData{Question: question, Action: r.URL.Path,
		Button: button, Back: back, Fields: fields, Selection: sel}})
	return false
}

// fail answers with a page saying what went wrong.
func (c *console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.renderPage(w, r, status, "error", page{Title: http.StatusText(status), Error: msg, RequestID: middleware.GetReqID(r.Context())})
}

// internal answers a fault of the service: the detail goes to the log. A
// database that refused or could not give a connection is a 503 with
// Retry-After: the page may load in a moment.
func (c *console) internal(w http.ResponseWriter, r *http.Request, err error) {
	if db.Unavailable(err) {
		logging.From(r.Context(), c.Log).Warn("console: database unavailable", zap.String("route", route(r)), zap.Error(err))
		w.Header().Set("Retry-After", strconv.Itoa(domain.UnavailableRetryAfter))
		c.fail(w, r, http.StatusServiceUnavailable, "The service cannot answer just now; try again in a few seconds.")
		return
	}
	logging.From(r.Context(), c.Log).Error("console", zap.String("route", route(r)), zap.Error(err))
	c.fail(w, r, http.StatusInternalServerError, "Something went wrong on our side; the service log has the details.")
}

// route is the pattern r matched (/console/login/{token}): what a log line
// names a request by, never its path, which can be a credential (an unused
// sign-in link).
func route(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

// failErr answers an error of the application service with the status of
// its kind (the map the API uses): its own message for a domain error, a
// generic one (and the log) for a fault of the service.
func (c *console) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status := domain.ErrorCode(err).Status()
	if status == http.StatusInternalServerError {
		c.internal(w, r, err)
		return
	}
	c.fail(w, r, status, domain.ErrorMessage(err))
}

// refused answers a refused action with the page it was asked from
// (back, a console path) and the reason on it, at the status the
// refusal's kind has in the API (422, 409, 400...), not a redirect: a
// script or a test reading the status sees the refusal. A fault of the
// service is an error page.
func (c *console) refused(w http.ResponseWriter, r *http.Request, back string, err error) {
	code := domain.ErrorCode(err)
	if code == domain.EINTERNAL {
		c.internal(w, r, err)
		return
	}
	msg := "Refused: " + domain.ErrorMessage(err)
	u, perr := url.Parse(back)
	if perr != nil || !strings.HasPrefix(u.Path, Prefix+"/") {
		c.fail(w, r, code.Status(), msg)
		return
	}
	// The page is served as its GET would be, with the reason as its
	// message and the refusal's status.
	rctx := chi.NewRouteContext()
	rctx.RoutePath = strings.TrimPrefix(u.Path, Prefix)
	ctx := context.WithValue(context.WithValue(r.Context(), refusalKey{}, msg), chi.RouteCtxKey, rctx)
	page := r.Clone(ctx)
	page.Method, page.URL, page.RequestURI = http.MethodGet, &url.URL{Path: u.Path, RawQuery: u.RawQuery}, u.RequestURI()
	page.Body, page.ContentLength, page.Form, page.PostForm = http.NoBody, 0, nil, nil
	c.router.ServeHTTP(&refusalWriter{ResponseWriter: w, status: code.Status()}, page)
}

// refusalKey carries a refusal's message to the page that shows it.
type refusalKey struct{}

// refusalWriter answers the page of a refusal with the refusal's status
// where the page would have answered 200.
type refusalWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *refusalWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if code == http.StatusOK {
		code = w.status
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// now is the clock of the forms' defaults.
var now = time.Now
