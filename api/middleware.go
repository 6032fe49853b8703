package api

import (
	"context"
	"encoding/base32"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/tracing"
)

// httpMetrics are the Prometheus series of the HTTP server.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// unavailable counts the requests answered 503 because the database
	// refused or could not give a connection.
	unavailable prometheus.Counter
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "commerce_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "commerce_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
	}
	m.unavailable = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "commerce_http_database_unavailable_total",
		Help: "Requests answered 503 because the database refused or could not give a connection.",
	})
	reg.MustRegister(m.requests, m.duration, m.unavailable)
	return m
}

// Metric labels come from closed sets, so that no request can add a series:
// the route is the router's pattern (every path that matches none shares
// unmatchedRoute), and a method outside the standard ones is otherMethod.
const (
	unmatchedRoute = "unmatched"
	otherMethod    = "OTHER"
)

// methodLabel is the method label of a request.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return otherMethod
}

// securityHeaders sets what every answer carries: no content-type sniffing,
// and, when the public base URL is https, Strict-Transport-Security, so a
// browser that reached the service over https never falls back to http.
func (s *Server) securityHeaders(next http.Handler) http.Handler {
	hsts := strings.HasPrefix(strings.ToLower(s.baseURL), "https://")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if hsts {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// noStoreSecrets marks the answers of operations that carry a secret (see
// answersSecret) not to be stored by any cache.
func noStoreSecrets(ctx huma.Context, next func(huma.Context)) {
	if secretAnswer(ctx.Operation()) {
		ctx.SetHeader("Cache-Control", "no-store")
	}
	next(ctx)
}

// maxRequestID is the longest X-Request-Id kept from a client.
const maxRequestID = 64

// requestIDPrefix starts the ids the process makes (then a counter): random
// per process, so that ids of several replicas do not meet.
var requestIDPrefix = strings.ToLower(strings.TrimRight(base32.StdEncoding.EncodeToString(uuid.New().NodeID()), "=")) + "-"

// requestID names every request: the client's X-Request-Id when it is at
// most maxRequestID characters of [A-Za-z0-9._-], otherwise a new one. The
// id is answered, logged and kept on a receipt, so a client must not be
// able to make it long or put other characters in log lines.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(middleware.RequestIDHeader)
		if !validRequestID(id) {
			id = requestIDPrefix + strconv.FormatUint(middleware.NextRequestID(), 10)
			r.Header.Set(middleware.RequestIDHeader, id)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), middleware.RequestIDKey, id)))
	})
}

// validRequestID reports whether a client's request id may be kept.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// observe logs every request with its request id (and trace id, when
// traced), records its metrics, and puts a logger carrying the ids into the
// request's context so every line logged while serving it carries them too.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		reqID := middleware.GetReqID(r.Context())
		w.Header().Set("X-Request-Id", reqID)
		log := logging.Traced(r.Context(), s.log).With(zap.String("request_id", reqID))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(logging.With(r.Context(), log)))

		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = unmatchedRoute
		}
		method := methodLabel(r.Method)
		tracing.NameRoute(r.Context(), method, route)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		s.metrics.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
		log.Info("request",
			zap.String("method", method), zap.String("route", route), zap.Int("status", status),
			zap.Duration("duration", elapsed), zap.Int("bytes", ww.BytesWritten()))
	})
}

// refuseUnreadableQuery answers 400 to a query string holding a value (or
// name) that is not valid UTF-8 or holds a NUL character, on an operation
// that reads a query: no filter can match one, and Postgres cannot take one
// as text. It runs after authenticate, so a bad key still answers 401
// first. Operations without query parameters never read one, and a path id
// that is not UTF-8 is not a UUID either: it answers 404 as any such id.
func (s *Server) refuseUnreadableQuery(ctx huma.Context, next func(huma.Context)) {
	if u := ctx.URL(); readsQuery(ctx.Operation()) {
		for name, values := range u.Query() {
			for _, v := range append(values, name) {
				if problem := unreadable(v); problem != "" {
					_ = huma.WriteErr(s.api, ctx, http.StatusBadRequest, "the query string "+problem)
					return
				}
			}
		}
	}
	next(ctx)
}

// readsQuery reports whether op has query parameters.
func readsQuery(op *huma.Operation) bool {
	for _, p := range op.Parameters {
		if p.In == "query" {
			return true
		}
	}
	return false
}

// unreadable says what makes s unusable as text, or "" when nothing does.
func unreadable(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

// recoverPanics answers a panic with a bare 500 and logs it with the stack.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logging.From(r.Context(), s.log).Error("panic while serving request",
					zap.Any("panic", v), zap.Stack("stack"))
				writeError(w, http.StatusInternalServerError, domain.InternalMessage)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// largeBody is the body limit from which a write counts as large: the
// products bulk import (32 MB) and customers (8 MB).
const largeBody = 4 << 20

// largeWrites is how many large writes are read and processed at once.
// Each can hold several times its body in memory while it is decoded, so
// the server's memory stays bounded however many clients send them; the
// others wait their turn (within their body read time).
const largeWrites = 1

// refuseOverLimit answers 413 to a write whose Content-Length is over its
// route's limit, before reading any of it.
func (s *Server) refuseOverLimit(ctx huma.Context, next func(huma.Context)) {
	// access() added the byte Huma's own body reading needs; the limit is
	// one less.
	if limit := ctx.Operation().MaxBodyBytes - 1; limit > 0 {
		if n, err := strconv.ParseInt(ctx.Header("Content-Length"), 10, 64); err == nil && n > limit {
			refuseEarly(ctx)
			_ = huma.WriteErr(s.api, ctx, http.StatusRequestEntityTooLarge, tooLarge(limit))
			return
		}
	}
	next(ctx)
}

// refuseEarly marks an answer given before the request's body was read
// (401, 403, 404, 413, 429) to close the connection after it, at once:
// otherwise the server would read and drop what the client still sends
// before answering, and, for a body of up to 256 KB, read the rest of it
// after the answer before closing (Go's server does, to reuse the
// connection), waiting as long as the request's read deadline allows. The
// read deadline set now ends that wait; the answer is written all the same.
func refuseEarly(ctx huma.Context) {
	ctx.SetHeader("Connection", "close")
	_ = ctx.SetReadDeadline(time.Now())
}

// closeUnread is refuseEarly outside Huma, for a request that has a body.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// boundLargeWrites admits largeWrites large writes at a time; a request
// whose client gives up while it waits is dropped.
func (s *Server) boundLargeWrites(ctx huma.Context, next func(huma.Context)) {
	if ctx.Operation().MaxBodyBytes <= largeBody {
		next(ctx)
		return
	}
	select {
	case s.large <- struct{}{}:
		defer func() { <-s.large }()
		next(ctx)
	case <-ctx.Context().Done():
	}
}
