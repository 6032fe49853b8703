package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
)

// IdempotencyKeyHeader names a request or post for its sender's retries of
// it.
const IdempotencyKeyHeader = domain.IdempotencyKeyHeader

// ReplayedHeader marks an answer repeated from the first request or post
// with the same Idempotency-Key.
const ReplayedHeader = "Idempotent-Replayed"

// keptAnswerHeaders are the answer headers kept with a request's answer and
// sent again with it.
var keptAnswerHeaders = []string{"Content-Type", "Location"}

// maxKeptAnswer bounds the answer body kept for a key. Every answer of the
// API's POST routes fits (the largest, a bulk import reporting every one of
// 10000 rows, is a few MB); one over it keeps only its status, and a retry
// is told so.
const maxKeptAnswer = 8 << 20

// idempotentPosts serves the client retries of every authenticated POST:
// one with an Idempotency-Key runs once per key and API key within
// db.PostKeyWindow. It reads the body itself (bounded by the route's limit,
// after boundLargeWrites admitted it) and hashes it with the method and path,
// claims the key, and only then lets Huma parse and run the request, whose
// answer it keeps. A repeat with the same request answers the kept answer
// with Idempotent-Replayed: true; with another request 422; while the first
// runs 409. An answer of 5xx, or none (a panic), frees the key. A body that
// cannot be read whole, or is over the route's limit, is passed on
// unclaimed, for Huma to answer 408 or 413.
func (s *Server) idempotentPosts(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	if _, keyed := op.Metadata[metaScope]; !keyed || op.Method != http.MethodPost {
		next(ctx)
		return
	}
	var values []string
	ctx.EachHeader(func(name, value string) {
		if http.CanonicalHeaderKey(name) == IdempotencyKeyHeader {
			values = append(values, value)
		}
	})
	key, ok := domain.ParseIdempotencyKey(values)
	switch {
	case !ok:
		writeContextError(ctx, http.StatusBadRequest, domain.BadIdempotencyKey)
		return
	case key == "":
		next(ctx)
		return
	}
	body, readErr := readBody(ctx, op)
	if readErr != nil || int64(len(body)) >= op.MaxBodyBytes {
		next(withBody(ctx, body, readErr))
		return
	}
	u := ctx.URL()
	h := sha256.New()
	fmt.Fprintf(h, "%s %s?%s\n", op.Method, u.Path, u.RawQuery)
	h.Write(body)
	auth := keyAuth(ctx.Context())
	k := db.RequestKey{OrgID: auth.Principal.OrgID, APIKeyID: auth.Principal.KeyID, Key: key}
	h.Sum(k.RequestSHA256[:0])

	claim, err := s.db.ClaimRequestKey(ctx.Context(), k)
	switch {
	case err != nil:
		s.writeFail(ctx, err)
	case claim.OtherRequest:
		writeContextError(ctx, http.StatusUnprocessableEntity,
			"this "+IdempotencyKeyHeader+" was already used with another request (method, path or body): use a new key for a new request")
	case claim.First:
		s.runClaimed(withBody(ctx, body, nil), next, k)
	case claim.Answer == nil:
		writeContextError(ctx, http.StatusConflict, "the first request with this "+IdempotencyKeyHeader+" has no answer yet: retry later")
	case claim.Answer.Dropped:
		writeContextError(ctx, http.StatusConflict, fmt.Sprintf(
			"the first request with this %s was answered %d, and its answer, over %d MB, was not kept",
			IdempotencyKeyHeader, claim.Answer.Status, maxKeptAnswer>>20))
	default:
		for name, v := range claim.Answer.Headers {
			ctx.SetHeader(name, v)
		}
		ctx.SetHeader(ReplayedHeader, "true")
		ctx.SetStatus(claim.Answer.Status)
		_, _ = ctx.BodyWriter().Write(claim.Answer.Body)
	}
}

