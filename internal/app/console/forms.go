package console

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"
)

// maxForm bounds a console form's body, and formReadTime how long it may
// take to arrive: the API's pace for a body of that size (a megabyte a
// second, and ten seconds more).
const (
	maxForm      = 64 << 10
	formReadTime = 10 * time.Second
)

// maxSourceForm bounds the form of a mapping's editor: a source of the
// most a mapping may hold (64 KiB) percent-encoded, each byte as three,
// and the fields beside it.
const maxSourceForm = 256 << 10

// sourceField is the editor's field, the one field whose text may run over
// lines: a newline, a carriage return or a tab in it is no control
// character to refuse.
const sourceField = "source"

// formLimit is how large r's form may be: a mapping editor's (whose paths
// end /mapping and /mapping/run) takes a whole source.
func formLimit(r *http.Request) int64 {
	if p := r.URL.Path; strings.HasSuffix(p, "/mapping") || strings.HasSuffix(p, "/mapping/run") {
		return maxSourceForm
	}
	return maxForm
}

// badField is badText for a form field: the source field's lines are text.
func badField(key, v string) string {
	if key == sourceField {
		v = strings.Map(func(ch rune) rune {
			if ch == '\n' || ch == '\r' || ch == '\t' {
				return ' '
			}
			return ch
		}, v)
	}
	return badText("field", key, v)
}

// closeUnread closes the connection as soon as the answer is written, the
// rest of the request's body unread: Go's server would otherwise read up to
// 256 KB of it first, as slowly as the client sends it, to reuse the
// connection. The read deadline set now ends that wait.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// checkCSRF refuses a form whose CSRF token is not the session's.
func (c *console) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(formReadTime))
		r.Body = http.MaxBytesReader(w, r.Body, formLimit(r))
		if err := r.ParseForm(); err != nil {
			closeUnread(w)
			c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		want := viewerOf(r.Context()).CSRF
		got := r.PostForm.Get(csrfField)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			c.fail(w, r, http.StatusForbidden, "Refused: the form did not carry this session's CSRF token. Reload the page and try again.")
			return
		}
		// A field holding what nothing can store or search for is named,
		// as a filter is (checkQuery), before any action reads it.
		for key, values := range r.PostForm {
			for _, v := range values {
				if problem := badField(key, v); problem != "" {
					c.fail(w, r, http.StatusBadRequest, problem)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
