package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"

	"github.com/commerce-integration/commerce/bench/internal/harness"
)

// The work the old release leaves in flight.
const (
	upgradeParked = 10 // invoices for an order that does not exist yet: parked
	upgradeFailed = 20 // invoices the service refuses: failed, then bulk replayed
	// upgradeLater is the order the parked invoices name, loaded once the
	// new release runs.
	upgradeLater = "SO-LATER"
	// upgradeOrders is how many orders the paced posts' invoices are on.
	upgradeOrders = 16
	// upgradeMatches are supplier invoices for purchase orders with no
	// goods received yet: each a three-way match waiting for its goods,
	// received once the new release runs.
	upgradeMatches = 5
)

// upgrade is a rolling-upgrade rehearsal: a run's setup on the old
// release, and the new release's binary.
type upgrade struct {
	*setup
	oldBin, newBin string
	sideToken      string // the endpoint of the parked and failed posts
	matchToken     string // the endpoint of the supplier invoices
	res            UpgradeResult
	began          time.Time
	answered       counter // posts answered
	urls           map[*receiver]string
}

// UpgradeResult is what a rolling upgrade did and what it found.
type UpgradeResult struct {
	Posts, Applied      int // posts sent while it rolled; applied once each
	DuringRoll          int // posts answered between the first replica stopped and the last started
	PostsLost, Doubled  int
	Parked, Woken       int // posts parked by the old release; applied after their order came
	Matches, Matched    int // three-way matches the old release left waiting for goods; matched once the goods came
	FailedPosts         int // refused posts the bulk replay replayed
	BulkReplay          string
	Deliveries          int // invoice events; delivered once each to the healthy receiver
	Delivered           int
	HeldSeen, Nightly   int // the failing subscription's deliveries seen held; failed awaiting the nightly retry
	DownDelivered       int // the failing subscription's deliveries that succeeded in the end
	OldReadOK           bool
	OldReadyz           int // an old API replica's /readyz after the migration
	OldRuns             int // workflow runs started before the first new worker
	OldByStatus         map[string]int
	OldOpen             int // of those, still open at the end
	TaskFailures        int // WorkflowTaskFailed events in their histories
	Nondeterministic    int // of those, nondeterminism (TMPRL1100)
	Roll, Settle, Total time.Duration
	Problems            []string
}

// Failed reports a loss, a double, work left unfinished or a
// nondeterminism failure.
func (r UpgradeResult) Failed() bool {
	return len(r.Problems) > 0 || r.Nondeterministic > 0 || r.PostsLost > 0 || r.Doubled > 0 ||
		r.Applied != r.Posts || r.Woken != r.Parked || r.Matched != r.Matches || r.Delivered != r.Deliveries || r.OldOpen > 0
}

