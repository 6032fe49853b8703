package console

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
)

// How the console answers: the message kept for the next page, the pages
// rendered, confirmations, and refusals and faults with their status.

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
	if name == "signin" {
		w.Header().Set("Content-Security-Policy", c.signInCSP())
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
	// Selection, for a bulk replay, is what it would take; Resends, for a
	// bulk resend.
	Selection *selectionData
	Resends   *resendSelection
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
	c.askConfirmation(w, r, confirmData{Question: question, Button: button, Back: back, Selection: sel})
	return false
}

// askConfirmation answers the page that asks d's question, with a button
// that posts the same form, confirmed, to the same path.
func (c *console) askConfirmation(w http.ResponseWriter, r *http.Request, d confirmData) {
	d.Fields = url.Values{}
	for k, vs := range r.PostForm {
		if k != "confirm" {
			d.Fields[k] = vs
		}
	}
	d.Action = r.URL.Path
	c.renderPage(w, r, http.StatusOK, "confirm", page{Nav: "confirm", Data: d})
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
