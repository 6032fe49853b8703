package domain

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is the kind of an error. Its HTTP status is Status, the one map the
// API, the inbound answers and the console share; the CLI and the workflows
// carry the kind itself (an exit message, a non-retryable error's type).
type Code string

// Error kinds.
const (
	EINVALID       Code = "invalid"       // the input is malformed or breaks a rule (400)
	EUNAUTHORIZED  Code = "unauthorized"  // credential missing, unknown or revoked (401)
	EPAYMENT       Code = "payment"       // the plan does not allow it (402)
	EFORBIDDEN     Code = "forbidden"     // credential lacks the permission (403)
	ENOTFOUND      Code = "not_found"     // no such record in the organisation (404)
	ECONFLICT      Code = "conflict"      // the record cannot move that way (409)
	ETOOLARGE      Code = "too_large"     // too many items or bytes (413)
	EUNPROCESSABLE Code = "unprocessable" // understood but not applicable (422)
	ERATELIMITED   Code = "rate_limited"  // too many calls (429)
	EUNAVAILABLE   Code = "unavailable"   // the service cannot answer now, for a while: retry later (503)
	EINTERNAL      Code = "internal"      // a fault on the service side (500)
)

// Status is the HTTP status of an error of this kind; an unknown kind (and
// EINTERNAL) is 500.
func (c Code) Status() int {
	switch c {
	case EINVALID:
		return http.StatusBadRequest
	case EUNAUTHORIZED:
		return http.StatusUnauthorized
	case EPAYMENT:
		return http.StatusPaymentRequired
	case EFORBIDDEN:
		return http.StatusForbidden
	case ENOTFOUND:
		return http.StatusNotFound
	case ECONFLICT:
		return http.StatusConflict
	case ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case EUNPROCESSABLE:
		return http.StatusUnprocessableEntity
	case ERATELIMITED:
		return http.StatusTooManyRequests
	case EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// InternalMessage is the only text an answer to a fault of the service
// carries: the detail goes to the log.
const InternalMessage = "Internal server error"

// UnavailableMessage is the only text a 503 carries: the service cannot
// answer now (its database refused or had no connection to give), and a
// retry after Retry-After may succeed.
const UnavailableMessage = "Service unavailable"

// UnavailableRetryAfter is the Retry-After, in seconds, of a 503.
const UnavailableRetryAfter = 5

// Error is an error with a kind and a message that is safe to show to a caller.
type Error struct {
	Code    Code
	Message string
	// Cause is what the service met underneath (a database error, say): it
	// is for the log only and never shown to a caller.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause, so that errors.As still finds it.
func (e *Error) Unwrap() error { return e.Cause }

// MaxMessage bounds an error message, in characters: a message quoting a
// caller's value can never grow an answer, a receipt or an event with the
// size of the value.
const MaxMessage = 1000

// Errorf returns an *Error of the given kind, its message cut to MaxMessage
// characters.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: Abbreviate(fmt.Sprintf(format, args...), MaxMessage)}
}

// ErrorCode returns the kind of err: its own when err wraps an *Error,
// EINTERNAL otherwise (and "" for nil).
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err. Errors that are not
// *Error carry internal detail and are replaced by a generic text.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return InternalMessage
}

// ErrorCause returns what lies under the *Error in err (for the log), or
// nil when there is none.
func ErrorCause(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e.Cause
	}
	return nil
}
