package console

import (
	"crypto/subtle"
	"net/http"
	"time"
)

// maxForm bounds a console form's body, and formReadTime how long it may
// take to arrive: the API's pace for a body of that size (a megabyte a
// second, and ten seconds more).
const (
	maxForm      = 64 << 10
	formReadTime = 10 * time.Second
)

// checkCSRF refuses a form whose CSRF token is not the session's.
func (c *console) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(formReadTime))
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			w.Header().Set("Connection", "close")
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
				if problem := badText("field", key, v); problem != "" {
					c.fail(w, r, http.StatusBadRequest, problem)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
