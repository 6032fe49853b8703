package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// apiKey makes an all-scopes key of the fixture's organisation.
func (f *inboundFixture) apiKey() string {
	f.T.Helper()
	_, key, err := f.DB.CreateAPIKey(context.Background(), f.org.ID, "support", domain.AllScopes)
	if err != nil {
		f.T.Fatal(err)
	}
	return key
}

// call sends a management request and decodes its JSON answer into out
// (when given), returning the status and the raw body.
func (f *inboundFixture) call(method, path, key, body string, out any) (int, []byte) {
	f.T.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			f.T.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, raw
}

type receiptView struct {
	ID            string  `json:"id"`
	Outcome       string  `json:"outcome"`
	ReplayOf      *string `json:"replay_of"`
	WorkflowID    *string `json:"workflow_id"`
	TemporalUIURL *string `json:"temporal_ui_url"`
	Replays       []string
	Trace         struct {
		Applied bool             `json:"applied"`
		Changes []map[string]any `json:"changes"`
		Events  []struct {
			ID         string `json:"id"`
			Type       string `json:"type"`
			Deliveries []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"deliveries"`
		} `json:"events"`
	} `json:"trace"`
}

type replayView struct {
	DryRun  bool             `json:"dry_run"`
	Outcome string           `json:"outcome"`
	Changes []map[string]any `json:"changes"`
	Receipt *receiptView     `json:"receipt"`
}

// A post fails because its order does not exist (it parks, and support
// cancels it); once the order is loaded, a dry run shows the change without
// making it, a replay applies it, the replay's trace shows the change, the
// event it emitted and that event's delivery; replaying it again changes
// nothing. Every write is in the audit log.
func TestManagementReplayShowsTheTraceAndAppliesOnce(t *testing.T) {
	f := newInbound(t)
	key := f.apiKey()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	f.Outbox()
	var sub struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if status, raw := f.call("POST", "/api/v1/webhooks/subscriptions", key,
		fmt.Sprintf(`{"url": %q, "events": ["order.status_changed"]}`, rc.srv.URL+"/hooks"), &sub); status != 201 {
		t.Fatalf("subscribe: %d %s", status, raw)
	}
	rc.mu.Lock()
	rc.secret = sub.Secret
	rc.mu.Unlock()

	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	a := f.post(url, `{"order_ref": "SO-NEW", "status": "processing"}`)
	if a.status != 202 || a.str("outcome") != "parked" {
		t.Fatalf("post for an order that does not exist: %d %s", a.status, a.raw)
	}
	var cancelled receiptView
	if status, raw := f.call("POST", "/api/v1/inbound/receipts/"+a.receipt+"/cancel", key, "", &cancelled); status != 200 || cancelled.Outcome != "cancelled" {
		t.Fatalf("cancel: %d %s", status, raw)
	}
	var failed struct {
		Receipts []receiptView `json:"receipts"`
	}
	f.call("GET", "/api/v1/inbound/receipts?outcome=cancelled,failed&ref=SO-NEW&endpoint_id="+epID, key, "", &failed)
	if len(failed.Receipts) != 1 || failed.Receipts[0].ID != a.receipt {
		t.Fatalf("the failed receipt is not listed: %+v", failed)
	}

	f.seed(`{"orders": [{"number": "SO-NEW", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	var dry replayView
	if status, raw := f.call("POST", "/api/v1/inbound/receipts/"+a.receipt+"/replay", key, `{"dry_run": true}`, &dry); status != 200 ||
		!dry.DryRun || dry.Receipt != nil || len(dry.Changes) != 1 || dry.Changes[0]["to"] != "in_progress" {
		t.Fatalf("dry run: %d %s", status, raw)
	}
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-NEW'`) != "confirmed" ||
		f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1`) != 1 ||
		f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'order.status_changed'`) != 0 {
		t.Fatal("the dry run wrote something")
	}

	var replay replayView
	if status, raw := f.call("POST", "/api/v1/inbound/receipts/"+a.receipt+"/replay", key, `{}`, &replay); status != 200 ||
		replay.Outcome != "applied" || replay.Receipt == nil || *replay.Receipt.ReplayOf != a.receipt || len(replay.Changes) != 1 {
		t.Fatalf("replay: %d %s", status, raw)
	}
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-NEW'`) != "in_progress" {
		t.Fatal("the replay did not move the order")
	}
	if d := rc.next(); d.verified != nil || d.envelope.Type != "order.status_changed" {
		t.Fatalf("delivery: %+v", d)
	}
	var detail receiptView
	f.eventually("the trace showing the delivery succeeded", func() bool {
		f.call("GET", "/api/v1/inbound/receipts/"+replay.Receipt.ID, key, "", &detail)
		return len(detail.Trace.Events) == 1 && len(detail.Trace.Events[0].Deliveries) == 1 &&
			detail.Trace.Events[0].Deliveries[0].Status == "succeeded"
	})
	if !detail.Trace.Applied || len(detail.Trace.Changes) != 1 || detail.Trace.Changes[0]["to"] != "in_progress" ||
		detail.Trace.Events[0].Type != "order.status_changed" || detail.WorkflowID == nil || detail.TemporalUIURL == nil ||
		!strings.HasPrefix(*detail.TemporalUIURL, TemporalUIURL+"/namespaces/") ||
		!strings.HasSuffix(*detail.TemporalUIURL, "/workflows/inbound%2F"+replay.Receipt.ID) {
		t.Fatalf("trace of the replay: %+v", detail)
	}

	var again replayView
	if status, raw := f.call("POST", "/api/v1/inbound/receipts/"+a.receipt+"/replay", key, `{}`, &again); status != 200 || again.Receipt == nil {
		t.Fatalf("replay again: %d %s", status, raw)
	}
	if f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'order.status_changed'`) != 1 ||
		f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1`) != 1 || f.count(`SELECT count(*) FROM inbound_effects WHERE org_id = $1`) != 1 {
		t.Fatal("replaying again changed something")
	}
	var original receiptView
	f.call("GET", "/api/v1/inbound/receipts/"+a.receipt, key, "", &original)
	if len(original.Replays) != 2 {
		t.Fatalf("the original lists replays %v, want 2", original.Replays)
	}

	code, out, errOut := f.cliRun("audit", "list", "--org", f.org.ID.String(), "--json")
	var raw []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &raw) != nil {
		t.Fatalf("audit list: %d %s %s", code, out, errOut)
	}
	var actions []string
	for _, e := range raw {
		actions = append(actions, fmt.Sprint(e["action"], " ", e["target_id"]))
		if !strings.HasPrefix(fmt.Sprint(e["actor"]), "key:") {
			t.Errorf("audit entry %v not by the key", e)
		}
	}
	slices.Reverse(actions)
	want := []string{"subscription.create " + sub.ID, "receipt.cancel " + a.receipt, "receipt.replay " + a.receipt, "receipt.replay " + a.receipt}
	if !slices.Equal(actions, want) {
		t.Fatalf("audit log %v, want %v", actions, want)
	}
}

// Recover resends exactly the failed and exhausted deliveries of the
// subscription created since the date: not older ones, not succeeded or
// pending ones, not another subscription's.
func TestRecoverResendsExactlyTheFailedAndExhaustedSince(t *testing.T) {
	f := newInbound(t)
	key := f.apiKey()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	sub := rc.subscribe(f)
	other := newReceiver(t, nil).subscribe(f)
	since := time.Now().Add(-time.Hour)
	deliveries := map[string]string{}
	for _, c := range []struct {
		name, status string
		sub          string
		age          time.Duration
	}{
		{"old-failed", "failed", sub.ID.String(), 2 * time.Hour},
		{"failed", "failed", sub.ID.String(), 30 * time.Minute},
		{"exhausted", "exhausted", sub.ID.String(), 10 * time.Minute},
		{"succeeded", "succeeded", sub.ID.String(), 10 * time.Minute},
		{"pending", "pending", sub.ID.String(), 10 * time.Minute},
		{"other-failed", "failed", other.ID.String(), 10 * time.Minute},
	} {
		deliveries[c.name] = f.one(`
			WITH e AS (INSERT INTO events (id, org_id, type, data, created_at, relayed_at)
			           VALUES (gen_random_uuid(), $1, 'customer.created', '{}', now() - $4::interval, now()) RETURNING id)
			INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, created_at, workflow_started_at)
			SELECT gen_random_uuid(), $1, e.id, $2, $3, CASE WHEN $3 = 'pending' THEN 0 ELSE 2 END, now() - $4::interval, now() FROM e
			RETURNING id::text`, c.sub, c.status, c.age.String())
	}
	var res struct {
		Resent int `json:"resent"`
	}
	if status, raw := f.call("POST", "/api/v1/webhooks/subscriptions/"+sub.ID.String()+"/recover", key,
		fmt.Sprintf(`{"since": %q}`, since.UTC().Format(time.RFC3339)), &res); status != 202 || res.Resent != 2 {
		t.Fatalf("recover: %d %s", status, raw)
	}
	got := map[string]bool{}
	for range 2 {
		d := rc.next()
		got[d.header.Get("X-Service-Delivery-Id")] = true
	}
	if !got[deliveries["failed"]] || !got[deliveries["exhausted"]] {
		t.Fatalf("resent %v, want the failed and the exhausted deliveries since the date", got)
	}
	time.Sleep(time.Second) // nothing else arrives
	if rc.count() != 2 {
		t.Fatalf("%d deliveries arrived, want 2", rc.count())
	}
	f.eventually("both resent deliveries succeeded", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded' AND id = ANY($2::uuid[])`,
			[]string{deliveries["failed"], deliveries["exhausted"]}) == 2
	})
	if f.one(`SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, deliveries["old-failed"]) != "failed" ||
		f.one(`SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, deliveries["other-failed"]) != "failed" {
		t.Fatal("a delivery outside the recovery moved")
	}
	if n := f.count(`SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'subscription.recover' AND detail->>'resent' = '2'`); n != 1 {
		t.Fatalf("%d audit entries for the recovery", n)
	}
}

