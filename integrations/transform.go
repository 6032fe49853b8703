package integrations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/script"
	"github.com/commerce-integration/commerce/signature"
)

// A subscription's transformation (docs/webhooks.md#transformations) is
// JavaScript defining TransformFunction, called with the event as
// deliveries carry it ({id, type, created_at, data}). It answers
// {body, headers?}, where body is an object or array (sent as its JSON) or
// a string (sent as it is) and headers at most MaxTransformHeaders more
// headers, or null to skip the event for the subscription.
const TransformFunction = "transform"

// MaxTransformHeaders is the most headers a transformation may add;
// maxTransformHeaderValue the longest value, in bytes.
const (
	MaxTransformHeaders     = 10
	maxTransformHeaderValue = 4 << 10
)

// The results of a transformation's run.
const (
	TransformTransformed = "transformed"
	TransformSkipped     = "skipped"
	TransformFailed      = "failed"
)

// TransformFailedPrefix begins the error of an attempt whose
// transformation failed (no request was made).
const TransformFailedPrefix = "transformation failed: "

// Header is a header a transformation adds.
type Header struct{ Name, Value string }

// Transformed is what a transformation made of an event.
type Transformed struct {
	// Result is TransformTransformed, TransformSkipped or TransformFailed.
	Result string
	// Body is the body to send, exactly (transformed only); JSON says
	// the script answered an object or array, not a string.
	Body []byte
	JSON bool
	// Headers are the headers to add, sorted by name (transformed only).
	Headers []Header
	// Error is why the run failed: what the script threw, the limit it
	// passed, or what is wrong with its answer (failed only).
	Error string
	// Logs are the lines the script wrote with console.log.
	Logs     []string
	Duration time.Duration
}

// AttemptError is the error an attempt whose transformation failed
// records, cut to 1,000 characters (a script may throw a long string).
func (t Transformed) AttemptError() string {
	return domain.Abbreviate(TransformFailedPrefix+t.Error, 1000)
}

// Transform runs a compiled transformation on an event, with Date's clock
// at the event's created_at, so that the same version makes the same body
// for every attempt. A failure of the script is a TransformFailed result;
// the error is the runner's own (ctx ended while waiting for a slot).
func Transform(ctx context.Context, r *script.Runner, p *script.Program, event db.Envelope) (Transformed, error) {
	input, err := json.Marshal(event)
	if err != nil {
		return Transformed{}, err
	}
	o, err := r.Run(ctx, p, TransformFunction, input, event.CreatedAt.Time)
	t := Transformed{Logs: o.Logs, Duration: o.Duration}
	var se *script.Error
	switch {
	case errors.As(err, &se):
		t.Result, t.Error = TransformFailed, se.Error()
		return t, nil
	case err != nil:
		return Transformed{}, err
	case o.Null():
		t.Result = TransformSkipped
		return t, nil
	}
	if err := t.read(o.Output); err != nil {
		t.Result, t.Error = TransformFailed, err.Error()
		return t, nil
	}
	t.Result = TransformTransformed
	return t, nil
}

// read takes the body and headers from a transformation's answer.
func (t *Transformed) read(output []byte) error {
	var answer map[string]json.RawMessage
	if output = bytes.TrimSpace(output); len(output) == 0 || output[0] != '{' || json.Unmarshal(output, &answer) != nil {
		return errors.New("transform must return an object {body, headers} or null")
	}
	for k := range answer {
		if k != "body" && k != "headers" {
			return fmt.Errorf("the returned object has %q: only body and headers are read", k)
		}
	}
	body, ok := answer["body"]
	switch {
	case !ok || string(body) == "null":
		return errors.New("the returned object has no body")
	case body[0] == '{' || body[0] == '[':
		t.Body, t.JSON = body, true
	case body[0] == '"':
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			return err
		}
		t.Body = []byte(s)
	default:
		return errors.New("body must be an object, an array or a string")
	}
	headers, err := readHeaders(answer["headers"])
	t.Headers = headers
	return err
}

// readHeaders checks the headers a transformation answered: at most
// MaxTransformHeaders, each a valid name with a string value, none of those
// the service sets (protectedHeader).
func readHeaders(raw json.RawMessage) ([]Header, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, errors.New("headers must be an object of names and string values")
	}
	if len(m) > MaxTransformHeaders {
		return nil, fmt.Errorf("%d headers: at most %d may be added", len(m), MaxTransformHeaders)
	}
	out := make([]Header, 0, len(m))
	for name, v := range m {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("header %q is not a valid header name", name)
		}
		if protectedHeader(name) {
			return nil, fmt.Errorf("header %s is not allowed", name)
		}
		var value string
		if err := json.Unmarshal(v, &value); err != nil {
			return nil, fmt.Errorf("header %s must be a string", name)
		}
		if len(value) > maxTransformHeaderValue || !validHeaderValue(value) {
			return nil, fmt.Errorf("header %s: its value must be at most %d bytes, without control characters", name, maxTransformHeaderValue)
		}
		out = append(out, Header{Name: name, Value: value})
	}
	slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if http.CanonicalHeaderKey(out[i].Name) == http.CanonicalHeaderKey(out[i-1].Name) {
			return nil, fmt.Errorf("header %s is given twice", out[i].Name)
		}
	}
	return out, nil
}

// protectedHeaders are the headers a delivery's sender sets, which a
// transformation may not: the content's type and framing, the event's and
// delivery's ids, both signature schemes (docs/design.md#signatures), the
// trace context, and the connection's own.
var protectedHeaders = []string{
	"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding", "Host", "Connection", "Keep-Alive",
	"Upgrade", "TE", "Trailer", "Expect", "User-Agent", "Traceparent", "Tracestate",
	domain.HeaderEventID, domain.HeaderEventType, domain.HeaderDeliveryID, domain.HeaderAttempt,
	signature.Header, signature.HeaderWebhookID, signature.HeaderWebhookTimestamp, signature.HeaderWebhookSignature,
}

// protectedHeader says whether a transformation may not set name (any
// case): one of protectedHeaders, or any of the service's X-Service-
// headers, the Standard Webhooks webhook- headers or the Proxy- ones.
func protectedHeader(name string) bool {
	for _, p := range protectedHeaders {
		if strings.EqualFold(name, p) {
			return true
		}
	}
	lower := strings.ToLower(name)
	return strings.HasPrefix(lower, "x-service-") || strings.HasPrefix(lower, "webhook-") || strings.HasPrefix(lower, "proxy-")
}

// validHeaderName: a token of RFC 9110.
func validHeaderName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue: no control character but a tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
