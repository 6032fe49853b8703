package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/client"
	"github.com/commerce-integration/commerce/domain"
)

// The generated Go client (client/, `go generate ./client`) calls every
// management route against a running service with a worker.
func TestGeneratedClientCallsEveryManagementRoute(t *testing.T) {
	f := newInbound(t)
	key := f.apiKey()
	ctx := context.Background()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok": true}`) })
	f.Outbox()
	c, err := client.NewClientWithResponses(f.srv.URL, client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, status int, body []byte, want int) {
		t.Helper()
		if status != want {
			t.Fatalf("%s: %d %s, want %d", what, status, body, want)
		}
	}
	events := []string{"order.status_changed"}
	subscriptionKey := "add-hooks-1" // a write through the client with an Idempotency-Key
	created, err := c.CreateWebhookSubscriptionWithResponse(ctx, &client.CreateWebhookSubscriptionParams{IdempotencyKey: &subscriptionKey}, client.CreateWebhookSubscriptionJSONRequestBody{Url: rc.srv.URL + "/hooks", Events: &events})
	if err != nil || created.JSON201 == nil || created.JSON201.Secret == nil {
		t.Fatalf("create subscription: %v %s", err, created.Body)
	}
	rc.mu.Lock()
	rc.secret = *created.JSON201.Secret
	rc.mu.Unlock()
	sub := created.JSON201.Id.String()

	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	parked := f.post(url, `{"order_ref": "SO-LATER", "status": "processing"}`)
	applied := f.post(url, `{"order_ref": "SO-1", "status": "processing"}`)
	if parked.status != 202 || applied.status != 200 {
		t.Fatalf("posts: %d %s, %d %s", parked.status, parked.raw, applied.status, applied.raw)
	}
	rc.next()

	eps, err := c.ListInboundEndpointsWithResponse(ctx, &client.ListInboundEndpointsParams{})
	if err != nil || eps.JSON200 == nil || len(eps.JSON200.Endpoints) != 1 || eps.JSON200.Endpoints[0].Counts["applied"] != 1 {
		t.Fatalf("endpoints: %v %s", err, eps.Body)
	}
	outcome := "parked"
	list, err := c.ListInboundReceiptsWithResponse(ctx, &client.ListInboundReceiptsParams{Outcome: &outcome})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Receipts) != 1 || list.JSON200.Receipts[0].Id.String() != parked.receipt {
		t.Fatalf("receipts: %v %s", err, list.Body)
	}
	got, err := c.GetInboundReceiptWithResponse(ctx, applied.receipt)
	if err != nil || got.JSON200 == nil || len(got.JSON200.Trace.Events) != 1 {
		t.Fatalf("receipt: %v %s", err, got.Body)
	}
	dry := true
	replay, err := c.ReplayInboundReceiptWithResponse(ctx, applied.receipt, nil, client.ReplayInboundReceiptJSONRequestBody{DryRun: &dry})
	if err != nil || replay.JSON200 == nil || !replay.JSON200.DryRun || len(replay.JSON200.Changes) != 0 {
		t.Fatalf("dry run of an applied receipt: %v %s", err, replay.Body)
	}
	replay, err = c.ReplayInboundReceiptWithResponse(ctx, parked.receipt, nil, client.ReplayInboundReceiptJSONRequestBody{})
	if err != nil {
		t.Fatal(err)
	}
	check("replay of a receipt still parked, whose original is running", replay.StatusCode(), replay.Body, 200)
	replay, err = c.ReplayInboundReceiptWithResponse(ctx, parked.receipt, nil, client.ReplayInboundReceiptJSONRequestBody{})
	if err != nil {
		t.Fatal(err)
	}
	check("replay while its replay is parked", replay.StatusCode(), replay.Body, 409)
	cancel, err := c.CancelInboundReceiptWithResponse(ctx, parked.receipt, nil)
	if err != nil || cancel.JSON200 == nil || cancel.JSON200.Outcome != "cancelled" {
		t.Fatalf("cancel: %v %s", err, cancel.Body)
	}

	bulk, err := c.StartBulkReplayWithResponse(ctx, nil, client.StartBulkReplayJSONRequestBody{Outcome: "cancelled", DryRun: &dry})
	if err != nil || bulk.JSON202 == nil || bulk.JSON202.Total != 1 {
		t.Fatalf("bulk replay: %v %s", err, bulk.Body)
	}
	batch := bulk.JSON202.Id.String()
	f.eventually("the dry-run batch completing", func() bool {
		b, err := c.GetBulkReplayWithResponse(ctx, batch)
		return err == nil && b.JSON200 != nil && b.JSON200.Status == "completed" && b.JSON200.Done == 1
	})
	stop, err := c.StopBulkReplayWithResponse(ctx, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("stop a completed batch", stop.StatusCode(), stop.Body, 409)

	subs, err := c.ListWebhookSubscriptionsWithResponse(ctx, &client.ListWebhookSubscriptionsParams{})
	if err != nil || subs.JSON200 == nil || len(subs.JSON200.Subscriptions) != 1 {
		t.Fatalf("subscriptions: %v %s", err, subs.Body)
	}
	one, err := c.GetWebhookSubscriptionWithResponse(ctx, sub)
	if err != nil || one.JSON200 == nil {
		t.Fatalf("subscription: %v %s", err, one.Body)
	}
	all := []string{}
	patched, err := c.UpdateWebhookSubscriptionWithResponse(ctx, sub, client.UpdateWebhookSubscriptionJSONRequestBody{Events: &all})
	if err != nil || patched.JSON200 == nil || len(patched.JSON200.Events) != 0 {
		t.Fatalf("patch: %v %s", err, patched.Body)
	}
	rotated, err := c.RotateWebhookSecretWithResponse(ctx, sub, nil)
	if err != nil || rotated.JSON200 == nil || rotated.JSON200.Secret == nil || *rotated.JSON200.Secret == *created.JSON201.Secret {
		t.Fatalf("rotate: %v %s", err, rotated.Body)
	}
	deliveries, err := c.ListWebhookDeliveriesWithResponse(ctx, &client.ListWebhookDeliveriesParams{})
	if err != nil || deliveries.JSON200 == nil || len(deliveries.JSON200.Deliveries) != 1 {
		t.Fatalf("deliveries: %v %s", err, deliveries.Body)
	}
	delivery := deliveries.JSON200.Deliveries[0].Id.String()
	detail, err := c.GetWebhookDeliveryWithResponse(ctx, delivery)
	if err != nil || detail.JSON200 == nil || detail.JSON200.AttemptLog == nil || len(*detail.JSON200.AttemptLog) != 1 {
		t.Fatalf("delivery: %v %s", err, detail.Body)
	}
	resend, err := c.ResendWebhookDeliveryWithResponse(ctx, delivery, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("resend", resend.StatusCode(), resend.Body, 202)
	// Resent within the overlap: signed with both secrets.
	d := rc.next()
	if d.header.Get("X-Service-Attempt") != "2" || len(splitV1(d.header.Get("X-Service-Signature"))) != 2 {
		t.Fatalf("resent delivery: %v", d.header)
	}
	recovered, err := c.RecoverWebhookDeliveriesWithResponse(ctx, sub, nil, client.RecoverWebhookDeliveriesJSONRequestBody{Since: time.Now().Add(-time.Hour)})
	if err != nil || recovered.JSON202 == nil || recovered.JSON202.Resent != 0 {
		t.Fatalf("recover: %v %s", err, recovered.Body)
	}
	evs, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{})
	if err != nil || evs.JSON200 == nil || len(evs.JSON200.Events) == 0 {
		t.Fatalf("events: %v %s", err, evs.Body)
	}
	ev, err := c.GetEventWithResponse(ctx, evs.JSON200.Events[0].Id.String())
	if err != nil || ev.JSON200 == nil {
		t.Fatalf("event: %v %s", err, ev.Body)
	}
	deleted, err := c.DeleteWebhookSubscriptionWithResponse(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	check("delete", deleted.StatusCode(), deleted.Body, 204)
	if n := f.count(`SELECT count(*) FROM audit_log WHERE org_id = $1`); n != 9 {
		t.Fatalf("%d audit entries, want one per write (9)", n)
	}
}

func splitV1(h string) []string {
	var out []string
	for p := range strings.SplitSeq(h, ",") {
		if strings.HasPrefix(p, "v1=") {
			out = append(out, p)
		}
	}
	return out
}