// A bulk replay of 2,000 failed receipts finishes with every receipt
// applied once, though its worker is stopped in the middle and replaced:
// no receipt is skipped, none is replayed twice.
func TestBulkReplaySurvivesItsWorkerBeingReplaced(t *testing.T) {
	const receipts = 2000
	f := newInbound(t)
	key := f.apiKey()
	_, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	// 2,000 posts that failed (the order did not exist then), each with an
	// invoice of its own: half failed, half unmatched.
	f.one(`WITH ins AS (
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code)
		SELECT id, $1, $2, 'order_invoice', now() - make_interval(secs => 3600 - i), b, length(b), 'inbound/' || id,
		       CASE WHEN i % 2 = 0 THEN 'failed' ELSE 'unmatched' END, CASE WHEN i % 2 = 0 THEN 422 ELSE 202 END
		FROM (SELECT gen_random_uuid() AS id, i,
		             convert_to(format('{"order_ref": "SO-1", "invoice_ref": "BULK-%s", "amount_minor": 1}', i), 'UTF8') AS b
		      FROM generate_series(1, $3) i) s
		RETURNING 1) SELECT count(*)::text FROM ins`, epID, receipts)

	var batch struct {
		ID                                                       string
		Status                                                   string
		Total, Done, Applied, Unchanged, Parked, Failed, Skipped int
	}
	if status, raw := f.call("POST", "/api/v1/inbound/replays", key,
		fmt.Sprintf(`{"endpoint_id": %q, "outcome": "failed,unmatched"}`, epID), &batch); status != 202 || batch.Total != receipts {
		t.Fatalf("bulk replay: %d %s", status, raw)
	}
	progress := func() {
		t.Helper()
		if status, raw := f.call("GET", "/api/v1/inbound/replays/"+batch.ID, key, "", &batch); status != 200 {
			t.Fatalf("progress: %d %s", status, raw)
		}
	}
	f.eventuallyWithin(5*time.Minute, "a part of the batch done", func() bool {
		progress()
		return batch.Done >= 200
	})
	if batch.Status != "running" || batch.Done >= receipts {
		t.Fatalf("the batch is not in the middle: %+v", batch)
	}
	// The worker dies in the middle of a chunk; a new one takes over.
	f.Worker.Stop()
	f.Worker = f.StartWorker()
	f.eventuallyWithin(15*time.Minute, "the batch completed", func() bool {
		progress()
		return batch.Status == "completed"
	})
	if batch.Total != receipts || batch.Done != receipts || batch.Applied != receipts || batch.Unchanged+batch.Parked+batch.Failed+batch.Skipped != 0 {
		t.Fatalf("counts %+v, want all %d applied", batch, receipts)
	}
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND replay_of IS NOT NULL`); n != receipts {
		t.Fatalf("%d replays of %d receipts", n, receipts)
	}
	if n := f.count(`SELECT count(DISTINCT replay_of) FROM inbound_receipts WHERE org_id = $1`); n != receipts {
		t.Fatalf("%d receipts replayed, want each of %d once", n, receipts)
	}
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref LIKE 'BULK-%'`); n != receipts {
		t.Fatalf("%d invoices recorded for %d receipts", n, receipts)
	}
	if n := f.count(`SELECT count(*) FROM replay_batch_items i JOIN inbound_receipts r ON r.id = i.replay_receipt_id
		WHERE i.org_id = $1 AND r.replay_of = i.receipt_id`); n != receipts {
		t.Fatalf("%d batch items name their replay", n)
	}
}