// writeContextError writes the API's error body with any status (Huma's
// own error writer turns 422 into 400, see newHumaError).
func writeContextError(ctx huma.Context, status int, msg string) {
	ctx.SetHeader("Content-Type", "application/json")
	ctx.SetStatus(status)
	_ = json.NewEncoder(ctx.BodyWriter()).Encode(ErrorBody{Message: msg})
}

// runClaimed runs the request that claimed k and keeps its answer, or frees
// the key when the answer is 5xx or the request ends without one.
func (s *Server) runClaimed(ctx huma.Context, next func(huma.Context), k db.RequestKey) {
	rec := &recordingContext{humaContext: ctx, headers: map[string]string{}}
	bg := context.WithoutCancel(ctx.Context())
	log := logging.From(bg, s.log)
	kept := false
	defer func() {
		if kept {
			return
		}
		if err := s.db.ReleaseRequestKey(bg, k); err != nil {
			log.Error("freeing an Idempotency-Key", zap.Error(err))
		}
	}()
	next(rec)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= http.StatusInternalServerError {
		return
	}
	a := db.KeptAnswer{Status: status, Headers: rec.headers, Body: rec.body.Bytes()}
	if secretAnswer(ctx.Operation()) {
		a.Body = withoutSecret(a.Body)
	}
	if rec.dropped {
		a.Body = nil
	}
	if err := s.db.KeepAnswer(bg, k, a); err != nil {
		log.Error("keeping the answer of an Idempotency-Key", zap.Error(err))
		return
	}
	kept = true
}

// withoutSecret is an answer body with its secret (or password) field null: what an
// Idempotency-Key keeps of an answer that carries a secret. A body that is
// not a JSON object keeps nothing.
func withoutSecret(body []byte) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil
	}
	for _, name := range []string{"secret", "password"} {
		if _, ok := fields[name]; ok {
			fields[name] = json.RawMessage("null")
		}
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return out
}

// readBody reads a write's body up to its route's limit (Huma answers 413
// when the limit is reached), within the route's body read time.
func readBody(ctx huma.Context, op *huma.Operation) ([]byte, error) {
	r := ctx.BodyReader()
	if r == nil {
		return nil, nil
	}
	if op.BodyReadTimeout > 0 {
		_ = ctx.SetReadDeadline(time.Now().Add(op.BodyReadTimeout))
	}
	size := 512
	if n, err := strconv.ParseInt(ctx.Header("Content-Length"), 10, 64); err == nil && n >= 0 && n < op.MaxBodyBytes {
		size = int(n) + 1 // room for the EOF read
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(io.LimitReader(r, op.MaxBodyBytes))
	if err != nil {
		// What is left of the body is not waited for: the connection closes
		// after the answer.
		refuseEarly(ctx)
	}
	return buf.Bytes(), err
}

// withBody hands Huma a body already read (and the error that ended its
// reading, if any) in place of the request's.
func withBody(ctx huma.Context, body []byte, err error) huma.Context {
	return bodyContext{humaContext: ctx, body: &heldBody{b: body, err: err}}
}

// humaContext lets a wrapper embed huma.Context (whose Context method
// would clash with a field named Context).
type humaContext = huma.Context

type bodyContext struct {
	humaContext
	body *heldBody
}

func (c bodyContext) BodyReader() io.Reader { return c.body }

// SetReadDeadline does nothing: the body is read already, under the one
// deadline its reading set, which a later reader must not extend (the
// server would then wait that much longer to drain what the client has not
// sent).
func (c bodyContext) SetReadDeadline(time.Time) error { return nil }

// heldBody reads out a body held in memory and lets go of it at its end, so
// that only Huma's copy of a large body stays alive while it is decoded.
type heldBody struct {
	b   []byte
	err error
}

func (r *heldBody) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		r.b = nil
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// recordingContext passes an answer on and records its status, the headers
// in keptAnswerHeaders and up to maxKeptAnswer bytes of its body.
type recordingContext struct {
	humaContext
	status  int
	headers map[string]string
	body    bytes.Buffer
	dropped bool
}

func (c *recordingContext) SetStatus(code int) {
	c.status = code
	c.humaContext.SetStatus(code)
}

func (c *recordingContext) SetHeader(name, value string) {
	c.keep(name, value)
	c.humaContext.SetHeader(name, value)
}

func (c *recordingContext) AppendHeader(name, value string) {
	c.keep(name, value)
	c.humaContext.AppendHeader(name, value)
}

func (c *recordingContext) keep(name, value string) {
	name = http.CanonicalHeaderKey(name)
	for _, h := range keptAnswerHeaders {
		if h == name {
			c.headers[name] = value
		}
	}
}

func (c *recordingContext) BodyWriter() io.Writer { return recordingWriter{c} }

type recordingWriter struct{ c *recordingContext }

func (w recordingWriter) Write(p []byte) (int, error) {
	c := w.c
	if !c.dropped {
		if c.body.Len()+len(p) > maxKeptAnswer {
			c.dropped = true
			c.body = bytes.Buffer{}
		} else {
			c.body.Write(p)
		}
	}
	return c.humaContext.BodyWriter().Write(p)
}

// errorResponse documents an error answer: the API's Error object.
func errorResponse(reg huma.Registry, desc string) *huma.Response {
	schema := reg.Schema(reflect.TypeFor[ErrorBody](), true, "")
	return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}}
}

