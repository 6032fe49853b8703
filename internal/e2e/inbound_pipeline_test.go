package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

func TestInboundPipelineRefusesInOrder(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	good := `{"order_ref": "SO-1", "status": "processing"}`

	// 404: an unknown token, and a token of the wrong shape.
	if a := f.post(f.srv.URL+"/api/in/in_"+strings.Repeat("x", 43), good); a.status != 404 || a.str("error") != "Not found" {
		t.Fatalf("unknown token: %d %s", a.status, a.raw)
	}
	if a := f.post(f.srv.URL+"/api/in/nonsense", good); a.status != 404 {
		t.Fatalf("malformed token: %d", a.status)
	}
	// 400: not JSON, not the action's shape (naming the field).
	for body, want := range map[string]string{
		`not json`:                                     "JSON",
		`{"status": "processing"}`:                     "order_ref or quote_ref",
		`{"order_ref": "SO-1", "status": 7}`:           "status",
		`{"order_ref": "SO-1", "status": "x", "z": 1}`: `unknown field "z"`,
	} {
		a := f.post(url, body)
		if a.status != 400 || !strings.Contains(a.str("error"), want) || a.receipt == "" {
			t.Errorf("%s: %d %s (receipt %q)", body, a.status, a.raw, a.receipt)
		}
	}
	// 413: a body over 1 MB, read through a limit.
	big := `{"order_ref": "SO-1", "status": "` + strings.Repeat("x", 1<<20) + `"}`
	if a := f.post(url, big); a.status != 413 {
		t.Fatalf("body over 1 MB: %d %s", a.status, a.raw)
	} else if r := f.receipt(a.receipt); r.BodyComplete() || r.Outcome != domain.OutcomeFailed || *r.StatusCode != 413 {
		t.Fatalf("413 receipt: %+v", r)
	}
	// 409: a paused endpoint refuses, and keeps a receipt.
	if _, err := f.DB.SetEndpointState(context.Background(), f.org.ID, mustID(t, epID), domain.EndpointPaused); err != nil {
		t.Fatal(err)
	}
	if a := f.post(url, good); a.status != 409 || a.receipt == "" {
		t.Fatalf("paused: %d %s", a.status, a.raw)
	}
	if _, err := f.DB.SetEndpointState(context.Background(), f.org.ID, mustID(t, epID), domain.EndpointActive); err != nil {
		t.Fatal(err)
	}
	if a := f.post(url, good); a.status != 200 || a.str("outcome") != "applied" {
		t.Fatalf("resumed: %d %s", a.status, a.raw)
	}
	// Deleted: the token is destroyed, later posts answer 404.
	if _, err := f.DB.SetEndpointState(context.Background(), f.org.ID, mustID(t, epID), domain.EndpointDeleted); err != nil {
		t.Fatal(err)
	}
	if a := f.post(url, good); a.status != 404 {
		t.Fatalf("deleted: %d %s", a.status, a.raw)
	}
	if n := f.count(`SELECT count(*) FROM inbound_endpoints WHERE org_id = $1 AND id = $2 AND token_hash IS NULL AND state = 'deleted'`, epID); n != 1 {
		t.Fatal("the deleted endpoint still holds its token hash")
	}
	// Every post from the 400s on is a receipt; 404s are not.
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2`, epID); n != 7 {
		t.Fatalf("%d receipts, want 7 (4 x 400, 413, 409, 200)", n)
	}
	// Each refusal tells the organisation's webhooks.
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type = 'inbound.receipt.failed' AND data->>'endpoint_id' = $2`, epID); n != 6 {
		t.Fatalf("%d inbound.receipt.failed events, want 6", n)
	}
}

func TestInboundSignatures(t *testing.T) {
	f := newInbound(t)
	url, _, secret := f.endpoint(domain.ActionERPOrderStatus, true)
	body := `{"order_ref": "SO-1", "status": "picking"}`
	now := time.Now()
	for name, a := range map[string]answer{
		"missing":      f.post(url, body),
		"wrong secret": f.signedPost(url, "whsec_wrong", body, now),
		"stale":        f.signedPost(url, secret, body, now.Add(-6*time.Minute)),
		"future":       f.signedPost(url, secret, body, now.Add(6*time.Minute)),
		"other body":   f.post(url, body, "X-Service-Signature", "t="+fmt.Sprint(now.Unix())+",v1="+strings.Repeat("ab", 32)),
	} {
		if a.status != 401 || a.receipt == "" {
			t.Errorf("%s: %d %s", name, a.status, a.raw)
		}
	}
	if a := f.signedPost(url, secret, body, now.Add(-4*time.Minute)); a.status != 200 {
		t.Fatalf("a signature four minutes old: %d %s", a.status, a.raw)
	}
	// During a rotation the sender signs with the old and the new secret.
	ts := now.Unix()
	rotated := fmt.Sprintf("t=%d,v1=%s,v1=%s", ts, signature.Compute("whsec_old", ts, []byte(body)), signature.Compute(secret, ts, []byte(body)))
	if a := f.post(url, body, signature.Header, rotated); a.status != 200 {
		t.Fatalf("two v1 values, one right: %d %s", a.status, a.raw)
	}
	// The secret is sealed at rest.
	if n := f.count(`SELECT count(*) FROM inbound_endpoints WHERE org_id = $1 AND position($2::bytea IN secret_sealed) > 0`, []byte(secret)); n != 0 {
		t.Fatal("the signing secret is stored in the clear")
	}
}

