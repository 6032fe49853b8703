// Package api is the HTTP face of the service: the REST API at /api/v1 as
// Huma operations on a chi router (with its OpenAPI document), the inbound
// endpoints at /api/in/{token}, and the health and metrics endpoints.
package api

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/metrics"
	"github.com/commerce-integration/commerce/internal/tracing"
)

// Version is the version of the OpenAPI description.
const Version = "1.0.0"

// Deps are what the HTTP layer needs. It builds no service of its own: the
// process's assembly builds them once and hands them in.
type Deps struct {
	DB *db.DB
	// Service is the application service the inbound endpoints and the
	// management routes call (integrations.New). A server made without
	// one (a document, a benchmark of the REST reads) must not be sent
	// inbound posts or management requests.
	Service *integrations.Service
	// Temporal is asked by /readyz only; nil reports Temporal as not
	// configured.
	Temporal client.Client
	Logger   *zap.Logger
	Cursors  *cursor.Codec
	// BaseURL is the public {base_url}.
	BaseURL string
	// Tracing makes a span of every request (nil: tracing off).
	Tracing *tracing.Tracing
}

// Server routes HTTP requests.
type Server struct {
	db       *db.DB
	temporal client.Client
	inbounds *integrations.Posts
	manage   *integrations.Service
	large    chan struct{} // see boundLargeWrites
	log      *zap.Logger
	cursors  *cursor.Codec
	baseURL  string
	metrics  *httpMetrics
	registry *prometheus.Registry
	api      huma.API
	router   chi.Router
	handler  http.Handler
}

// New builds the router and registers every operation.
func New(d Deps) *Server {
	huma.NewError = newHumaError
	// Lists are always written as arrays, never null.
	huma.DefaultArrayNullable = false
	s := &Server{
		db: d.DB, temporal: d.Temporal, log: d.Logger, cursors: d.Cursors, baseURL: d.BaseURL, manage: d.Service,
		registry: prometheus.NewRegistry(),
		large:    make(chan struct{}, largeWrites),
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if d.Service != nil {
		s.inbounds = d.Service.Posts
	}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newHTTPMetrics(s.registry)

	r := chi.NewRouter()
	r.Use(requestID, s.securityHeaders, s.observe, s.recoverPanics)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		closeUnread(w, r)
		writeError(w, http.StatusNotFound, "Not found")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		closeUnread(w, r)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
	})
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Post("/api/in/{token}", s.inbound)

	cfg := s.humaConfig()
	s.api = huma.NewAPI(cfg, specAdapter{Adapter: humachi.NewAdapter(r), openAPIPath: cfg.OpenAPIPath, server: s})
	s.api.UseMiddleware(noStoreSecrets, s.authenticate, s.refuseOverLimit, s.refuseUnreadableQuery, s.boundLargeWrites, s.idempotentPosts)
	s.registerProducts()
	s.registerReads()
	s.registerStock()
	s.registerCustomers()
	s.registerRequests()
	s.registerManagement()
	s.documentInbound()
	s.documentWebhooks()
	documentIdempotency(s.api.OpenAPI())
	markPointersNullable(s.api.OpenAPI().Components.Schemas)
	dropUndeclaredValidationStatus(s.api.OpenAPI())
	documentRateHeaders(s.api.OpenAPI())
	declareTags(s.api.OpenAPI())
	s.router = r
	s.handler = d.Tracing.Handler(r)
	return s
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics is the Prometheus endpoint of the server's series and the
// process's (package metrics: the Temporal SDK's, pools), served on a
// listener of its own (COMMERCE_METRICS_LISTEN), never on the public one.
func (s *Server) Metrics() http.Handler {
	return metrics.Handler(s.registry)
}

// Mount serves h under pattern (a path prefix such as "/console") beside
// the API, behind the same request ids, logging, metrics and panic
// recovery.
func (s *Server) Mount(pattern string, h http.Handler) { s.router.Mount(pattern, h) }

// OpenAPI is the service's OpenAPI description.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

// bearerScheme names the security scheme of the REST API.
const bearerScheme = "bearer"

func (s *Server) humaConfig() huma.Config {
	cfg := huma.DefaultConfig("Commerce integration API", Version)
	// No $schema links in bodies: answers carry exactly their documented fields.
	cfg.CreateHooks = nil
	cfg.OpenAPIPath = "/api/v1/openapi"
	cfg.DocsPath = "/api/v1/docs"
	cfg.SchemasPath = "/api/v1/schemas"
	cfg.Info.Description = "Organisation-scoped REST API for catalogue products, quotes, orders, stock, " +
		"deliveries, suppliers, purchase orders, customers and request threads, and the tokenised inbound " +
		"endpoints. Money is integer minor units with an ISO 4217 currency code; timestamps are RFC 3339 UTC " +
		"with milliseconds. Every error answer is {\"error\": \"...\"}. No licence is granted with this description."
	cfg.Info.License, cfg.Info.Contact = docLicense, docContact
	cfg.Servers = []*huma.Server{{URL: s.baseURL}}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		bearerScheme: {
			Type:         "http",
			Scheme:       "bearer",
			BearerFormat: "ck_ API key",
			Description:  "An organisation API key: `Authorization: Bearer ck_...`. Each operation names the scope it needs.",
		},
	}
	reg := cfg.Components.Schemas
	reg.RegisterTypeAlias(reflect.TypeFor[domain.Timestamp](), reflect.TypeFor[time.Time]())
	reg.RegisterTypeAlias(reflect.TypeFor[domain.Date](), reflect.TypeFor[dateSchema]())
	reg.RegisterTypeAlias(reflect.TypeFor[uuid.UUID](), reflect.TypeFor[uuidSchema]())
	reg.RegisterTypeAlias(reflect.TypeFor[domain.JSONObject](), reflect.TypeFor[map[string]any]())
	reg.RegisterTypeAlias(reflect.TypeFor[domain.JSONArray](), reflect.TypeFor[[]map[string]any]())
	return cfg
}

