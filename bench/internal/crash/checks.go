package crash

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// Result is what one run found.
type Result struct {
	Run int

	Posts        int // posts sent
	Applied      int // posts with exactly one receipt, applied, one effect, one invoice and one event
	PostsLost    int // posts without an answer, a receipt, an applied outcome, an effect, an invoice or an event
	PostsDoubled int // posts with more than one receipt, effect, invoice or event
	Accepted     int // posts answered 202 (still running after the answer wait), applied later

	Deliveries        int // deliveries expected: one per post's invoice event and per customer created
	Delivered         int // events with exactly one delivery, succeeded at its first attempt, received under that delivery's id
	DeliveriesLost    int // events never recorded, relayed, delivered or received
	DeliveriesDoubled int // events recorded twice, with two deliveries, a second application-level attempt, or received under two delivery ids
	Repeats           int // HTTP requests that repeated a delivery the receiver already had (same delivery id)
	Unexpected        int // events or requests nobody asked for, and requests whose signatures did not verify
	ExtraRuns         int // workflow executions beyond one per receipt and one per delivery
	// OutOfOrder counts events that arrived before an earlier event of the
	// same entity (the subscription orders per entity).
	OutOfOrder int
	// PeakPerSecond is the most events that first arrived in any one
	// second (the subscription's rate is subscriptionRate). It is
	// reported, not held to the rate: the attempts in flight when a worker
	// is killed are made again together by the next one.
	PeakPerSecond int

	// The down subscription (runs with faults): its receiver answers 503
	// until the faults have been struck. DownDeliveries are expected (one
	// per post's invoice event); DownDelivered arrived and succeeded, each
	// under one delivery id with one successful attempt and its attempts
	// counted as the receiver saw them. Held were seen held; HeldSpent of
	// those spent an attempt before the one that arrived (they must not).
	// Refused are the requests answered 503, Resent the failed deliveries
	// support resent.
	DownDeliveries, DownDelivered int
	Held, HeldSpent               int
	// HeldProbed of the held deliveries were tried by the failing spell's
	// probes while the receiver was still down, spending Probes attempts
	// refused (at most as many as the probe schedule fits in the spell).
	HeldProbed, Probes int
	Refused, Resent    int

	Faults   []FaultResult
	Settled  time.Duration // from the first post until everything was quiet
	TimedOut bool
	// PeakConnections is the most connections to the run's databases seen
	// at once (pg_stat_activity, every 100 ms); MaxConnections is the
	// server's max_connections.
	PeakConnections, MaxConnections int
	// PeakService and PeakTemporal are the peaks of each side apart.
	PeakService, PeakTemporal int
	// CPU is what each kind of process used over the burst (prod shape),
	// CPUFor how long the burst was measured; IdleCPU, with Options.Idle,
	// what each kind used a second before the burst, with nothing to do.
	CPU     CPU
	CPUFor  time.Duration
	IdleCPU CPU
	// Visibility is the Temporal server's visibility-store requests over
	// the burst, by operation (Options.TemporalMetrics).
	Visibility map[string]float64

	Problems []string
}

// Failed reports a loss, a double or anything unexpected, or an API
// replica that was not ready while the Temporal server was down.
func (r Result) Failed() bool {
	for _, f := range r.Faults {
		if f.Fault == FaultTemporal && !f.ReadyWhileDown || f.Outage != nil && len(f.Outage.Problems(f.Fault)) > 0 {
			return true
		}
	}
	return r.PostsLost > 0 || r.PostsDoubled > 0 || r.DeliveriesLost > 0 || r.DeliveriesDoubled > 0 ||
		r.Unexpected > 0 || r.ExtraRuns > 0 || r.Applied != r.Posts || r.Delivered != r.Deliveries ||
		r.OutOfOrder > 0 || r.DownDelivered != r.DownDeliveries || r.HeldSpent > 0 || (r.DownDeliveries > 0 && r.Held == 0)
}