// A signed endpoint takes a post signed with the Standard Webhooks library
// under the endpoint's secret as issued, without X-Service-Signature, and
// applies it; the same post with its body changed is refused 401.
func TestInboundAcceptsAPostSignedByTheStandardWebhooksLibrary(t *testing.T) {
	f := newInbound(t)
	url, _, secret := f.endpoint(domain.ActionERPOrderStatus, true)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the Standard Webhooks library does not take the secret as issued: %v", err)
	}
	body := `{"order_ref": "SO-1", "status": "picking"}`
	now := time.Now()
	sig, err := wh.Sign("msg_1", now, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	headers := []string{standardwebhooks.HeaderWebhookID, "msg_1", standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(now.Unix()),
		standardwebhooks.HeaderWebhookSignature, sig}
	tampered := `{"order_ref": "SO-1", "status": "cancelled"}`
	if a := f.post(url, tampered, headers...); a.status != 401 || a.receipt == "" {
		t.Fatalf("tampered body: %d %s", a.status, a.raw)
	}
	if a := f.post(url, body, headers...); a.status != 200 || a.str("outcome") != "applied" {
		t.Fatalf("a post signed by the library: %d %s", a.status, a.raw)
	}
	if s := f.one(`SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-1'`); s != "in_progress" {
		t.Fatalf("order SO-1 is %s after the signed post", s)
	}
}

func TestInboundRateLimitIs120PerEndpointRefilling2PerSecond(t *testing.T) {
	f := newInbound(t)
	url, epID, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	other, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	start := time.Now()
	allowed, limited := 0, 0
	for range 140 {
		a := f.post(url, `not json`) // refused at once with 400: still counted
		switch a.status {
		case 400:
			allowed++
		case 429:
			limited++
			if a.str("error") != "Rate limited" || a.header.Get("Retry-After") == "" {
				t.Fatalf("429: %s %v", a.raw, a.header)
			}
		default:
			t.Fatalf("status %d", a.status)
		}
	}
	refill := int(time.Since(start) / (500 * time.Millisecond))
	if allowed < 120 || allowed > 120+refill {
		t.Fatalf("%d posts allowed in %v, want 120 plus %d refilled", allowed, time.Since(start), refill)
	}
	// 429s are counted on the endpoint, not kept as receipts.
	if n := f.count(`SELECT rate_limited_count::int FROM inbound_endpoints WHERE org_id = $1 AND id = $2`, epID); n != limited {
		t.Fatalf("rate_limited_count %d, want %d", n, limited)
	}
	if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2`, epID); n != allowed {
		t.Fatalf("%d receipts, want %d", n, allowed)
	}
	if a := f.post(other, `not json`); a.status != 400 {
		t.Fatalf("another endpoint is limited too: %d", a.status)
	}
}

func TestInboundCountLimits(t *testing.T) {
	f := newInbound(t)
	customers, _, _ := f.endpoint(domain.ActionUpsertCustomers, false)
	products, _, _ := f.endpoint(domain.ActionUpsertProducts, false)
	var c, p []string
	for i := range 501 {
		c = append(c, fmt.Sprintf(`{"company": "C%d"}`, i))
	}
	for i := range 1001 {
		p = append(p, fmt.Sprintf(`{"sku": "S%d", "title": "t"}`, i))
	}
	if a := f.post(customers, `{"customers": [`+strings.Join(c, ",")+`]}`); a.status != 413 {
		t.Fatalf("501 customers: %d %s", a.status, a.raw)
	}
	if a := f.post(products, `{"products": [`+strings.Join(p, ",")+`]}`); a.status != 413 {
		t.Fatalf("1001 products: %d %s", a.status, a.raw)
	}
	if a := f.post(customers, `{"customers": [`+strings.Join(c[:500], ",")+`]}`); a.status != 200 || a.fields["created"] != 500.0 {
		t.Fatalf("500 customers: %d %.300s", a.status, a.raw)
	}
	if a := f.post(products, `{"products": [`+strings.Join(p[:1000], ",")+`]}`); a.status != 200 || a.fields["created"] != 1000.0 {
		t.Fatalf("1000 products: %d %.300s", a.status, a.raw)
	}
}