// dateSchema and uuidSchema stand in for domain.Date and uuid.UUID in the
// OpenAPI document.
type (
	dateSchema struct{}
	uuidSchema struct{}
)

func (dateSchema) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Format: "date", Examples: []any{"2026-12-31"}}
}

func (uuidSchema) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Format: "uuid"}
}

// markPointersNullable marks every property backed by a pointer field as
// nullable: the service writes null for an absent value, and Huma's type
// aliases (used for timestamps, dates and ids) lose the pointer. A pointer
// to a record (a $ref) that is not omitempty becomes any of the record and
// null.
func markPointersNullable(reg huma.Registry) {
	for name, schema := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		if t == nil || t.Kind() != reflect.Struct || schema.Properties == nil {
			continue
		}
		for _, f := range reflect.VisibleFields(t) {
			if f.Type.Kind() != reflect.Pointer || !f.IsExported() {
				continue
			}
			jsonName, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			p, ok := schema.Properties[jsonName]
			switch {
			case !ok:
			case p.Ref == "":
				p.Nullable = true
			case !strings.Contains(opts, "omitempty"):
				// A record written as null (a dry run's receipt): the
				// reference or null. An omitempty one is absent instead.
				schema.Properties[jsonName] = &huma.Schema{Description: p.Description,
					AnyOf: []*huma.Schema{{Ref: p.Ref}, {Type: "null"}}}
			}
		}
	}
}

// dropUndeclaredValidationStatus removes the 422 answer Huma documents for
// every operation with validated input: validation failures answer 400
// here, and 422 stays only where an operation declares it for "understood
// but not applicable" (docs/design.md#conventions-on-the-wire).
func dropUndeclaredValidationStatus(doc *huma.OpenAPI) {
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil || op.Responses == nil {
				continue
			}
			if declared, _ := op.Metadata[metaDeclared].([]int); slices.Contains(declared, http.StatusUnprocessableEntity) {
				continue
			}
			delete(op.Responses, "422")
		}
	}
}

// documentRateHeaders adds the rate-limit headers to the documented answers:
// every answer to a known key carries RateLimit-Policy and RateLimit (IETF
// draft fields), and a 429 carries Retry-After. The inbound route answers
// its 429 with Retry-After only.
func documentRateHeaders(doc *huma.OpenAPI) {
	str := &huma.Schema{Type: huma.TypeString}
	policy := &huma.Header{Description: `The key's limit: "key";q=<requests>;w=<window seconds>.`, Schema: str}
	remaining := &huma.Header{Description: `What is left of it: "key";r=<requests left>;t=<seconds until the window is whole again>.`, Schema: str}
	retry := &huma.Header{Description: "Seconds to wait before the next request can succeed.", Schema: &huma.Schema{Type: huma.TypeInteger}}
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			_, keyed := op.Metadata[metaScope]
			for code, resp := range op.Responses {
				if resp == nil || (!keyed && code != "429") {
					continue
				}
				if resp.Headers == nil {
					resp.Headers = map[string]*huma.Header{}
				}
				if keyed && code != "401" && code != "500" {
					resp.Headers["RateLimit-Policy"], resp.Headers["RateLimit"] = policy, remaining
				}
				if code == "429" {
					resp.Headers["Retry-After"] = retry
				}
			}
		}
	}
}

// registerRawJSON registers an operation whose handler reads its JSON body
// itself, as it arrives (requestBody), documented as body: the handler
// counts an array's items as it decodes them and refuses the item past the
// limit before the rest of the body is read, which Huma's validation,
// decoding the whole body first, cannot do. The body is never held whole:
// a 32 MB import costs its decoded rows, not its bytes besides.
func registerRawJSON[I, O any](s *Server, op huma.Operation, body reflect.Type, handler func(context.Context, *I) (*O, error)) {
	// access() added the byte Huma's own body reading needs; the limit is
	// one less.
	limit, timeout := op.MaxBodyBytes-1, op.BodyReadTimeout
	op.Middlewares = append(op.Middlewares, func(ctx huma.Context, next func(huma.Context)) {
		// A Content-Length over the limit was refused already
		// (refuseOverLimit).
		_ = ctx.SetReadDeadline(time.Now().Add(timeout))
		next(huma.WithValue(ctx, bodyKey{}, &streamedBody{r: ctx.BodyReader(), limit: limit}))
	})
	huma.Register(s.api, op, handler)
	// Documented after registering: an operation with a request body in its
	// description is one whose body Huma reads whole before the handler.
	s.api.OpenAPI().Paths[op.Path].Post.RequestBody = &huma.RequestBody{
		Required: true,
		Content:  map[string]*huma.MediaType{"application/json": {Schema: s.api.OpenAPI().Components.Schemas.Schema(body, true, "")}},
	}
}
