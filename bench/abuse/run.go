package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/commerce-integration/commerce/examples"

	"github.com/commerce-integration/commerce/bench/internal/procs"
)

// Size is how hard the suite pushes.
type Size struct {
	Name string
	// Rounds is how many times every check is sent; rounds run one after
	// the other.
	Rounds int
	// Copies is how many times each limit-size body is sent in a round, all
	// at once; 0 is once per client.
	Copies int
	// UTF8 are the invalid sequences put in every query parameter and path
	// id.
	UTF8 []string
	// Methods is how many made-up methods are sent after the first one per
	// target.
	Methods int
	// SlowRows and SlowFor are the bulk import sent slowly: its rows, and
	// how long its body takes to arrive (more than Huma's 5 s default).
	SlowRows int
	SlowFor  time.Duration
	// Keys is how many API keys the requests are spread over, so that no
	// key meets its rate limit of 600 calls a minute.
	Keys int
}

// invalidUTF8 are byte sequences that are not UTF-8, percent-encoded: a
// truncated two-byte sequence, a byte UTF-8 never uses, a surrogate, an
// overlong encoding, a truncated three-byte sequence, a code point above
// U+10FFFF.
var invalidUTF8 = []string{"%C3", "%FF", "%ED%A0%80", "%C0%AF", "a%E2%82", "%F4%90%80%80"}

var sizes = map[string]Size{
	"small": {Name: "small", Rounds: 1, Copies: 1, UTF8: invalidUTF8[:2], Methods: 24,
		SlowRows: 300, SlowFor: 7 * time.Second, Keys: 4},
	"full": {Name: "full", Rounds: 3, UTF8: invalidUTF8, Methods: 600,
		SlowRows: 3000, SlowFor: 12 * time.Second, Keys: 16},
}

// ParseSize returns the size called name.
func ParseSize(name string) (Size, error) {
	s, ok := sizes[name]
	if !ok {
		return Size{}, fmt.Errorf("unknown size %q (small or full)", name)
	}
	return s, nil
}

// Options are a run's settings.
type Options struct {
	Size    Size
	Clients int
	// Out receives the progress lines and the table.
	Out io.Writer
}

// rssBudget is the most resident memory the server may reach
// (docs/security.md#what-it-sends).
const rssBudget = 512 << 20

// memoryGuard is where the harness stops a server that has gone far past
// its budget, before it takes the shared machine with it.
const memoryGuard = 3 << 30

// Report is what a run found.
type Report struct {
	Size     string
	Clients  int
	Checks   []*check
	PeakRSS  int64 // VmHWM
	MaxRSS   int64 // the largest VmRSS sampled
	Guarded  bool  // the server was stopped at memoryGuard
	Series   [3]int
	Requests int
	Elapsed  time.Duration
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool { return len(r.FailedChecks()) > 0 }

// FailedChecks names the checks that failed.
func (r *Report) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks {
		if c.failed > 0 || c.notRun > 0 {
			out = append(out, c.name)
		}
	}
	return out
}

// suite is one run: the server, the identities it sends as, and the checks.
type suite struct {
	size    Size
	clients int
	out     io.Writer
	srv     *server
	tmp     string
	base    string
	http    *http.Client

	keys     []string
	keyN     atomic.Uint64
	otherKey string // a key of the second organisation
	otherOrg string

	signed   map[string]endpoint // action → signed endpoint of the demo organisation
	receiver *httptest.Server    // answers the webhook deliveries of the management data
	ids      map[string]string   // order, delivery and product references → ids
	routes   []getRoute
	// cursors are, per list, a genuine cursor of the demo organisation and
	// one of the other organisation.
	cursors      map[string][2]string
	searchCursor string // products, bound to search=M

	bodies *bodySet
	seq    atomic.Int64
	// stopped is set when the memory guard stopped the server: what was
	// not sent by then is reported as not run.
	stopped atomic.Bool

	mu     sync.Mutex
	checks []*check
	byName map[string]*check
}

type endpoint struct {
	ID     string  `json:"id"`
	URL    string  `json:"url"`
	Secret *string `json:"secret"`
}

// getRoute is a GET operation of the OpenAPI document.
type getRoute struct {
	path  string
	query []string
}