func (r *Result) problem(format string, args ...any) {
	if len(r.Problems) < 20 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

func (r Result) printProblems(w io.Writer) {
	for _, p := range r.Problems {
		fmt.Fprintln(w, "  !", p)
	}
	for _, f := range r.Faults {
		if f.Outage != nil {
			for _, p := range f.Outage.Problems(f.Fault) {
				fmt.Fprintln(w, "  !", p)
			}
		}
	}
}

// check counts, from the database, the receiver and Temporal, what became
// of every post and every delivery.
func (s *setup) check(ctx context.Context, answers []answer) (Result, error) {
	res := Result{Posts: s.opts.Posts, Deliveries: s.opts.Deliveries}
	q := s.d.Pool()

	// Posts: receipts by invoice reference, with their effects.
	type receipt struct {
		id      uuid.UUID
		outcome string
		effect  bool
	}
	receipts := map[string][]receipt{}
	rows, err := q.Query(ctx, `
		SELECT r.id, convert_from(r.body, 'UTF8')::jsonb ->> 'invoice_ref', r.outcome, e.receipt_id IS NOT NULL
		FROM inbound_receipts r LEFT JOIN inbound_effects e ON e.org_id = r.org_id AND e.receipt_id = r.id
		WHERE r.org_id = $1`, s.org)
	if err != nil {
		return res, err
	}
	var nReceipts int64
	for rows.Next() {
		var rc receipt
		var ref string
		if err := rows.Scan(&rc.id, &ref, &rc.outcome, &rc.effect); err != nil {
			rows.Close()
			return res, err
		}
		receipts[ref] = append(receipts[ref], rc)
		nReceipts++
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	invoices, err := countBy(ctx, q, `SELECT invoice_ref FROM order_invoices WHERE org_id = $1`, s.org)
	if err != nil {
		return res, err
	}
	customers, err := countBy(ctx, q, `SELECT external_refs ->> 'external_id' FROM customers WHERE org_id = $1`, s.org)
	if err != nil {
		return res, err
	}

	// Events, keyed by what caused them: the invoice or the customer.
	events := map[string][]uuid.UUID{}
	known := map[uuid.UUID]bool{}
	rows, err = q.Query(ctx, `
		SELECT id, CASE type WHEN $2 THEN 'invoice:' || (data ->> 'invoice_ref') ELSE 'customer:' || (data ->> 'external_id') END
		FROM events WHERE org_id = $1 AND type = ANY($3)`, s.org, domain.EventOrderInvoiceRecorded, eventTypes)
	if err != nil {
		return res, err
	}
	for rows.Next() {
		var id uuid.UUID
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return res, err
		}
		events[key] = append(events[key], id)
	}
	if err := rows.Err(); err != nil {
		return res, err
	}

	for i := range s.opts.Posts {
		ref := invoiceRef(i)
		a, rs := answers[i], receipts[ref]
		applied, effects := 0, 0
		for _, r := range rs {
			if r.outcome == string(domain.OutcomeApplied) {
				applied++
			}
			if r.effect {
				effects++
			}
		}
		nEvents := len(events["invoice:"+ref])
		switch {
		case a.err != nil || (a.status != http.StatusOK && a.status != http.StatusAccepted):
			res.PostsLost++
			res.problem("post %s answered %d %v", ref, a.status, a.err)
		case len(rs) == 0 || applied == 0 || effects == 0 || invoices[ref] == 0 || nEvents == 0:
			res.PostsLost++
			res.problem("post %s: %d receipts, %d applied, %d effects, %d invoices, %d events", ref, len(rs), applied, effects, invoices[ref], nEvents)
		}
		if len(rs) > 1 || effects > 1 || invoices[ref] > 1 || nEvents > 1 {
			res.PostsDoubled++
			res.problem("post %s doubled: %d receipts, %d effects, %d invoices, %d events", ref, len(rs), effects, invoices[ref], nEvents)
		}
		if len(rs) == 1 && applied == 1 && effects == 1 && invoices[ref] == 1 && nEvents == 1 && (a.status == http.StatusOK || a.status == http.StatusAccepted) {
			res.Applied++
			if a.status == http.StatusAccepted {
				res.Accepted++
			}
		}
	}
	// Receipts of posts nobody made.
	posts := map[string]bool{}
	for i := range s.opts.Posts {
		posts[invoiceRef(i)] = true
	}
	for ref, rs := range receipts {
		if !posts[ref] {
			res.Unexpected += len(rs)
			res.problem("%d receipts for unknown invoice %q", len(rs), ref)
		}
	}

	// Deliveries: the delivery records of each event, their attempts, and
	// what the receiver got.
	// by subscription, then event
	bySub := map[uuid.UUID]map[uuid.UUID][]delivery{}
	rows, err = q.Query(ctx, `
		SELECT d.subscription_id, d.event_id, d.id, d.status, d.attempts,
		       (SELECT count(*) FROM webhook_attempts a WHERE a.org_id = d.org_id AND a.delivery_id = d.id)
		FROM webhook_deliveries d WHERE d.org_id = $1`, s.org)
	if err != nil {
		return res, err
	}
	var nDeliveries int64
	for rows.Next() {
		var sub, ev uuid.UUID
		var d delivery
		if err := rows.Scan(&sub, &ev, &d.id, &d.status, &d.attempts, &d.logged); err != nil {
			rows.Close()
			return res, err
		}
		if bySub[sub] == nil {
			bySub[sub] = map[uuid.UUID][]delivery{}
		}
		bySub[sub][ev] = append(bySub[sub][ev], d)
		nDeliveries++
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	deliveries := bySub[s.sub]
	for sub, evs := range bySub {
		if sub != s.sub && sub != s.downSub {
			res.Unexpected += len(evs)
			res.problem("%d deliveries to subscription %s, which the run did not make", len(evs), sub)
		}
	}
	arrivals, bad := s.rc.snapshot()
	if bad > 0 {
		res.Unexpected += bad
		res.problem("%d webhook requests did not verify", bad)
	}

	var keys []string
	for i := range s.opts.Posts {
		keys = append(keys, "invoice:"+invoiceRef(i))
	}
	for i := range s.opts.Deliveries - s.opts.Posts {
		ref := customerRef(i)
		keys = append(keys, "customer:"+ref)
		if customers[ref] != 1 {
			res.problem("customer %s: %d rows", ref, customers[ref])
		}
	}
	for _, key := range keys {
		evs := events[key]
		if len(evs) == 0 {
			res.DeliveriesLost++
			res.problem("%s: no event", key)
			continue
		}
		if len(evs) > 1 {
			res.DeliveriesDoubled++
			res.problem("%s: %d events", key, len(evs))
		}
		ok, lost, doubled := true, false, false
		for _, ev := range evs {
			known[ev] = true
			ds, got := deliveries[ev], arrivals[ev.String()]
			switch {
			case len(ds) == 0:
				lost = true
				res.problem("%s: event %s has no delivery", key, ev)
			case len(ds) > 1:
				doubled = true
				res.problem("%s: event %s has %d deliveries", key, ev, len(ds))
			}
			if len(got) == 0 {
				lost = true
				res.problem("%s: event %s never reached the receiver", key, ev)
			}
			if len(got) > 1 {
				doubled = true
				res.problem("%s: event %s reached the receiver under %d delivery ids", key, ev, len(got))
			}
			for _, n := range got {
				res.Repeats += n - 1
			}
			for _, d := range ds {
				if d.status != string(domain.WebhookSucceeded) {
					lost = true
					res.problem("%s: delivery %s is %s after %d attempts", key, d.id, d.status, d.attempts)
				}
				if d.attempts > 1 || d.logged > 1 {
					doubled = true
					res.problem("%s: delivery %s made %d attempts (%d logged)", key, d.id, d.attempts, d.logged)
				}
				if got[d.id.String()] == 0 {
					ok = false
				}
			}
			ok = ok && len(ds) == 1 && len(got) == 1
		}
		if lost {
			res.DeliveriesLost++
		}
		if doubled {
			res.DeliveriesDoubled++
		}
		if ok && !lost && !doubled && len(evs) == 1 {
			res.Delivered++
		}
	}
	for ev := range arrivals {
		id, err := uuid.Parse(ev)
		if err != nil || !known[id] {
			res.Unexpected++
			res.problem("the receiver got event %s, which no post or customer made", ev)
		}
	}

	if s.down != nil {
		s.checkDown(&res, events, bySub[s.downSub], known)
	}

	if err := s.checkOrderAndRate(ctx, &res); err != nil {
		return res, err
	}

	// One workflow execution per receipt and per delivery: a second would
	// be work started again.
	for _, c := range []struct {
		typ  string
		want int64
	}{{"InboundAction", nReceipts}, {"WebhookDelivery", nDeliveries}} {
		// Visibility lags the workflows (more so after a server restart,
		// which replays its visibility tasks): a count short of the records
		// is asked again for up to 30 s.
		var n int64
		for wait := time.Now().Add(30 * time.Second); ; {
			var err error
			if n, err = s.countWorkflows(ctx, fmt.Sprintf("WorkflowType = '%s'", c.typ)); err != nil {
				return res, err
			}
			if n >= c.want || time.Now().After(wait) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if n != c.want {
			res.problem("%d %s workflow executions for %d records", n, c.typ, c.want)
		}
		if n > c.want {
			res.ExtraRuns += int(n - c.want)
		}
	}
	return res, nil
}

// delivery is a delivery record, its attempts counted and logged.
type delivery struct {
	id       uuid.UUID
	status   string
	attempts int
	logged   int
}

// checkDown holds the down subscription's deliveries, one per invoice
// event, to what its receiver saw: each arrived once, succeeded, with as
// many attempts counted and logged as attempt numbers sent, and a held
// delivery arrived at its first attempt.
func (s *setup) checkDown(res *Result, events map[string][]uuid.UUID, deliveries map[uuid.UUID][]delivery, known map[uuid.UUID]bool) {
	arrivals, bad := s.down.snapshot()
	tries := s.down.attempts()
	s.mu.Lock()
	held, resent := maps.Clone(s.held), len(s.resent)
	s.mu.Unlock()
	res.DownDeliveries, res.Held, res.Refused, res.Resent = s.opts.Posts, len(held), s.down.refusals(), resent
	if bad > 0 {
		res.Unexpected += bad
		res.problem("%d webhook requests to the down receiver did not verify", bad)
	}
	for i := range s.opts.Posts {
		key := "invoice:" + invoiceRef(i)
		evs := events[key]
		if len(evs) != 1 {
			continue // lost or doubled, counted with the posts
		}
		ev := evs[0]
		ds, got := deliveries[ev], arrivals[ev.String()]
		if len(ds) != 1 || len(got) != 1 {
			res.problem("down %s: event %s has %d deliveries, arrived under %d delivery ids", key, ev, len(ds), len(got))
			if len(ds) > 1 || len(got) > 1 {
				res.DeliveriesDoubled++
			} else {
				res.DeliveriesLost++
			}
			continue
		}
		d := ds[0]
		sent, ok := tries[d.id.String()], 0
		for _, succeeded := range sent {
			if succeeded {
				ok++
			}
		}
		switch {
		case d.status != string(domain.WebhookSucceeded) || got[d.id.String()] == 0:
			res.DeliveriesLost++
			res.problem("down %s: delivery %s is %s after %d attempts", key, d.id, d.status, d.attempts)
		case ok != 1 || d.attempts != len(sent) || d.logged != len(sent):
			res.DeliveriesDoubled++
			res.problem("down %s: delivery %s counted %d attempts (%d logged); the receiver saw attempts %v", key, d.id, d.attempts, d.logged, sent)
		default:
			res.DownDelivered++
			res.Repeats += got[d.id.String()] - 1
		}
		if held[d.id] && (d.attempts != 1 || !sent[1]) {
			// A probe of the failing spell tries the oldest held delivery:
			// refused while the receiver is down, it spends that attempt.
			// Any other attempt spent by a held delivery is wrong.
			if probed, ok := probedThenArrived(sent, d.attempts); ok {
				res.HeldProbed++
				res.Probes += probed
			} else {
				res.HeldSpent++
				res.problem("down %s: delivery %s was held, then made %d attempts (the receiver saw %v)", key, d.id, d.attempts, sent)
			}
		}
	}
	first, up := s.down.downSpell()
	if most := probesBefore(first, up); res.Probes > most {
		res.problem("held deliveries spent %d attempts as probes while the receiver was down (%s), more than the %d probes its failing spell can have made",
			res.Probes, up.Sub(first).Round(time.Second), most)
	}
	for ev := range arrivals {
		if id, err := uuid.Parse(ev); err != nil || !known[id] {
			res.Unexpected++
			res.problem("the down receiver got event %s, which no post made", ev)
		}
	}
}

// probedThenArrived reports whether a delivery's attempts, as the
// receiver saw them (attempt number to answered 2xx), are refused probes
// and then one success, all counted: the success is the last attempt and
// every one before it was refused. It returns the refused ones.
func probedThenArrived(sent map[int]bool, attempts int) (int, bool) {
	if attempts < 2 || len(sent) != attempts || !sent[attempts] {
		return 0, false
	}
	for n := 1; n < attempts; n++ {
		if ok, seen := sent[n]; !seen || ok {
			return 0, false
		}
	}
	return attempts - 1, true
}

// probesBefore is the most probes a failing spell can have made before up,
// the spell having begun no earlier than first (the receiver's first
// refusal: the spell needs failures to begin). The probes come
// domain.ProbeFirst after the spell begins, then after waits that double
// (1, 2, 4 ... minutes, up to domain.ProbeMax), so the k-th (from 0) comes
// no earlier than first plus the waits before it.
func probesBefore(first, up time.Time) int {
	if first.IsZero() || up.IsZero() {
		return 0
	}
	n, at, wait := 0, first, domain.ProbeFirst
	for {
		at = at.Add(wait)
		if !at.Before(up) {
			return n
		}
		n++
		wait = min(wait*2, domain.ProbeMax)
	}
}

// countBy counts the rows of query ($1 the organisation) by their one text
// column.
func countBy(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, query string, org uuid.UUID) (map[string]int, error) {
	rows, err := q.Query(ctx, query, org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k *string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		if k != nil {
			out[*k]++
		}
	}
	return out, rows.Err()
}

// printTable prints one row per run, and one per fault struck.
func printTable(w io.Writer, results []Result) {
	fmt.Fprintf(w, "\n%-4s | %6s %7s %4s %7s %8s | %10s %9s %4s %7s %7s | %8s %11s\n",
		"run", "posts", "applied", "lost", "doubled", "202 then", "deliveries", "delivered", "lost", "doubled", "repeats",
		"settled", "peak conns (service + Temporal)")
	for _, r := range results {
		settled := fmt.Sprintf("%.1fs", r.Settled.Seconds())
		if r.TimedOut {
			settled = "timeout"
		}
		fmt.Fprintf(w, "%-4d | %6d %7d %4d %7d %8d | %10d %9d %4d %7d %7d | %8s %6d/%d (%d + %d)\n",
			r.Run, r.Posts, r.Applied, r.PostsLost, r.PostsDoubled, r.Accepted,
			r.Deliveries, r.Delivered, r.DeliveriesLost, r.DeliveriesDoubled, r.Repeats, settled, r.PeakConnections, r.MaxConnections,
			r.PeakService, r.PeakTemporal)
		fmt.Fprintf(w, "     | deliveries to a subscription of %d a second, ordered per entity: %d out of order; at most %d arrived in one second\n",
			subscriptionRate, r.OutOfOrder, r.PeakPerSecond)
		if r.DownDeliveries > 0 {
			fmt.Fprintf(w, "     | a subscription whose receiver was down until the faults were struck: %d/%d delivered; %d requests refused, %d failed deliveries resent; %d held, %d of them tried by %d probes refused, %d spent an attempt otherwise\n",
				r.DownDelivered, r.DownDeliveries, r.Refused, r.Resent, r.Held, r.HeldProbed, r.Probes, r.HeldSpent)
		}
		if r.Unexpected > 0 || r.ExtraRuns > 0 {
			fmt.Fprintf(w, "     | %d unexpected events, receipts or requests; %d extra workflow executions\n", r.Unexpected, r.ExtraRuns)
		}
	}
	if len(results) > 0 && results[0].CPU != nil {
		fmt.Fprintf(w, "\n%-4s | %-11s | %8s | %18s | %6s\n", "run", "process", "CPU s", "ms per post+deliv.", "share")
		for _, r := range results {
			r.CPU.print(w, r.Run, r.Posts, r.Deliveries)
		}
	}
	if len(results) == 0 || len(results[0].Faults) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-4s | %-8s | %8s %18s | %9s %9s %9s %s\n", "run", "fault", "at", "applied/delivered", "back", "stall", "slowest", "(requests cut)")
	for _, r := range results {
		for _, f := range r.Faults {
			cut := ""
			if f.Fault == FaultAPI {
				cut = fmt.Sprintf("(%d cut, sent again)", f.Cut)
			}
			fmt.Fprintf(w, "%-4d | %-8s | %7.1fs %8d/%-9d | %8.1fs %8.1fs %8.1fs %s\n", r.Run, f.Fault, f.After.Seconds(),
				f.Applied, f.Delivered, f.Back.Seconds(), f.Stall.Seconds(), f.Slowest.Seconds(), cut)
		}
	}
}

// checkOrderAndRate holds the receiver's first arrivals to the
// subscription's ordering, each entity's events in event order, and finds
// the most that arrived in any one second.
func (s *setup) checkOrderAndRate(ctx context.Context, res *Result) error {
	rows, err := s.d.Pool().Query(ctx, `SELECT id::text, coalesce(entity_type || ':' || entity_id, id::text),
		row_number() OVER (PARTITION BY entity_type, entity_id ORDER BY created_at, id)
		FROM events WHERE org_id = $1 AND type = ANY($2)`, s.org, eventTypes)
	if err != nil {
		return err
	}
	type place struct {
		entity string
		n      int
	}
	order := map[string]place{}
	for rows.Next() {
		var id string
		var p place
		if err := rows.Scan(&id, &p.entity, &p.n); err != nil {
			rows.Close()
			return err
		}
		order[id] = p
	}
	if err := rows.Err(); err != nil {
		return err
	}
	firsts := s.rc.firsts()
	last := map[string]int{}
	for _, a := range firsts {
		p, ok := order[a.event]
		if !ok {
			continue // counted as unexpected above
		}
		if p.n < last[p.entity] {
			res.OutOfOrder++
			res.problem("event %s (number %d of %s) arrived after number %d", a.event, p.n, p.entity, last[p.entity])
		}
		last[p.entity] = max(last[p.entity], p.n)
	}
	most := 0
	for i := range firsts {
		n := 0
		for j := i; j < len(firsts) && firsts[j].at.Sub(firsts[i].at) < time.Second; j++ {
			n++
		}
		most = max(most, n)
	}
	res.PeakPerSecond = most
	return nil
}