func (r *UpgradeResult) problem(format string, args ...any) {
	if len(r.Problems) < 20 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

func (r UpgradeResult) print(w io.Writer) {
	for _, p := range r.Problems {
		fmt.Fprintln(w, "  !", p)
	}
	fmt.Fprintf(w, "\nposts                 %d sent (%d answered during the roll), %d applied once, %d lost, %d doubled\n", r.Posts, r.DuringRoll, r.Applied, r.PostsLost, r.Doubled)
	fmt.Fprintf(w, "parked by the old     %d, %d applied once their order came\n", r.Parked, r.Woken)
	fmt.Fprintf(w, "waiting matches       %d left waiting for goods by the old, %d matched once the goods came\n", r.Matches, r.Matched)
	fmt.Fprintf(w, "bulk replay           of %d refused posts, %s\n", r.FailedPosts, r.BulkReplay)
	fmt.Fprintf(w, "deliveries            %d events, %d delivered once to the healthy receiver\n", r.Deliveries, r.Delivered)
	fmt.Fprintf(w, "failing subscription  %d held, %d awaiting the nightly retry, %d delivered in the end\n", r.HeldSeen, r.Nightly, r.DownDelivered)
	fmt.Fprintf(w, "old API after migrate reads %v, /readyz %d\n", r.OldReadOK, r.OldReadyz)
	fmt.Fprintf(w, "old runs              %d started before the first new worker: %v; %d still open\n", r.OldRuns, r.OldByStatus, r.OldOpen)
	fmt.Fprintf(w, "workflow task failed  %d, nondeterministic %d\n", r.TaskFailures, r.Nondeterministic)
	fmt.Fprintf(w, "times                 roll %.1fs, settle %.1fs, total %.1fs\n", r.Roll.Seconds(), r.Settle.Seconds(), r.Total.Seconds())
}

func (u *upgrade) printf(format string, args ...any) {
	fmt.Fprintf(u.opts.Out, "  %5.1fs  "+format, append([]any{time.Since(u.began).Seconds()}, args...)...)
}

// data makes what the old release's schema takes with this checkout's
// queries (the organisation, the orders, the endpoints, a key); the
// subscriptions are made through the old API, whose queries match its
// schema.
func (u *upgrade) data(ctx context.Context, _ *secrets.Sealer) error {
	org, _, err := u.d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Upgrade Ltd", OwnerEmail: "owner@upgrade.example"})
	if err != nil {
		return err
	}
	u.org = org.ID
	// The posts' invoices are spread over upgradeOrders orders: the healthy
	// subscription orders per entity, so the invoices of one order go one
	// at a time, each after the one before succeeded, and all on one order
	// would take longer to deliver than the rest of the rehearsal.
	u.orders = upgradeOrders
	orders := []string{`{"number": "SO-CRASH", "status": "confirmed", "lines": [{"description": "Bolts", "qty": 1000000, "unit_price_minor": 1000}]}`}
	for i := range u.orders {
		orders = append(orders, fmt.Sprintf(`{"number": %q, "status": "confirmed", "lines": [{"description": "Bolts", "qty": 1000000, "unit_price_minor": 1000}]}`, u.orderRef(i)))
	}
	var pos []string
	for i := range upgradeMatches {
		pos = append(pos, fmt.Sprintf(`{"number": %q, "supplier": "Steel Co", "status": "acknowledged",
			"lines": [{"description": "Rod", "qty": 3, "unit_price_minor": 1000}]}`, upgradePO(i)))
	}
	seed, err := domain.ParseSeed([]byte(`{"orders": [` + strings.Join(orders, ",") + `],
		"suppliers": [{"name": "Steel Co", "currency": "GBP"}], "purchase_orders": [` + strings.Join(pos, ",") + `]}`))
	if err != nil {
		return err
	}
	if _, err := u.d.Seed(ctx, u.org, seed); err != nil {
		return err
	}
	for i := 0; i <= u.opts.Posts; i += perEndpoint {
		e, err := u.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: u.org, AsEmail: "owner@upgrade.example",
			Name: fmt.Sprintf("invoices %d", i/perEndpoint+1), Action: domain.ActionOrderInvoice})
		if err != nil {
			return err
		}
		u.tokens = append(u.tokens, e.Token)
	}
	// The last endpoint takes the parked and the refused posts.
	u.sideToken = u.tokens[len(u.tokens)-1]
	e, err := u.d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: u.org, AsEmail: "owner@upgrade.example",
		Name: "supplier invoices", Action: domain.ActionSupplierInvoice})
	if err != nil {
		return err
	}
	u.matchToken = e.Token
	if _, u.apiKey, err = u.d.CreateAPIKey(ctx, u.org, "upgrade", []domain.Scope{domain.ScopeWebhooksWrite, domain.ScopeWebhooksRead,
		domain.ScopeInboundRead, domain.ScopeInboundReplay}); err != nil {
		return err
	}
	u.rc, u.down = newReceiver(), newReceiver()
	u.down.setDown(true)
	u.urls = map[*receiver]string{}
	for _, rc := range []*receiver{u.rc, u.down} {
		url, stop, err := harness.Serve(rc)
		if err != nil {
			return err
		}
		u.urls[rc] = url
		u.stops = append(u.stops, stop)
	}
	u.held, u.resent = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	return nil
}

// call sends a request with the run's key to the API at base.
func (u *upgrade) call(ctx context.Context, hc *http.Client, base, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+u.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, nil
}

// subscribe makes a subscription to rc through the old API.
func (u *upgrade) subscribe(ctx context.Context, hc *http.Client, rc *receiver, ordering string) (uuid.UUID, error) {
	code, raw, err := u.call(ctx, hc, u.urlOf(0), http.MethodPost, "/api/v1/webhooks/subscriptions", map[string]any{
		"url": u.urls[rc] + "/hooks", "events": []string{domain.EventOrderInvoiceRecorded}, "rate_limit_per_second": subscriptionRate, "ordering": ordering})
	if err != nil || code != http.StatusCreated {
		return uuid.UUID{}, fmt.Errorf("POST /api/v1/webhooks/subscriptions: %d %v %s", code, err, raw)
	}
	var got struct {
		ID     uuid.UUID `json:"id"`
		Secret string    `json:"secret"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return uuid.UUID{}, err
	}
	rc.secret = got.Secret
	return got.ID, nil
}

// sidePost posts an invoice to the side endpoint, through API replica 0,
// and answers its outcome.
func (u *upgrade) sidePost(ctx context.Context, hc *http.Client, order, ref string, amount int) (string, error) {
	body := fmt.Sprintf(`{"order_ref": %q, "invoice_ref": %q, "amount_minor": %d, "currency": "GBP"}`, order, ref, amount)
	return u.postTo(ctx, hc, u.sideToken, ref, body)
}

// upgradePO is the i-th purchase order a waiting match is for.
func upgradePO(i int) string { return fmt.Sprintf("P-WAIT-%02d", i) }

// postTo posts body to the endpoint of token, with the Idempotency-Key
// "upgrade-"+ref, through API replica 0, and answers its status and
// outcome.
func (u *upgrade) postTo(ctx context.Context, hc *http.Client, token, ref, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.urlOf(0)+"/api/in/"+token, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.IdempotencyKeyHeader, "upgrade-"+ref)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var got struct {
		Outcome string `json:"outcome"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&got)
	return strconv.Itoa(resp.StatusCode) + " " + got.Outcome, nil
}