// Run builds and starts the service, sends every check, and prints the
// table to o.Out.
func Run(ctx context.Context, o Options) (*Report, error) {
	started := time.Now()
	out := o.Out
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "commerce-abuse-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	step := func(what string, fn func() error) error {
		fmt.Fprintf(out, "%-40s", what+" ...")
		t := time.Now()
		if err := fn(); err != nil {
			fmt.Fprintln(out, "failed")
			return err
		}
		fmt.Fprintf(out, "%.1fs\n", time.Since(t).Seconds())
		return nil
	}
	var bin, dbURL string
	var drop func()
	var srv *server
	if err := step("building commerce", func() error { bin, err = procs.Build(ctx, root, tmp); return err }); err != nil {
		return nil, err
	}
	if err := step("creating a database", func() error { dbURL, drop, err = procs.Database(ctx, "ABUSE_DATABASE_URL", "abuse"); return err }); err != nil {
		return nil, err
	}
	defer drop()
	if err := step("starting commerce dev", func() error { srv, err = start(ctx, bin, tmp, dbURL); return err }); err != nil {
		return nil, err
	}
	defer srv.stop()
	s := &suite{size: o.Size, clients: o.Clients, out: out, srv: srv, tmp: tmp, base: srv.state.BaseURL,
		http: &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{
			MaxIdleConnsPerHost: o.Clients * 2, DisableCompression: true}},
		byName:   map[string]*check{},
		receiver: httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))}
	defer s.receiver.Close()
	mem := watchMemory(srv.pid(), memoryGuard, func() {
		s.stopped.Store(true)
		srv.kill()
	})
	defer mem.finish(srv.pid())
	var series [3]int
	series[0], _, _ = s.metrics(ctx)
	if err := step("building the bodies", func() error { s.bodies = newBodySet(o.Size); return nil }); err != nil {
		return nil, err
	}
	if err := step("setting up (CLI and API)", func() error { return s.setup(ctx) }); err != nil {
		return nil, err
	}
	for r := range o.Size.Rounds {
		if err := step(fmt.Sprintf("round %d of %d, %d clients", r+1, o.Size.Rounds, o.Clients), func() error {
			s.pool(ctx, s.round(r))
			return ctx.Err()
		}); err != nil {
			return nil, err
		}
	}
	if err := step("made-up methods against /metrics", func() error {
		series[1], series[2] = s.methodsAndSeries(ctx)
		return ctx.Err()
	}); err != nil {
		return nil, err
	}
	if err := step("what a review of the exposed service found", func() error {
		s.exposureChecks(ctx)
		return ctx.Err()
	}); err != nil {
		return nil, err
	}
	s.serverStillUp(ctx)
	mem.finish(srv.pid())
	srv.stop()
	s.noPanics()

	rep := &Report{Size: o.Size.Name, Clients: o.Clients, Series: series, Elapsed: time.Since(started)}
	rep.PeakRSS, rep.MaxRSS, rep.Guarded = mem.peak()
	s.memoryCheck(rep)
	rep.Checks = s.checks
	for _, c := range s.checks {
		rep.Requests += c.requests
	}
	rep.print(out)
	return rep, nil
}

// check returns the check called name, made on first use so that the table
// lists checks in the order they were first sent.
func (s *suite) check(name string) *check {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byName[name]; ok {
		return c
	}
	c := &check{name: name}
	s.byName[name] = c
	s.checks = append(s.checks, c)
	return c
}

// key returns the demo organisation's keys in turn.
func (s *suite) key() string {
	return s.keys[s.keyN.Add(1)%uint64(len(s.keys))]
}

func (s *suite) api(path string) string { return s.base + "/api/v1" + path }

// copies is how many times a limit-size body is sent at once.
func (s *suite) copies() int {
	if s.size.Copies > 0 {
		return s.size.Copies
	}
	return s.clients
}

// job is one piece of work for a client.
type job func(ctx context.Context)

