package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/commerce-integration/commerce/api"
)

// The suite's conformance check: every request a test makes to the API
// (whichever client sends it) is validated against the OpenAPI documents
// the API serves, the 3.1 one and its 3.0 rendering, with kin-openapi's
// openapi3filter, and so is its answer: status, headers and body. An
// answer that breaks either document fails the test that asked for it,
// and so does a request the documents refuse that the service accepted
// (2xx): a client that validates its requests would not have sent it. A
// request they refuse that the service refused too is what the test meant
// to send. When the whole suite ran, TestMain fails if an operation of the
// document was never called, naming each.

func TestMain(m *testing.M) {
	code := m.Run()
	if wholeSuite() {
		if unseen := conformance.unseen(); len(unseen) > 0 {
			fmt.Fprintf(os.Stderr, "conformance: %d documented operations the suite never called:\n  %s\n",
				len(unseen), strings.Join(unseen, "\n  "))
			code = 1
		} else {
			fmt.Fprintf(os.Stderr, "conformance: every one of the %d documented operations was called, and every "+
				"request and answer checked against both documents\n", len(conformance.operations()))
		}
	}
	os.Exit(code)
}

// wholeSuite reports whether every test ran: no -run, -skip or -short.
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

// conformance is the suite's one checker; Env.API wraps its servers with it.
var conformance = &checker{seen: map[string]bool{}}

func init() { wrapAPI = conformance.wrap }

// checker validates requests and answers against the served documents and
// records the operations called.
type checker struct {
	once sync.Once
	docs []*servedDoc
	err  error

	mu   sync.Mutex
	seen map[string]bool
}

// servedDoc is one rendering of the document, loaded and routed.
type servedDoc struct {
	version string
	doc     *openapi3.T
	router  routers.Router
}

// load reads the documents as the API serves them (the server they name is
// BaseURL), once.
func (c *checker) load() error {
	c.once.Do(func() {
		h := api.New(api.Deps{BaseURL: BaseURL}).Handler()
		for _, path := range []string{"/api/v1/openapi.json", "/api/v1/openapi-3.0.json"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK {
				c.err = fmt.Errorf("%s: %d", path, rec.Code)
				return
			}
			loader := openapi3.NewLoader()
			doc, err := loader.LoadFromData(rec.Body.Bytes())
			if err == nil {
				err = doc.Validate(loader.Context)
			}
			if err != nil {
				c.err = fmt.Errorf("%s: %w", path, err)
				return
			}
			anyValueTakesNull(doc)
			router, err := legacy.NewRouter(doc)
			if err != nil {
				c.err = fmt.Errorf("%s: %w", path, err)
				return
			}
			c.docs = append(c.docs, &servedDoc{version: doc.OpenAPI, doc: doc, router: router})
		}
	})
	return c.err
}

// operations lists the documented operations as "METHOD path".
func (c *checker) operations() []string {
	if err := c.load(); err != nil {
		return nil
	}
	var ops []string
	for path, item := range c.docs[0].doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// unseen lists the documented operations no request reached.
func (c *checker) unseen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, op := range c.operations() {
		if !c.seen[op] {
			out = append(out, op)
		}
	}
	return out
}

// undocumented are the API's own routes the documents leave out: the
// documents themselves, their rendering and their schemas.
var undocumented = []string{"/api/v1/openapi", "/api/v1/docs", "/api/v1/schemas/"}

// wrap validates each request to the API and its answer for t's test.
func (c *checker) wrap(t testing.TB, next http.Handler) http.Handler {
	if err := c.load(); err != nil {
		t.Fatalf("conformance: the served documents: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r)
			return
		}
		var body []byte
		if r.Body != nil {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				http.Error(w, "conformance: reading the request: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		for _, problem := range c.check(r, body, rec) {
			t.Errorf("conformance: %s %s: %s", r.Method, r.URL.Path, problem)
		}
	})
}

// check validates one exchange against both documents and records its
// operation; it returns what does not conform.
func (c *checker) check(r *http.Request, body []byte, rec *recorder) []string {
	var problems []string
	for _, d := range c.docs {
		// The documents name BaseURL as their server.
		u, _ := url.Parse(BaseURL + r.URL.RequestURI())
		req := r.Clone(context.Background())
		req.URL, req.Host, req.RequestURI = u, u.Host, ""
		req.Body = io.NopCloser(bytes.NewReader(body))
		route, params, err := d.router.FindRoute(req)
		if err != nil {
			if rec.status != http.StatusNotFound && rec.status != http.StatusMethodNotAllowed &&
				!slices.ContainsFunc(undocumented, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) }) {
				problems = append(problems, fmt.Sprintf("answered %d, but the %s document has no such operation", rec.status, d.version))
			}
			continue
		}
		c.mu.Lock()
		c.seen[route.Method+" "+route.Path] = true
		c.mu.Unlock()
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && rec.status < 300 {
			problems = append(problems, fmt.Sprintf("the %s document refuses the request the service accepted (%d): %s",
				d.version, rec.status, brief(err)))
		}
		err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: rec.status, Header: rec.Header(),
			Body:    io.NopCloser(bytes.NewReader(rec.body.Bytes())),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		})
		if err != nil {
			problems = append(problems, fmt.Sprintf("the answer %d breaks the %s document: %s\n%s",
				rec.status, d.version, brief(err), excerpt(rec.body.Bytes())))
		}
	}
	return problems
}

// brief is a validation error on one line per problem.
func brief(err error) string {
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		var lines []string
		for _, e := range multi {
			lines = append(lines, brief(e))
		}
		return strings.Join(lines, "; ")
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

func excerpt(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// recorder passes an answer on and keeps its status and body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines, flushes).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// anyValueTakesNull makes each schema that constrains nothing ({}, or a
// description alone: a change's from and to, a receipt's body) take null, as
// JSON Schema and OpenAPI have it: kin-openapi refuses null for a schema
// without a type (nullable is read beside a type in 3.0, and its 3.1
// validator asks the type for null), which would fail every answer holding
// such a null.
func anyValueTakesNull(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(ref *openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Type == nil && s.IsEmpty() {
			s.Nullable = true
			if doc.IsOpenAPI31OrLater() {
				s.Type = &openapi3.Types{openapi3.TypeNull, openapi3.TypeBoolean, openapi3.TypeObject, openapi3.TypeArray,
					openapi3.TypeNumber, openapi3.TypeString}
			}
		}
		for _, p := range s.Properties {
			walk(p)
		}
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, r := range list {
				walk(r)
			}
		}
		walk(s.Items)
		walk(s.Not)
		walk(s.AdditionalProperties.Schema)
	}
	for _, r := range doc.Components.Schemas {
		walk(r)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value != nil {
					walk(p.Value.Schema)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					walk(mt.Schema)
				}
			}
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					walk(mt.Schema)
				}
				for _, h := range r.Value.Headers {
					if h.Value != nil {
						walk(h.Value.Schema)
					}
				}
			}
		}
	}
}
