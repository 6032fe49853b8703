package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxAnswer is the most an answer body may carry.
const maxAnswer = 64 << 10

// leakMarkers are pieces of internal error text (Postgres, pgx, the Go
// runtime) that no answer may carry.
var leakMarkers = []string{"SQLSTATE", "pgx", "pgconn", "goroutine ", "runtime error", "index row",
	"violates", "invalid byte sequence", "duplicate key", "panic"}

// check is one row of the table: what its requests were answered, and what
// went wrong.
type check struct {
	name     string
	mu       sync.Mutex
	requests int
	statuses map[string]int
	maxBody  int64
	slowest  time.Duration
	failures []string
	failed   int
	// notRun counts the requests not sent because the server had been
	// stopped at the memory guard.
	notRun int
	// note replaces the statuses column of the checks that send no request
	// of their own (memory, /metrics).
	note string
}

func (c *check) record(status string, size int64, elapsed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if c.statuses == nil {
		c.statuses = map[string]int{}
	}
	c.statuses[status]++
	c.maxBody = max(c.maxBody, size)
	c.slowest = max(c.slowest, elapsed)
}

func (c *check) skip() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notRun++
}

// keptFailures is how many failure messages a check keeps to print.
const keptFailures = 4

func (c *check) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed++
	if len(c.failures) < keptFailures {
		c.failures = append(c.failures, fmt.Sprintf(format, args...))
	}
}

func (c *check) statusText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.note != "" {
		return c.note
	}
	keys := make([]string, 0, len(c.statuses))
	for k := range c.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, c.statuses[k])
	}
	return strings.Join(parts, " ")
}

// probe is one request and what its answer must be.
type probe struct {
	// what names the request in a failure message.
	what   string
	method string
	url    string
	// key is sent as Authorization: Bearer <key> when not empty.
	key    string
	header http.Header
	// body, then tail, is the request body: an over-limit body is a
	// limit-size body and a tail, so the large part is built once.
	body, tail []byte
	// slow spreads the body over this long, as a slow link would.
	slow time.Duration
	// raw writes the request on a connection of its own and reads the
	// answer whatever happens to the rest of the request: the server may
	// answer and close before a body or header over its limit is sent whole.
	raw bool
	// target, with raw, is the request target written byte for byte
	// (invalid UTF-8 included) instead of url's path and query.
	target string
	want   []int
	// plain allows the answers net/http itself writes (431, or 400 for a
	// malformed request), which are not JSON, to carry no {"error"} body.
	plain bool
	// then checks what the request did, once its status is one of want.
	then func(a *answer) error
}

// answer is what came back.
type answer struct {
	status  int
	header  http.Header
	body    []byte // the first maxAnswer+1 bytes
	size    int64
	elapsed time.Duration
}

func (a *answer) decode(v any) error {
	if a.size > int64(len(a.body)) {
		return fmt.Errorf("answer of %d bytes not kept whole", a.size)
	}
	return json.Unmarshal(a.body, v)
}

// send makes the request, records its answer on c and fails c for each rule
// the answer breaks. It returns nil when no answer came.
func (s *suite) send(ctx context.Context, c *check, p probe) *answer {
	if s.stopped.Load() {
		c.skip()
		return nil
	}
	var a *answer
	var err error
	if p.raw {
		a, err = s.sendRaw(ctx, p)
	} else {
		a, err = s.sendClient(ctx, p)
	}
	if err != nil {
		if s.stopped.Load() {
			c.skip()
			return nil
		}
		c.record("no answer", 0, 0)
		c.fail("%s: no answer: %v", p.what, err)
		return nil
	}
	c.record(strconv.Itoa(a.status), a.size, a.elapsed)
	if problems := judge(p, a); len(problems) > 0 {
		c.fail("%s: %s; body %s", p.what, strings.Join(problems, "; "), excerpt(a.body))
	}
	return a
}