// pool runs jobs with s.clients clients at once.
func (s *suite) pool(ctx context.Context, jobs []job) {
	ch := make(chan job)
	var wg sync.WaitGroup
	for range s.clients {
		wg.Go(func() {
			for j := range ch {
				if ctx.Err() == nil {
					j(ctx)
				}
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// one is a job that sends one probe.
func (s *suite) one(c *check, p probe) job {
	return func(ctx context.Context) { s.send(ctx, c, p) }
}

// getJSON reads an API resource the suite needs (not a check of its own)
// into v.
func (s *suite) getJSON(ctx context.Context, key, path string, v any) error {
	return s.callJSON(ctx, http.MethodGet, key, path, nil, v)
}

func (s *suite) callJSON(ctx context.Context, method, key, path string, body []byte, v any) error {
	a, err := s.sendClient(ctx, probe{method: method, url: s.api(path), key: key, body: body})
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if a.status >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, a.status, excerpt(a.body))
	}
	if v == nil {
		return nil
	}
	if err := a.decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// setup makes what the checks need: more keys, a second organisation with
// the example data, signed endpoints, the ids of the records the checks
// touch, a second page in every list, and genuine cursors.
func (s *suite) setup(ctx context.Context) error {
	st := s.srv.state
	s.keys = []string{st.APIKey}
	s.signed = map[string]endpoint{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := 1; i < s.size.Keys; i++ {
		g.Go(func() error {
			var k struct {
				Key string `json:"key"`
			}
			if err := s.srv.cliJSON(gctx, &k, "key", "create", "--org", st.OrgID, "--name", fmt.Sprintf("abuse %d", i), "--scopes", "all"); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			s.keys = append(s.keys, k.Key)
			return nil
		})
	}
	for _, action := range []string{"erp_order_status", "delivery_status"} {
		g.Go(func() error {
			var e endpoint
			if err := s.srv.cliJSON(gctx, &e, "endpoint", "create", "--org", st.OrgID, "--as", "owner@demo.example",
				"--name", "abuse signed "+action, "--action", action, "--require-signature"); err != nil {
				return err
			}
			if e.Secret == nil {
				return fmt.Errorf("endpoint create --require-signature printed no secret")
			}
			mu.Lock()
			defer mu.Unlock()
			s.signed[action] = e
			return nil
		})
	}
	g.Go(func() error { return s.otherOrganisation(gctx) })
	if err := g.Wait(); err != nil {
		return err
	}
	if err := s.lookUpIDs(ctx); err != nil {
		return err
	}
	for org, who := range map[string][2]string{st.OrgID: {s.keys[0], "owner@demo.example"}, s.otherOrg: {s.otherKey, "owner@other.abuse.example"}} {
		if err := s.managementData(ctx, org, who[0], who[1]); err != nil {
			return err
		}
	}
	if err := s.secondPages(ctx); err != nil {
		return err
	}
	if err := s.readRoutes(ctx); err != nil {
		return err
	}
	return s.genuineCursors(ctx)
}

// otherOrganisation creates the second organisation, with the example
// data, every add-on and a key: the source of foreign cursors.
func (s *suite) otherOrganisation(ctx context.Context) error {
	var org struct {
		ID string `json:"id"`
	}
	if err := s.srv.cliJSON(ctx, &org, "org", "create", "--name", "Abuse Other Ltd", "--owner-email", "owner@other.abuse.example"); err != nil {
		return err
	}
	s.otherOrg = org.ID
	seed := filepath.Join(s.tmp, "seed.json")
	if err := os.WriteFile(seed, examples.Seed, 0o600); err != nil {
		return err
	}
	if _, errOut, code, err := s.srv.cli(ctx, "seed", "--org", org.ID, "--file", seed); err != nil || code != 0 {
		return fmt.Errorf("commerce seed: exit %d %v: %s", code, err, errOut)
	}
	for _, addon := range []string{"stock", "route", "source"} {
		if _, errOut, code, err := s.srv.cli(ctx, "org", "addon", "--org", org.ID, addon, "on"); err != nil || code != 0 {
			return fmt.Errorf("commerce org addon %s: exit %d %v: %s", addon, code, err, errOut)
		}
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := s.srv.cliJSON(ctx, &k, "key", "create", "--org", org.ID, "--name", "abuse other", "--scopes", "all"); err != nil {
		return err
	}
	s.otherKey = k.Key
	return nil
}

// managementData gives an organisation what the management lists page
// through, two of each: inbound endpoints with receipts (posts refused 400),
// webhook subscriptions, events (customers created) and their deliveries,
// to a receiver of the suite's own.
func (s *suite) managementData(ctx context.Context, org, key, owner string) (err error) {
	for i := range 2 {
		var e endpoint
		if err := s.srv.cliJSON(ctx, &e, "endpoint", "create", "--org", org, "--as", owner,
			"--name", fmt.Sprintf("abuse management %d", i), "--action", "erp_order_status"); err != nil {
			return err
		}
		if a, err := s.sendClient(ctx, probe{method: http.MethodPost, url: e.URL, body: []byte("not JSON")}); err != nil || a.status != http.StatusBadRequest {
			return fmt.Errorf("a refused post to %s: %v %+v", e.URL, err, a)
		}
	}
	var subs []string
	for i := range 2 {
		body := fmt.Sprintf(`{"url": "%s/hook/%d", "events": ["customer.created"]}`, s.receiver.URL, i)
		var sub struct{ ID string }
		if err := s.callJSON(ctx, http.MethodPost, key, "/webhooks/subscriptions", []byte(body), &sub); err != nil {
			return err
		}
		subs = append(subs, sub.ID)
	}
	// Once delivered, the subscriptions are switched off: the checks create
	// customers by the thousand, and their deliveries would crowd the
	// worker out.
	defer func() {
		for _, id := range subs {
			if perr := s.callJSON(ctx, http.MethodPatch, key, "/webhooks/subscriptions/"+id, []byte(`{"active": false}`), nil); err == nil {
				err = perr
			}
		}
	}()
	if err := s.callJSON(ctx, http.MethodPost, key, "/customers",
		[]byte(`{"customers": [{"company": "Abuse Management A"}, {"company": "Abuse Management B"}]}`), nil); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var page struct {
			Next *string `json:"next_cursor"`
		}
		if err := s.getJSON(ctx, key, "/webhooks/deliveries?limit=1", &page); err != nil {
			return err
		}
		if page.Next != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the organisation's webhook deliveries were not made within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lookUpIDs finds the records the checks name by reference.
func (s *suite) lookUpIDs(ctx context.Context) error {
	s.ids = map[string]string{}
	for _, list := range []string{"orders", "deliveries"} {
		var page map[string][]struct{ ID, Number string }
		if err := s.getJSON(ctx, s.keys[0], "/"+list+"?limit=200", &page); err != nil {
			return err
		}
		for _, r := range page[list] {
			s.ids[r.Number] = r.ID
		}
	}
	for who, key := range map[string]string{"demo": s.keys[0], "other": s.otherKey} {
		var products struct {
			Products []struct{ ID string } `json:"products"`
		}
		if err := s.getJSON(ctx, key, "/products?sku="+stockedSKU, &products); err != nil {
			return err
		}
		if len(products.Products) != 1 {
			return fmt.Errorf("the example data has no product %s", stockedSKU)
		}
		s.ids[who+" "+stockedSKU] = products.Products[0].ID
	}
	for _, ref := range []string{replayOrder, limitOrder, repeatDelivery} {
		if s.ids[ref] == "" {
			return fmt.Errorf("the example data has no %s", ref)
		}
	}
	return nil
}

// The example records the checks use, each by one check only, so that
// checks running at once do not disturb each other's records.
const (
	stockedSKU     = "FST-M8-30-A2" // stock at the default location
	limitOrder     = "SO-2026-0204" // confirmed: inbound erp_order_status at 1 MB
	replayOrder    = "SO-2026-0205" // confirmed: the refused cancellation
	invoiceOrder   = "SO-2026-0201"
	limitDelivery  = "DN-2026-0405" // pending: inbound delivery_status at 1 MB
	repeatDelivery = "DN-2026-0403" // in transit: the signed post sent again
	ackPO          = "PO-2026-0305" // acknowledged
	invoicePO      = "PO-2026-0303" // partially received
)

// secondPages gives both organisations a second page of requests and stock
// movements, which the example data has none of.
func (s *suite) secondPages(ctx context.Context) error {
	for who, key := range map[string]string{"demo": s.keys[0], "other": s.otherKey} {
		for i := range 2 {
			if err := s.callJSON(ctx, http.MethodPost, key, "/requests", fmt.Appendf(nil, `{"text":"abuse setup %d"}`, i), nil); err != nil {
				return err
			}
			body := fmt.Appendf(nil, `{"kind":"receipt","qty":1,"product_id":"%s"}`, s.ids[who+" "+stockedSKU])
			if err := s.callJSON(ctx, http.MethodPost, key, "/stock/movements", body, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRoutes reads the GET operations and their parameters from the
// service's OpenAPI document, so that every list and read is covered as the
// API grows.
func (s *suite) readRoutes(ctx context.Context) error {
	resp, err := s.http.Get(s.base + "/api/v1/openapi.json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]struct {
			Get *struct {
				Parameters []struct{ Name, In string } `json:"parameters"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return fmt.Errorf("the OpenAPI document: %w", err)
	}
	for path, item := range doc.Paths {
		if item.Get == nil || !strings.HasPrefix(path, "/api/v1/") {
			continue
		}
		r := getRoute{path: path}
		for _, p := range item.Get.Parameters {
			if p.In == "query" {
				r.query = append(r.query, p.Name)
			}
		}
		s.routes = append(s.routes, r)
	}
	if len(s.routes) < 10 {
		return fmt.Errorf("the OpenAPI document lists %d GET routes", len(s.routes))
	}
	slices.SortFunc(s.routes, func(a, b getRoute) int { return strings.Compare(a.path, b.path) })
	return nil
}

// genuineCursors asks each paged list for its first row, as each
// organisation, and keeps the cursors of the second pages.
func (s *suite) genuineCursors(ctx context.Context) error {
	s.cursors = map[string][2]string{}
	for _, r := range s.routes {
		if !r.paged() {
			continue
		}
		var pair [2]string
		for i, key := range []string{s.keys[0], s.otherKey} {
			var page struct {
				Next *string `json:"next_cursor"`
			}
			if err := s.getJSON(ctx, key, strings.TrimPrefix(r.path, "/api/v1")+"?limit=1", &page); err != nil {
				return err
			}
			if page.Next == nil {
				return fmt.Errorf("%s has no second page for the suite's cursors", r.path)
			}
			pair[i] = *page.Next
		}
		s.cursors[r.path] = pair
	}
	var page struct {
		Next *string `json:"next_cursor"`
	}
	if err := s.getJSON(ctx, s.keys[0], "/products?search=M&limit=1", &page); err != nil || page.Next == nil {
		return fmt.Errorf("no second page of products matching M: %v", err)
	}
	s.searchCursor = *page.Next
	return nil
}

func (r getRoute) paged() bool {
	return !strings.Contains(r.path, "{") && slices.Contains(r.query, "cursor")
}

// print writes the table and the figures.
func (r *Report) print(out io.Writer) {
	fmt.Fprintf(out, "\nabuse suite, size %s, %d clients: %d requests in %.0fs\n\n", r.Size, r.Clients, r.Requests, r.Elapsed.Seconds())
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "check\trequests\tstatuses seen\tmax body\tslowest\tresult")
	for _, c := range r.Checks {
		result := "pass"
		switch {
		case c.failed > 0:
			result = fmt.Sprintf("FAIL (%d)", c.failed)
		case c.notRun > 0:
			result = fmt.Sprintf("NOT RUN (%d)", c.notRun)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", c.name, c.requests, c.statusText(), bytesText(c.maxBody),
			durationText(c.slowest), result)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\npeak RSS (VmHWM) %s, largest VmRSS sampled %s, budget %s\n", bytesText(r.PeakRSS), bytesText(r.MaxRSS), bytesText(rssBudget))
	fmt.Fprintf(out, "/metrics series: %d at start, %d before the made-up methods, %d after them\n", r.Series[0], r.Series[1], r.Series[2])
	if r.Guarded {
		fmt.Fprintf(out, "the server passed %s of resident memory and was stopped: the requests not sent by then are counted as not run\n", bytesText(memoryGuard))
	}
	failed := r.FailedChecks()
	if len(failed) == 0 {
		fmt.Fprintln(out, "\nevery check passed")
		return
	}
	fmt.Fprintf(out, "\n%d of %d checks failed:\n", len(failed), len(r.Checks))
	for _, c := range r.Checks {
		if c.failed == 0 && c.notRun == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s (%d failures", c.name, c.failed)
		if c.notRun > 0 {
			fmt.Fprintf(out, ", %d requests not run", c.notRun)
		}
		fmt.Fprintln(out, ")")
		for _, f := range c.failures {
			fmt.Fprintf(out, "  - %s\n", f)
		}
	}
}

func bytesText(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	case n == 0:
		return "-"
	}
	return fmt.Sprintf("%d B", n)
}

func durationText(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
