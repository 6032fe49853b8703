package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/harness"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// soakOrders are the confirmed orders the soak's invoices name, spread so
// that the subscription's per-entity ordering does not make one queue.
const soakOrders = 8

// soakLoad is a soak's steady load: open-loop tickers for the posts, the
// reads and the writes, each request on its own goroutine, at most
// InFlight at once.
type soakLoad struct {
	s        *setup
	so       SoakOptions
	hc       *http.Client
	invoices []string // order_invoice endpoint tokens
	statuses []string // erp_order_status endpoint tokens
	readKey  string
	slots    chan struct{}
	failing  *failingReceiver

	mu      sync.Mutex
	win     map[string][]time.Duration // by kind: this window's latencies
	tot     map[string]loadTotals
	receipt []string // recent receipt ids, for the gets
	custs   []string // customer ids made, for the gets
	n       atomic.Int64
}

// loadTotals count one kind of request over the run: answered by status
// class, failed without an answer, shed (InFlight full).
type loadTotals struct {
	Sent, OK, Refused409, Other4xx, Status5xx, NoAnswer, Shed int
}

// failingReceiver answers 500 to every delivery: its subscription fails
// and then holds its deliveries for the whole run.
type failingReceiver struct{ hits atomic.Int64 }

func (f *failingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.hits.Add(1)
	w.WriteHeader(http.StatusInternalServerError)
}

// soakLoad makes the soak's data beside the run's (setup.data): orders
// to invoice and one already fulfilled, endpoints enough for the rate (an
// endpoint takes two posts a second), a key that reads, and a second
// subscription, through the REST API, to a receiver that always fails.
func (s *setup) soakLoad(ctx context.Context, so SoakOptions) (*soakLoad, error) {
	l := &soakLoad{s: s, so: so, slots: make(chan struct{}, so.InFlight), win: map[string][]time.Duration{}, tot: map[string]loadTotals{},
		hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: so.InFlight}}}
	var orders []map[string]any
	for i := range soakOrders {
		orders = append(orders, map[string]any{"number": "SO-SOAK-" + strconv.Itoa(i), "status": "confirmed",
			"lines": []map[string]any{{"description": "Bolts", "qty": 1000000, "unit_price_minor": 1000}}})
	}
	orders = append(orders, map[string]any{"number": "SO-SOAK-DONE", "status": "fulfilled",
		"lines": []map[string]any{{"description": "Nuts", "qty": 1, "unit_price_minor": 100}}})
	raw, _ := json.Marshal(map[string]any{"orders": orders})
	seed, err := domain.ParseSeed(raw)
	if err != nil {
		return nil, err
	}
	if _, err := s.d.Seed(ctx, s.org, seed); err != nil {
		return nil, err
	}
	perEndpoint := 1.5 // a second, under the endpoint's two
	for _, e := range []struct {
		tokens *[]string
		action domain.Action
		rate   float64
	}{{&l.invoices, domain.ActionOrderInvoice, so.Rate * so.Applied}, {&l.statuses, domain.ActionERPOrderStatus, so.Rate * (1 - so.Applied)}} {
		for i := range max(1, int(math.Ceil(e.rate/perEndpoint))) {
			ep, err := s.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: s.org, AsEmail: "owner@crash.example",
				Name: fmt.Sprintf("soak %s %d", e.action, i+1), Action: e.action})
			if err != nil {
				return nil, err
			}
			*e.tokens = append(*e.tokens, ep.Token)
		}
	}
	if _, l.readKey, err = s.d.CreateAPIKey(ctx, s.org, "soak reads", []domain.Scope{domain.ScopeCustomersRead, domain.ScopeInboundRead,
		domain.ScopeOrdersRead, domain.ScopeProductsRead, domain.ScopeWebhooksRead}); err != nil {
		return nil, err
	}
	l.failing = &failingReceiver{}
	failURL, stop, err := harness.Serve(l.failing)
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, stop)
	body, _ := json.Marshal(map[string]any{"url": failURL + "/hooks", "events": eventTypes})
	status, answer, err := l.call(ctx, http.MethodPost, "/api/v1/webhooks/subscriptions", s.apiKey, body, "")
	if err != nil || status != http.StatusCreated {
		return nil, fmt.Errorf("creating the failing subscription: %d %v %.300s", status, err, answer)
	}
	return l, nil
}

// run sends the load until ctx ends, then waits for what is in flight.
func (l *soakLoad) run(ctx context.Context) {
	var wg sync.WaitGroup
	every := func(rate float64, send func(n int)) {
		if rate <= 0 {
			return
		}
		wg.Go(func() {
			tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				wg.Go(func() { send(n) })
			}
		})
	}
	every(l.so.Rate, func(n int) { l.post(ctx, n) })
	every(l.so.Reads, func(n int) { l.read(ctx, n) })
	every(l.so.Writes, func(n int) { l.write(ctx, n) })
	wg.Wait()
}

// post sends inbound post n: an invoice of one of the orders (applied),
// or, at 1-Applied, a status the fulfilled order cannot take (409).
func (l *soakLoad) post(ctx context.Context, n int) {
	var path, body string
	// Exactly Applied of every run of posts: post n is applied when the
	// count of applied ones up to it steps.
	if int(float64(n+1)*l.so.Applied) > int(float64(n)*l.so.Applied) {
		k := l.n.Add(1)
		path = "/api/in/" + l.invoices[int(k)%len(l.invoices)]
		body = fmt.Sprintf(`{"order_ref": "SO-SOAK-%d", "invoice_ref": "SOAK-%08d", "amount_minor": 100, "currency": "GBP"}`, k%soakOrders, k)
	} else {
		path = "/api/in/" + l.statuses[n%len(l.statuses)]
		body = `{"order_ref": "SO-SOAK-DONE", "status": "processing"}`
	}
	l.do(ctx, "post", http.MethodPost, path, "", []byte(body), n)
}