// judge lists the rules an answer breaks: no 5xx (but a 503 a check asks
// for), a status the check allows, at most 64 KB, {"error": "..."} when
// refused, no internal detail, and the check's own condition.
func judge(p probe, a *answer) []string {
	var problems []string
	switch {
	case a.status >= 500 && !(a.status == http.StatusServiceUnavailable && slices.Contains(p.want, a.status)):
		problems = append(problems, fmt.Sprintf("answered %d", a.status))
	case !slices.Contains(p.want, a.status):
		problems = append(problems, fmt.Sprintf("answered %d, want %s", a.status, statusList(p.want)))
	}
	if a.size > maxAnswer {
		// Only its start was kept: its shape cannot be judged.
		problems = append(problems, fmt.Sprintf("answer of %d bytes, over 64 KB", a.size))
	} else if a.status >= 400 && !(p.plain && !strings.HasPrefix(a.header.Get("Content-Type"), "application/json")) {
		if msg := errorShape(a.body); msg != "" {
			problems = append(problems, msg)
		}
	}
	for _, m := range leakMarkers {
		if bytes.Contains(a.body, []byte(m)) {
			problems = append(problems, fmt.Sprintf("the answer carries internal detail (%q)", m))
			break
		}
	}
	if len(problems) == 0 && p.then != nil {
		if err := p.then(a); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// errorShape says what is wrong with an error body that is not exactly
// {"error": "<message>"}.
func errorShape(b []byte) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "error body is not a JSON object"
	}
	var msg string
	if len(m) != 1 || json.Unmarshal(m["error"], &msg) != nil || msg == "" {
		return `error body is not {"error": "..."}`
	}
	return ""
}

func statusList(want []int) string {
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = strconv.Itoa(w)
	}
	return strings.Join(parts, "|")
}

func excerpt(b []byte) string {
	const n = 160
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}

// request builds the http.Request of a probe.
func (s *suite) request(ctx context.Context, p probe) (*http.Request, error) {
	var body io.Reader
	n := int64(len(p.body) + len(p.tail))
	if p.body != nil || p.tail != nil {
		body = io.MultiReader(bytes.NewReader(p.body), bytes.NewReader(p.tail))
		if p.slow > 0 {
			body = &slowReader{r: body, per: p.slow / time.Duration(max(1, n/slowChunk))}
		}
	}
	req, err := http.NewRequestWithContext(ctx, p.method, p.url, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = n
		if n == 0 {
			req.Body = http.NoBody
		}
		req.Header.Set("Content-Type", "application/json")
	}
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	for k, vs := range p.header {
		req.Header[k] = vs
	}
	return req, nil
}

func (s *suite) sendClient(ctx context.Context, p probe) (*answer, error) {
	req, err := s.request(ctx, p)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp, start)
}

func (s *suite) sendRaw(ctx context.Context, p probe) (*answer, error) {
	req, err := s.request(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.target != "" {
		path, query, _ := strings.Cut(p.target, "?")
		req.URL = &url.URL{Scheme: "http", Host: req.URL.Host, Opaque: path, RawQuery: query}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", req.URL.Host)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Minute))
	start := time.Now()
	// The server may answer before it has read the request whole; the
	// write then fails, and the answer is what counts.
	go func() {
		w := bufio.NewWriterSize(conn, 64<<10)
		if req.Write(w) == nil {
			_ = w.Flush()
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp, start)
}

func readAnswer(resp *http.Response, start time.Time) (*answer, error) {
	var kept bytes.Buffer
	n, err := io.Copy(&capped{w: &kept, left: maxAnswer + 1}, resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: kept.Bytes(), size: n, elapsed: time.Since(start)}, nil
}

// capped keeps the first left bytes written to it and counts the rest.
type capped struct {
	w    io.Writer
	left int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.left > 0 {
		k := min(c.left, len(p))
		_, _ = c.w.Write(p[:k])
		c.left -= k
	}
	return len(p), nil
}

// slowChunk is how much a slow body sends at a time.
const slowChunk = 32 << 10

// slowReader hands out at most slowChunk bytes per read, waiting per
// between reads.
type slowReader struct {
	r       io.Reader
	per     time.Duration
	started bool
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.started {
		time.Sleep(s.per)
	}
	s.started = true
	if len(p) > slowChunk {
		p = p[:slowChunk]
	}
	return s.r.Read(p)
}
