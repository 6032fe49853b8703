package e2e

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// A captured signed post sent again within its five minutes is the same
// post: it is answered with the first answer and changes nothing, though
// here it would otherwise move the delivery back (failed to in_transit).
func TestCapturedSignedPostSentAgainChangesNothing(t *testing.T) {
	f := newInbound(t)
	url, epID, secret := f.endpoint(domain.ActionDeliveryStatus, true)
	captured := `{"delivery_ref": "DN-1", "status": "in_transit"}`
	header := signature.Sign(secret, time.Now(), []byte(captured))
	first := f.post(url, captured, signature.Header, header)
	if first.status != 200 || first.str("outcome") != "applied" {
		t.Fatalf("first post: %d %s", first.status, first.raw)
	}
	if a := f.signedPost(url, secret, `{"delivery_ref": "DN-1", "status": "failed"}`, time.Now()); a.status != 200 {
		t.Fatalf("the carrier's next post: %d %s", a.status, a.raw)
	}
	again := f.post(url, captured, signature.Header, header)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || again.receipt != first.receipt || !sameChanges(t, again.raw, first.raw) {
		t.Fatalf("captured post sent again: %d %s (replayed %q, receipt %s); want the first answer %s",
			again.status, again.raw, again.header.Get("Idempotent-Replayed"), again.receipt, first.raw)
	}
	if got := f.one(`SELECT status FROM deliveries WHERE org_id = $1 AND number = 'DN-1'`); got != "failed" {
		t.Fatalf("delivery %s after the captured post was sent again, want failed", got)
	}
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2`, epID); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'delivery.status_changed'`); n != 2 {
		t.Fatalf("%d delivery.status_changed events, want 2", n)
	}
}

// A sender's retry with the same Idempotency-Key gets the first answer and
// applies nothing again; the key with another body answers 422.
func TestIdempotencyKeyRetryAppliesOnce(t *testing.T) {
	f := newInbound(t)
	url, _, _ := f.endpoint(domain.ActionOrderInvoice, false)
	body := `{"order_ref": "SO-1", "invoice_ref": "INV-1", "amount_minor": 1000}`
	first := f.post(url, body, "Idempotency-Key", "erp-42")
	if first.status != 200 || first.str("outcome") != "applied" {
		t.Fatalf("first post: %d %s", first.status, first.raw)
	}
	again := f.post(url, body, "Idempotency-Key", "erp-42")
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || !sameChanges(t, again.raw, first.raw) {
		t.Fatalf("retry: %d %s", again.status, again.raw)
	}
	if a := f.post(url, strings.Replace(body, "1000", "2000", 1), "Idempotency-Key", "erp-42"); a.status != 422 {
		t.Fatalf("the key with another body: %d %s", a.status, a.raw)
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'order.invoice_recorded'`); n != 1 {
		t.Fatalf("%d order.invoice_recorded events, want 1", n)
	}
}

// A signed endpoint's receipt is replayed only while its stored signature
// verifies with received_at as the clock: one received an hour ago replays
// now, and a post refused 401 never does.
func TestReplayOfASignedPostVerifiesItsStoredSignature(t *testing.T) {
	t.Setenv("COMMERCE_SECRET_KEY", hex.EncodeToString(ServiceKey))
	f := newInbound(t)
	url, _, secret := f.endpoint(domain.ActionERPOrderStatus, true)

	refused := f.post(url, `{"order_ref":"SO-2","status":"cancelled"}`)
	if refused.status != 401 {
		t.Fatalf("unsigned cancellation: %d %s", refused.status, refused.raw)
	}
	code, out, errOut := f.cliRun(append([]string{"receipts", "replay", refused.receipt, "--json"}, f.temporalFlags()...)...)
	if code != 1 || out != "" || !strings.Contains(errOut, "refused for its signature") {
		t.Fatalf("replay of the 401 receipt: exit %d %s %s", code, out, errOut)
	}

	body := `{"order_ref": "SO-LATER", "status": "processing"}`
	parked := f.signedPost(url, secret, body, time.Now())
	if parked.status != 202 || parked.str("outcome") != "parked" {
		t.Fatalf("signed post for an order not there yet: %d %s", parked.status, parked.raw)
	}
	if code, _, errOut := f.cliRun(append([]string{"receipts", "cancel", parked.receipt}, f.temporalFlags()...)...); code != 0 {
		t.Fatalf("receipts cancel: %s", errOut)
	}
	// As if it had been received an hour ago, signed then.
	hourAgo := time.Now().Add(-time.Hour)
	f.one(`UPDATE inbound_receipts SET received_at = $3, headers = jsonb_set(headers, '{X-Service-Signature}', to_jsonb($4::text))
		WHERE org_id = $1 AND id = $2 RETURNING 'ok'`, parked.receipt, hourAgo, signature.Sign(secret, hourAgo, []byte(body)))
	f.seed(`{"orders": [{"number": "SO-LATER", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	code, out, errOut = f.cliRun(append([]string{"receipts", "replay", parked.receipt, "--json"}, f.temporalFlags()...)...)
	var replay struct {
		ReplayOf string `json:"replay_of"`
		Outcome  string `json:"outcome"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &replay) != nil || replay.ReplayOf != parked.receipt || replay.Outcome != "applied" {
		t.Fatalf("replay of a signed post received an hour ago: exit %d %s %s", code, out, errOut)
	}
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-LATER'`) != "in_progress" {
		t.Fatal("the replay did not move the order")
	}
	// Its stored signature no longer good at received_at (tampered with):
	// refused, with the reason.
	f.one(`UPDATE inbound_receipts SET received_at = received_at - interval '1 hour' WHERE org_id = $1 AND id = $2 RETURNING 'ok'`, parked.receipt)
	code, _, errOut = f.cliRun(append([]string{"receipts", "replay", parked.receipt}, f.temporalFlags()...)...)
	if code != 1 || !strings.Contains(errOut, "signature does not verify") {
		t.Fatalf("replay of a receipt whose signature does not verify: exit %d %s", code, errOut)
	}
	if f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-2'`) != "confirmed" {
		t.Fatal("the order named by the refused cancellation moved")
	}
}