// retriesDoc is how every authenticated POST describes its retries.
const retriesDoc = "Retries: send an Idempotency-Key header (1 to 255 printable ASCII characters, a new one for each " +
	"new request; anything else is 400). Within 24 hours, a request with the same key from the same API key is " +
	"answered with the first request's status, body, Content-Type and Location, plus the header Idempotent-Replayed: " +
	"true, and applies nothing again; the same key with another method, path or body answers 422; a repeat while the " +
	"first request is still running answers 409. Answers below 500 are kept (a 400 stays a 400 on retry: fix the " +
	"request and use a new key); a 5xx answer is not, and a retry with the same key runs anew. Keys are kept per API " +
	"key: another key of the organisation, or another organisation, may use the same value for another request."

// documentIdempotency adds the Idempotency-Key header, the
// Idempotent-Replayed answer header and the 409 and 422 answers of
// idempotentPosts to every authenticated POST.
func documentIdempotency(doc *huma.OpenAPI) {
	reg := doc.Components.Schemas
	param := &huma.Param{
		Name: IdempotencyKeyHeader, In: "header",
		Description: "Names this request for its retries (see Retries in the description): 1 to 255 printable ASCII characters.",
		Schema:      &huma.Schema{Type: huma.TypeString, MinLength: ptr(1), MaxLength: ptr(255), Pattern: "^[ -~]+$"},
	}
	replayed := &huma.Header{
		Description: "true when this is the kept answer of the first request with the same Idempotency-Key, repeated.",
		Schema:      &huma.Schema{Type: huma.TypeString, Enum: []any{"true"}},
	}
	for _, item := range doc.Paths {
		op := item.Post
		if op == nil {
			continue
		}
		if _, keyed := op.Metadata[metaScope]; !keyed {
			continue
		}
		op.Description += "\n\n" + retriesDoc
		op.Parameters = append(op.Parameters, param)
		for code, text := range map[string]string{
			"409": "A request with this Idempotency-Key is still running.",
			"422": "This Idempotency-Key was used with another request.",
		} {
			if resp, ok := op.Responses[code]; ok {
				resp.Description = strings.TrimSuffix(resp.Description, ".") + "; or: " + text
			} else {
				op.Responses[code] = errorResponse(reg, text)
			}
		}
		declared, _ := op.Metadata[metaDeclared].([]int)
		op.Metadata[metaDeclared] = append(declared, http.StatusConflict, http.StatusUnprocessableEntity)
		for code, resp := range op.Responses {
			switch code {
			case "401", "403", "429", "500", "default":
				continue // answered before a key is looked at, or never kept
			}
			if resp.Headers == nil {
				resp.Headers = map[string]*huma.Header{}
			}
			resp.Headers[ReplayedHeader] = replayed
		}
	}
}

func ptr[T any](v T) *T { return &v }
