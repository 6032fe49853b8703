package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A bulk resend resends exactly the failed and exhausted deliveries its
// filter selects, through their delivery workflows; once delivered, each
// reads resolved by the bulk resend (naming it), its report counts them
// delivered, and a single resend of another failed delivery resolves that
// one by resend.
func TestBulkResendDeliversTheFailedAndResolvesThem(t *testing.T) {
	f := newInbound(t)
	key := f.apiKey()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	sub := rc.subscribe(f)
	other := newReceiver(t, nil).subscribe(f)
	deliveries := map[string]string{}
	for _, c := range []struct{ name, status, sub string }{
		{"failed", "failed", sub.ID.String()},
		{"exhausted", "exhausted", sub.ID.String()},
		{"succeeded", "succeeded", sub.ID.String()},
		{"other-failed", "failed", other.ID.String()},
	} {
		deliveries[c.name] = f.one(`
			WITH e AS (INSERT INTO events (id, org_id, type, data, created_at, relayed_at)
			           VALUES (gen_random_uuid(), $1, 'customer.created', '{}', now() - interval '10 minutes', now()) RETURNING id)
			INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, created_at, workflow_started_at)
			SELECT gen_random_uuid(), $1, e.id, $2, $3, 2, now() - interval '10 minutes', now() FROM e
			RETURNING id::text`, c.sub, c.status)
	}
	var batch struct {
		ID        string `json:"id"`
		Total     int    `json:"total"`
		Resent    int    `json:"resent"`
		Delivered int    `json:"delivered"`
	}
	if status, raw := f.call("POST", "/api/v1/webhooks/resends", key, fmt.Sprintf(`{"subscription_id": %q}`, sub.ID), &batch); status != 202 ||
		batch.Total != 2 || batch.Resent != 2 {
		t.Fatalf("bulk resend: %d %s, want 202 resending 2", status, raw)
	}
	got := map[string]bool{}
	for range 2 {
		got[rc.next().header.Get("X-Service-Delivery-Id")] = true
	}
	if !got[deliveries["failed"]] || !got[deliveries["exhausted"]] {
		t.Fatalf("resent %v, want the failed and the exhausted deliveries", got)
	}
	f.eventually("both resent deliveries resolved by the bulk resend", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded' AND resolved_by = 'bulk_resend'
			AND resend_batch = $3 AND id = ANY($2::uuid[])`, []string{deliveries["failed"], deliveries["exhausted"]}, batch.ID) == 2
	})
	var delivery struct {
		Resolution *struct {
			By      string `json:"by"`
			BatchID string `json:"batch_id"`
		} `json:"resolution"`
	}
	if status, raw := f.call("GET", "/api/v1/webhooks/deliveries/"+deliveries["exhausted"], key, "", &delivery); status != 200 ||
		delivery.Resolution == nil || delivery.Resolution.By != "bulk_resend" || delivery.Resolution.BatchID != batch.ID {
		t.Fatalf("the exhausted delivery after the bulk resend: %d %s", status, raw)
	}
	if status, raw := f.call("GET", "/api/v1/webhooks/resends/"+batch.ID, key, "", &batch); status != 200 || batch.Delivered != 2 {
		t.Fatalf("the bulk resend's report: %d %s, want 2 delivered", status, raw)
	}
	if f.one(`SELECT status FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, deliveries["other-failed"]) != "failed" {
		t.Fatal("a delivery of another subscription moved")
	}

	if status, raw := f.call("POST", "/api/v1/webhooks/deliveries/"+deliveries["other-failed"]+"/resend", key, "", nil); status != 202 {
		t.Fatalf("resend: %d %s", status, raw)
	}
	f.eventually("the resent delivery resolved by its resend", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND id = $2 AND status = 'succeeded' AND resolved_by = 'resend'`,
			deliveries["other-failed"]) == 1
	})
}

// In the console, through Temporal: from the failed deliveries list, the
// bulk resend form shows what the filters select, Start asks, and
// confirming resends them; the report counts the delivery resent, then
// delivered, and the delivery's page says the bulk resend resolved it,
// linking the report.
func TestBulkResendInTheConsole(t *testing.T) {
	f := newInbound(t)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	sub := rc.subscribe(f)
	delivery := f.one(`
		WITH e AS (INSERT INTO events (id, org_id, type, data, created_at, relayed_at)
		           VALUES (gen_random_uuid(), $1, 'customer.created', '{}', now() - interval '10 minutes', now()) RETURNING id)
		INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, created_at, workflow_started_at)
		SELECT gen_random_uuid(), $1, e.id, $2, 'exhausted', 5, now() - interval '10 minutes', now() FROM e
		RETURNING id::text`, sub.ID.String())
	b := newBrowser(t, f.srv.URL)()
	f.signIn(b, "owner@acme.example")
	if status := b.Open("/console/deliveries?status=exhausted"); status != 200 {
		t.Fatalf("deliveries: %d", status)
	}
	if status := b.Click("#resend-link"); status != 200 || b.Text("#selection-count") != "1" {
		t.Fatalf("the bulk resend form: %d, selecting %q", status, b.Text("#selection-count"))
	}
	if status := b.Click("#start-resend"); status != 200 {
		t.Fatalf("Start: %d", status)
	}
	if status := b.Click("#confirm"); status != 200 || b.Text("#resend-resent") != "1" {
		t.Fatalf("confirming: %d, resent %q", status, b.Text("#resend-resent"))
	}
	var report string
	b.Eval("the report's address", `location.pathname`, &report)
	f.eventually("the resent delivery delivered", func() bool {
		return f.count(`SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND id = $2 AND resolved_by = 'bulk_resend'`, delivery) == 1
	})
	if status := b.Open(report); status != 200 || b.Text("#resend-delivered") != "1" {
		t.Fatalf("the report after delivery: %d, delivered %q", status, b.Text("#resend-delivered"))
	}
	if status := b.Open("/console/deliveries/" + delivery); status != 200 || !strings.Contains(b.Text("#resolution"), "the bulk resend") ||
		!b.Present(`#resolved-by[href="`+report+`"]`) {
		t.Fatalf("the delivery's page: %d, resolution %q", status, b.Text("#resolution"))
	}
}