// run puts the old release's work in flight, migrates, rolls, finishes
// the work and checks it.
func (u *upgrade) run(ctx context.Context) (UpgradeResult, error) {
	u.began = time.Now()
	u.res.OldByStatus = map[string]int{}
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: u.opts.Clients}}
	u.sampleConnections(ctx)
	var err error
	if u.sub, err = u.subscribe(ctx, hc, u.rc, "per_entity"); err != nil {
		return u.res, err
	}
	if u.downSub, err = u.subscribe(ctx, hc, u.down, "none"); err != nil {
		return u.res, err
	}
	go u.sampleHeld(ctx)
	// Parked and refused posts, on the old release.
	outcomes := map[string]int{}
	for i := range upgradeParked {
		o, err := u.sidePost(ctx, hc, upgradeLater, fmt.Sprintf("PARK-%03d", i), 100)
		if err != nil {
			return u.res, err
		}
		outcomes[o]++
	}
	for i := range upgradeFailed {
		o, err := u.sidePost(ctx, hc, "SO-CRASH", fmt.Sprintf("BAD-%03d", i), -1)
		if err != nil {
			return u.res, err
		}
		outcomes[o]++
	}
	for i := range upgradeMatches {
		ref := fmt.Sprintf("SI-WAIT-%02d", i)
		o, err := u.postTo(ctx, hc, u.matchToken, ref, fmt.Sprintf(`{"po_number": %q, "invoice_ref": %q, "amount_minor": 3000, "invoiced_qty": 3}`, upgradePO(i), ref))
		if err != nil {
			return u.res, err
		}
		outcomes[o]++
	}
	u.res.Matches, err = u.matches(ctx, domain.MatchAwaitingReceipt)
	if err != nil {
		return u.res, err
	}
	u.printf("old release: %d parked and %d refused posts, %d supplier invoices (%d matches waiting for goods) answered %v\n",
		upgradeParked, upgradeFailed, upgradeMatches, u.res.Matches, outcomes)

	// Posts all along, paced to last through the roll.
	// A quarter of them before the migration, the rest from it on.
	answers := make([]answer, u.opts.Posts)
	var posting sync.WaitGroup
	next := make(chan int)
	for range u.opts.Clients {
		posting.Go(func() {
			for i := range next {
				answers[i] = u.post(ctx, hc, i)
				u.answered.add(1)
			}
		})
	}
	paced, rolling := make(chan struct{}), make(chan struct{})
	pace := 80 * time.Millisecond
	go func() {
		defer close(next)
		for i := range u.opts.Posts {
			if i == u.opts.Posts/4 {
				close(paced)
				select {
				case <-rolling:
				case <-ctx.Done():
					return
				}
			}
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
			time.Sleep(pace)
		}
	}()
	<-paced
	// The failing subscription: five failed (awaiting the nightly retry),
	// the rest held.
	if err := u.waitFor(ctx, "the failing subscription's deliveries held", time.Minute, func() (bool, error) {
		failed, err := u.downDeliveries(ctx, domain.WebhookFailed)
		u.res.Nightly = len(failed)
		return len(failed) >= 5 && u.heldCount() > 0, err
	}); err != nil {
		return u.res, err
	}
	code, raw, err := u.call(ctx, hc, u.urlOf(0), http.MethodPost, "/api/v1/inbound/replays", map[string]any{"outcome": "failed,error,unmatched"})
	if err != nil || code != http.StatusAccepted {
		return u.res, fmt.Errorf("POST /api/v1/inbound/replays on the old release: %d %v %s", code, err, raw)
	}
	var batch struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(raw, &batch)
	u.printf("old release: %d deliveries awaiting the nightly retry, %d held; bulk replay %s %s\n", u.res.Nightly, u.heldCount(), batch.ID, batch.Status)

	// The new release's migration, under the old replicas.
	close(rolling)
	started := time.Now()
	if err := migrateWith(ctx, u.newBin, u.dbURL); err != nil {
		return u.res, err
	}
	u.printf("migrated by the new release in %.1fs\n", time.Since(started).Seconds())
	if err := u.oldReplicaServes(ctx, hc); err != nil {
		return u.res, err
	}
	u.printf("an old API replica after the migration: reads answer 200, /readyz %d\n", u.res.OldReadyz)

	// One at a time: the API replicas, then the workers.
	rollStart, before := time.Now(), u.answered.get()
	u.bins.commerce = u.newBin
	for i := range u.apis {
		if err := u.replace(ctx, "api", i); err != nil {
			return u.res, err
		}
	}
	cutoff := time.Now()
	for i := range u.workers {
		if err := u.replace(ctx, "worker", i); err != nil {
			return u.res, err
		}
	}
	u.res.Roll, u.res.DuringRoll = time.Since(rollStart), u.answered.get()-before
	posting.Wait()

	// The work left, finished on the new release.
	settleStart := time.Now()
	later, err := domain.ParseSeed([]byte(`{"orders": [{"number": "` + upgradeLater + `", "status": "confirmed",
		"lines": [{"description": "Nuts", "qty": 1000, "unit_price_minor": 100}]}]}`))
	if err != nil {
		return u.res, err
	}
	if _, err := u.d.Seed(ctx, u.org, later); err != nil {
		return u.res, err
	}
	var receipts []string
	for i := range upgradeMatches {
		receipts = append(receipts, fmt.Sprintf(`{"po_number": %q, "received_at": %q, "lines": [{"position": 1, "qty": 3}]}`,
			upgradePO(i), time.Now().UTC().Format(time.RFC3339)))
	}
	goods, err := domain.ParseSeed([]byte(`{"goods_receipts": [` + strings.Join(receipts, ",") + `]}`))
	if err != nil {
		return u.res, err
	}
	if _, err := u.d.Seed(ctx, u.org, goods); err != nil {
		return u.res, err
	}
	u.down.setDown(false)
	go u.resendFailed(ctx, hc)
	u.printf("new release: %s and the waiting matches' goods loaded, the failing receiver answers 2xx, its failed deliveries resent\n", upgradeLater)
	if err := u.waitFor(ctx, "everything to settle", u.opts.Settle, func() (bool, error) {
		st, err := u.state(ctx)
		if err != nil {
			return false, err
		}
		code, raw, _ := u.call(ctx, hc, u.urlOf(0), http.MethodGet, "/api/v1/inbound/replays/"+batch.ID, nil)
		_ = json.Unmarshal(raw, &batch)
		return code == http.StatusOK && batch.Status != "running" && st.quiet() && st.parked == 0 && st.waitingMatches == 0, nil
	}); err != nil {
		u.res.problem("%v", err)
	}
	u.res.BulkReplay = batch.Status
	if u.res.Matched, err = u.matches(ctx, domain.MatchMatched); err != nil {
		return u.res, err
	}
	u.res.Settle = time.Since(settleStart)
	close(u.sampleStop)
	if err := u.check(ctx, answers); err != nil {
		return u.res, err
	}
	if err := u.checkRuns(ctx, cutoff); err != nil {
		return u.res, err
	}
	u.res.Total = time.Since(u.began)
	return u.res, nil
}

// waitFor polls done every 250 ms for up to d.
func (u *upgrade) waitFor(ctx context.Context, what string, d time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// upgradeState is where the run stands: the state of a crash run, and the
// posts still parked.
type upgradeState struct {
	state
	parked, waitingMatches int
}

func (u *upgrade) state(ctx context.Context) (upgradeState, error) {
	st, err := u.setup.state(ctx)
	if err != nil {
		return upgradeState{}, err
	}
	var parked int
	if err := u.d.Pool().QueryRow(ctx, `SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND outcome = 'parked'`, u.org).Scan(&parked); err != nil {
		return upgradeState{}, err
	}
	waiting, err := u.matches(ctx, domain.MatchAwaitingReceipt)
	return upgradeState{st, parked, waiting}, err
}

// matches counts the supplier invoices whose three-way match is in status.
func (u *upgrade) matches(ctx context.Context, status domain.MatchStatus) (int, error) {
	var n int
	err := u.d.Pool().QueryRow(ctx, `SELECT count(*) FROM supplier_invoices WHERE org_id = $1 AND match_status = $2`, u.org, status).Scan(&n)
	return n, err
}
