package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
)

// ErrorBody is the API's Error object, the body of every error answer
// (docs/design.md#conventions-on-the-wire).
type ErrorBody struct {
	status  int
	headers http.Header
	Message string `json:"error" doc:"What went wrong." example:"Rate limited"`
}

// Error implements error.
func (e *ErrorBody) Error() string { return e.Message }

// GetStatus implements huma.StatusError.
func (e *ErrorBody) GetStatus() int { return e.status }

// GetHeaders implements huma.HeadersError: a 503 says when to retry.
func (e *ErrorBody) GetHeaders() http.Header { return e.headers }

// unavailable is the answer to a request the database could not serve
// (db.Unavailable): 503 with Retry-After, counted.
func (s *Server) unavailable(ctx context.Context, err error) *ErrorBody {
	s.metrics.unavailable.Inc()
	logging.From(ctx, s.log).Warn("database unavailable", zap.Error(err))
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(domain.UnavailableRetryAfter))
	return &ErrorBody{status: http.StatusServiceUnavailable, headers: h, Message: domain.UnavailableMessage}
}

// fail turns any error a handler meets into the answer for it. Errors with a
// domain kind keep their message; anything else is logged with the request's
// logger and answered 500 with no internal detail.
func (s *Server) fail(ctx context.Context, err error) huma.StatusError {
	if db.Unavailable(err) {
		return s.unavailable(ctx, err)
	}
	code := domain.ErrorCode(err)
	status := code.Status()
	if status == http.StatusInternalServerError {
		logging.From(ctx, s.log).Error("request failed", zap.Error(err))
		return &ErrorBody{status: status, Message: domain.InternalMessage}
	}
	// A rejection with a cause (a value the storage refused) answers its
	// generic message; the cause is for the log.
	if cause := domain.ErrorCause(err); cause != nil {
		logging.From(ctx, s.log).Warn("request rejected by the storage", zap.String("reason", domain.ErrorMessage(err)), zap.Error(cause))
	}
	return &ErrorBody{status: status, Message: domain.ErrorMessage(err)}
}

// writeFail answers, from a middleware, what fail makes of err, with its
// headers (a 503's Retry-After).
func (s *Server) writeFail(ctx huma.Context, err error) {
	e := s.fail(ctx.Context(), err)
	if he, ok := e.(huma.HeadersError); ok {
		for k, values := range he.GetHeaders() {
			for _, v := range values {
				ctx.AppendHeader(k, v)
			}
		}
	}
	writeContextError(ctx, e.GetStatus(), e.Error())
}

// newHumaError replaces huma.NewError so that Huma's own errors (validation,
// unreadable bodies) use the API's error body, and so that validation
// failures, which Huma answers 422, answer 400: 422 is kept for "understood
// but not applicable" (docs/design.md#conventions-on-the-wire).
func newHumaError(status int, msg string, errs ...error) huma.StatusError {
	if status == http.StatusUnprocessableEntity {
		status = http.StatusBadRequest
	}
	switch {
	case status == http.StatusServiceUnavailable:
		return &ErrorBody{status: status, Message: domain.UnavailableMessage}
	case status >= http.StatusInternalServerError:
		return &ErrorBody{status: status, Message: domain.InternalMessage}
	}
	details := domain.Problems{Max: maxDetails}
	for _, e := range errs {
		if e == nil {
			continue
		}
		// Only the problems the answer names are put into words: formatting
		// one can cost as much as the body (its value may be the whole object).
		if details.Len() >= maxDetails {
			details.Add("")
			continue
		}
		var detail string
		if d, ok := e.(huma.ErrorDetailer); ok {
			ed := d.ErrorDetail()
			detail = ed.Message
			if ed.Location != "" {
				detail = ed.Location + ": " + ed.Message
			}
		} else {
			detail = e.Error()
		}
		details.Add(domain.Abbreviate(detail, maxDetail))
	}
	if details.Len() > 0 {
		msg = strings.TrimSuffix(msg, ".") + ": " + details.String()
	}
	return &ErrorBody{status: status, Message: msg}
}

// A validation answer names at most maxDetails problems, each cut to
// maxDetail characters (a location can hold a caller's field name), and
// counts the rest: however broken a body is, its answer stays small.
const (
	maxDetails = 20
	maxDetail  = 200
)

// writeError writes the API's error body outside Huma (unknown routes,
// wrong methods, panics, inbound posts).
func writeError(w http.ResponseWriter, status int, msg string) {
	writeErrorBody(w, &ErrorBody{status: status, Message: msg})
}

// writeErrorBody writes an error body and its headers outside Huma.
func writeErrorBody(w http.ResponseWriter, e huma.StatusError) {
	if he, ok := e.(huma.HeadersError); ok {
		for k, v := range he.GetHeaders() {
			w.Header()[k] = v
		}
	}
	status, msg := e.GetStatus(), e.Error()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Message: msg})
}
