package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/signature"
)

// standardHeaders signs body with the Standard Webhooks library under
// secret, as a sender using it would, and returns the header pairs.
func standardHeaders(t *testing.T, secret, id, body string, at time.Time) []string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the Standard Webhooks library does not take the secret as issued: %v", err)
	}
	sig, err := wh.Sign(id, at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return []string{standardwebhooks.HeaderWebhookID, id, standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(at.Unix()),
		standardwebhooks.HeaderWebhookSignature, sig}
}

// A signed endpoint takes a post signed by the Standard Webhooks library
// with the endpoint's secret as issued, without X-Service-Signature, and
// refuses one whose body, signature, secret or time is wrong with 401.
func TestInboundPostSignedByTheStandardWebhooksLibrary(t *testing.T) {
	f := newFixture(t)
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	now := time.Now()
	// shapeless passes the signature step and is then refused 400 for its
	// shape: the answer a post that got past the signature gets here.
	status, _, b := f.postInbound(ep.Token, shapeless, standardHeaders(t, *ep.Secret, "msg_1", shapeless, now)...)
	if status != http.StatusBadRequest || strings.Contains(string(b), "signature") {
		t.Fatalf("a post signed by the library: %d %s", status, b)
	}

	good := standardHeaders(t, *ep.Secret, "msg_2", shapeless, now)
	with := func(i int, value string) []string {
		h := append([]string(nil), good...)
		h[i] = value
		return h
	}
	for name, c := range map[string]struct {
		body   string
		header []string
	}{
		"tampered body":   {`{"status": "shipped"}`, good},
		"wrong signature": {shapeless, with(5, "v1,"+strings.Repeat("A", 43)+"=")},
		"id changed":      {shapeless, with(1, "msg_other")},
		"time changed":    {shapeless, with(3, fmt.Sprint(now.Unix()-1))},
		"no timestamp":    {shapeless, []string{good[0], good[1], good[4], good[5]}},
		"another secret":  {shapeless, standardHeaders(t, secrets.NewSigningSecret(), "msg_3", shapeless, now)},
		"stale":           {shapeless, standardHeaders(t, *ep.Secret, "msg_4", shapeless, now.Add(-6*time.Minute))},
		"future":          {shapeless, standardHeaders(t, *ep.Secret, "msg_5", shapeless, now.Add(6*time.Minute))},
	} {
		if status, rh, b := f.postInbound(ep.Token, c.body, c.header...); status != http.StatusUnauthorized || rh.Get("X-Receipt-Id") == "" {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
}

// A Standard Webhooks post sent again is the same post, by its
// webhook-signature (a captured post replayed by a third party) and by its
// webhook-id (the sender's retry, signed anew): both are answered with
// the first answer. The same webhook-id with another body answers 422, and
// an Idempotency-Key header, when there is one, names the post instead.
func TestStandardWebhooksPostSentAgainIsTheSamePost(t *testing.T) {
	f := newFixture(t)
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	now := time.Now()
	first := standardHeaders(t, *ep.Secret, "msg_1", shapeless, now)
	status, h, answer := f.postInbound(ep.Token, shapeless, first...)
	if status != http.StatusBadRequest {
		t.Fatalf("first post: %d %s", status, answer)
	}
	for name, header := range map[string][]string{
		"the same headers": first,
		// Under another Idempotency-Key, by the signature value alone.
		"the same signature": append(append([]string(nil), first...), "Idempotency-Key", "another"),
		// The sender's retry: the same id, a new time, so a new signature.
		"the same id, signed again": standardHeaders(t, *ep.Secret, "msg_1", shapeless, now.Add(-time.Minute)),
	} {
		status, h2, again := f.postInbound(ep.Token, shapeless, header...)
		if status != http.StatusBadRequest || !sameJSON(again, answer) || h2.Get("Idempotent-Replayed") != "true" || h2.Get("X-Receipt-Id") != h.Get("X-Receipt-Id") {
			t.Errorf("%s: %d %s (replayed %q)", name, status, again, h2.Get("Idempotent-Replayed"))
		}
	}
	other := `{"status": "shipped"}`
	status, _, b := f.postInbound(ep.Token, other, standardHeaders(t, *ep.Secret, "msg_1", other, now)...)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(b), "this webhook-id was already used on this endpoint with another body") {
		t.Fatalf("the same webhook-id with another body: %d %s", status, b)
	}
	withKey := append(standardHeaders(t, *ep.Secret, "msg_1", shapeless, now.Add(-2*time.Minute)), "Idempotency-Key", "named")
	if status, h, b := f.postInbound(ep.Token, shapeless, withKey...); status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same webhook-id under an Idempotency-Key: %d %s (replayed %q)", status, b, h.Get("Idempotent-Replayed"))
	}
}

// A replay verifies a Standard Webhooks post again by its kept webhook-*
// headers, with received_at as the clock: a post that verified may be
// replayed; one whose headers were never good at received_at may not.
func TestReplayVerifiesStandardWebhooksHeaders(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	_, h, b := f.postInbound(ep.Token, shapeless, standardHeaders(t, *ep.Secret, "msg_1", shapeless, time.Now())...)
	id, err := uuid.Parse(h.Get("X-Receipt-Id"))
	if err != nil {
		t.Fatalf("no receipt: %s", b)
	}
	kept, err := f.db.GetReceipt(ctx, f.org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{signature.HeaderWebhookID, signature.HeaderWebhookTimestamp, signature.HeaderWebhookSignature} {
		if kept.Headers[name] == "" {
			t.Fatalf("the receipt did not keep %s: %v", name, kept.Headers)
		}
	}
	if err := f.runner().CheckReplay(ctx, f.org.ID, id); err != nil {
		t.Fatalf("a post that verified by Standard Webhooks is refused for replay: %v", err)
	}

	header := map[string]string{}
	stale := standardHeaders(t, *ep.Secret, "msg_2", shapeless, time.Now().Add(-time.Hour))
	for i := 0; i+1 < len(stale); i += 2 {
		header[stale[i]] = stale[i+1]
	}
	never, err := f.db.StoreReceipt(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: time.Now(),
		Headers: header, Body: []byte(shapeless), Size: len(shapeless), BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.runner().CheckReplay(ctx, f.org.ID, never); domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "signature does not verify") {
		t.Fatalf("a receipt whose webhook-signature was never good: %v", err)
	}
}