// read lists or gets, as an operator's screens and an integration's polls
// would.
func (l *soakLoad) read(ctx context.Context, n int) {
	paths := []string{"/api/v1/inbound/receipts?limit=20", "/api/v1/customers?limit=20", "/api/v1/orders?limit=20",
		"/api/v1/webhooks/subscriptions", "receipt", "customer"}
	path := paths[n%len(paths)]
	l.mu.Lock()
	switch {
	case path == "receipt" && len(l.receipt) > 0:
		path = "/api/v1/inbound/receipts/" + l.receipt[(n*7)%len(l.receipt)]
	case path == "customer" && len(l.custs) > 0:
		path = "/api/v1/customers/" + l.custs[(n*7)%len(l.custs)]
	case path == "receipt" || path == "customer":
		path = paths[0]
	}
	l.mu.Unlock()
	l.do(ctx, "read", http.MethodGet, path, l.readKey, nil, n)
}

// write creates two customers: each a customer.created event, delivered
// to the receiver and failed by the failing one.
func (l *soakLoad) write(ctx context.Context, n int) {
	body := fmt.Sprintf(`{"customers": [{"company": "Soak %[1]d a", "external_id": "SOAK-%[1]d-A"}, {"company": "Soak %[1]d b", "external_id": "SOAK-%[1]d-B"}]}`, n)
	l.do(ctx, "write", http.MethodPost, "/api/v1/customers", l.s.apiKey, []byte(body), n)
}

// do sends one request through API replica n mod APIs and books its
// latency and status; shed when InFlight requests are out already.
func (l *soakLoad) do(ctx context.Context, kind, method, path, key string, body []byte, n int) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.book(kind, 0, -1, nil)
		return
	}
	defer func() { <-l.slots }()
	started := time.Now()
	status, answer, err := l.callOn(ctx, n, method, path, key, body, "")
	if ctx.Err() != nil {
		return // cut by the run's end: not the service's latency
	}
	l.book(kind, time.Since(started), status, err)
	l.remember(kind, status, answer)
}

func (l *soakLoad) call(ctx context.Context, method, path, key string, body []byte, idem string) (int, []byte, error) {
	return l.callOn(ctx, 0, method, path, key, body, idem)
}

func (l *soakLoad) callOn(ctx context.Context, n int, method, path, key string, body []byte, idem string) (int, []byte, error) {
	base := l.s.apiURLs[n%len(l.s.apiURLs)]
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if id := resp.Header.Get("X-Receipt-Id"); id != "" {
		l.mu.Lock()
		if l.receipt = append(l.receipt, id); len(l.receipt) > 200 {
			l.receipt = slices.Delete(l.receipt, 0, 100)
		}
		l.mu.Unlock()
	}
	return resp.StatusCode, raw, err
}

// remember keeps the customers a write made, for the gets.
func (l *soakLoad) remember(kind string, status int, answer []byte) {
	if kind != "write" || status/100 != 2 {
		return
	}
	var got struct {
		Customers []struct {
			ID string `json:"id"`
		} `json:"customers"`
	}
	if json.Unmarshal(answer, &got) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range got.Customers {
		if c.ID != "" && len(l.custs) < 200 {
			l.custs = append(l.custs, c.ID)
		}
	}
}

// book counts a request (status -1: shed) and its latency.
func (l *soakLoad) book(kind string, took time.Duration, status int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tot[kind]
	switch {
	case status == -1:
		t.Shed++
	case err != nil || status == 0:
		t.Sent++
		t.NoAnswer++
	default:
		t.Sent++
		l.win[kind] = append(l.win[kind], took)
		switch {
		case status/100 == 2:
			t.OK++
		case status == http.StatusConflict:
			t.Refused409++
		case status >= 500:
			t.Status5xx++
		default:
			t.Other4xx++
		}
	}
	l.tot[kind] = t
}

// window hands over the latencies since the last call.
func (l *soakLoad) window() map[string][]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.win
	l.win = map[string][]time.Duration{}
	for _, kind := range []string{"post", "read", "write"} {
		if _, ok := w[kind]; !ok {
			w[kind] = nil
		}
	}
	return w
}

func (l *soakLoad) totals() map[string]loadTotals {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]loadTotals{}
	for k, v := range l.tot {
		out[k] = v
	}
	out["failing receiver"] = loadTotals{Status5xx: int(l.failing.hits.Load())}
	return out
}

func printLoad(w io.Writer, t map[string]loadTotals) {
	fmt.Fprintf(w, "\n| requests | sent | 2xx | 409 | other 4xx | 5xx | no answer | shed |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, kind := range []string{"post", "read", "write"} {
		v := t[kind]
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", kind, v.Sent, v.OK, v.Refused409, v.Other4xx, v.Status5xx, v.NoAnswer, v.Shed)
	}
	fmt.Fprintf(w, "\nthe failing receiver answered 500 to %d delivery attempts\n", t["failing receiver"].Status5xx)
}
