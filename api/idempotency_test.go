package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// postInbound posts body to an endpoint's token with the given header
// pairs and returns the status, headers and body.
func (f *fixture) postInbound(token, body string, header ...string) (int, http.Header, []byte) {
	f.t.Helper()
	return f.do(http.MethodPost, "/api/in/"+token, "", strings.NewReader(body), header...)
}

// signedEndpoint makes an endpoint for action that requires a signature.
func (f *fixture) signedEndpoint(t *testing.T, action domain.Action) db.CreatedEndpoint {
	t.Helper()
	ep, err := f.db.CreateEndpoint(context.Background(), f.sealer, db.NewEndpoint{OrgID: f.org.ID, AsEmail: "owner@acme.example",
		Name: "signed " + string(action), Action: action, RequireSignature: true})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// receiptCount counts an endpoint's receipts.
func (f *fixture) receiptCount(t *testing.T, endpointID uuid.UUID) int {
	t.Helper()
	var n int
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2`,
		f.org.ID, endpointID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// sameJSON reports whether two bodies hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// A post without its action's shape is refused 400 and kept as a receipt:
// these tests use it as a first post that gets a stored answer without a
// workflow service.
const shapeless = `{"status": "processing"}`

func TestRepeatedIdempotencyKeyAnswersTheFirstPostsAnswer(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	status, h, first := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "order-7/attempt")
	if status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first post: %d %v %s", status, h, first)
	}
	receipt := h.Get("X-Receipt-Id")
	for range 2 {
		status, h, again := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "order-7/attempt")
		if status != http.StatusBadRequest || !sameJSON(again, first) || h.Get("Idempotent-Replayed") != "true" || h.Get("X-Receipt-Id") != receipt {
			t.Fatalf("repeat: %d %s (replayed %q, receipt %q); want the first answer %s, receipt %s",
				status, again, h.Get("Idempotent-Replayed"), h.Get("X-Receipt-Id"), first, receipt)
		}
	}
	if n := f.receiptCount(t, ep.ID); n != 1 {
		t.Fatalf("%d receipts for one post sent three times, want 1", n)
	}
	// Another key, or none, is another post.
	if status, h, _ := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "order-8"); status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("another key: %d %v", status, h)
	}
	f.postInbound(ep.Token, shapeless)
	if n := f.receiptCount(t, ep.ID); n != 3 {
		t.Fatalf("%d receipts, want 3", n)
	}
}

func TestIdempotencyKeyWithAnotherBodyAnswers422(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	f.postInbound(ep.Token, shapeless, "Idempotency-Key", "k-1")
	status, h, b := f.postInbound(ep.Token, `{"order_ref": "SO-1"}`, "Idempotency-Key", "k-1")
	if status != http.StatusUnprocessableEntity || !strings.Contains(errorBody(t, b), "another body") || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("same key, other body: %d %s", status, b)
	}
	if n := f.receiptCount(t, ep.ID); n != 1 {
		t.Fatalf("%d receipts, want only the first post's", n)
	}
}

func TestMalformedIdempotencyKeyAnswers400(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	for name, values := range map[string][]string{
		"empty":          {""},
		"256 characters": {strings.Repeat("k", 256)},
		"not ASCII":      {"clé"},
		"tab":            {"a\tb"},
		"two values":     {"a", "b"},
	} {
		var header []string
		for _, v := range values {
			header = append(header, "Idempotency-Key", v)
		}
		status, h, b := f.postInbound(ep.Token, `{"order_ref": "SO-1", "status": "processing"}`, header...)
		if status != http.StatusBadRequest || !strings.Contains(errorBody(t, b), "Idempotency-Key") || h.Get("X-Receipt-Id") == "" {
			t.Errorf("%s: %d %s (receipt %q)", name, status, b, h.Get("X-Receipt-Id"))
		}
	}
	// The limits themselves are keys.
	for _, k := range []string{"k", strings.Repeat("~", 255), "a b!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"} {
		if status, _, b := f.postInbound(ep.Token, shapeless, "Idempotency-Key", k); status != http.StatusBadRequest || strings.Contains(errorBody(t, b), "Idempotency-Key") {
			t.Errorf("key %q refused: %d %s", k, status, b)
		}
	}
}

// A first post that is stored and still running has no answer to give: a
// repeat meanwhile answers 409 and stores nothing.
func TestRepeatWhileTheFirstPostHasNoAnswerAnswers409(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	body := `{"order_ref": "SO-1", "status": "processing"}`
	_, first, err := f.db.StorePost(context.Background(), db.NewReceipt{OrgID: f.org.ID, EndpointID: ep.ID, Action: ep.Action,
		ReceivedAt: time.Now(), Body: []byte(body), Size: len(body), BodyComplete: true},
		[]db.PostKey{{Kind: db.PostKeyIdempotency, Value: "running"}})
	if err != nil || first != nil {
		t.Fatalf("storing the running post: %v %v", first, err)
	}
	status, _, b := f.postInbound(ep.Token, body, "Idempotency-Key", "running")
	if status != http.StatusConflict || !strings.Contains(errorBody(t, b), "no answer yet") {
		t.Fatalf("repeat of a running post: %d %s", status, b)
	}
	if n := f.receiptCount(t, ep.ID); n != 1 {
		t.Fatalf("%d receipts, want 1", n)
	}
}

// A first post answered 5xx did not go through: its sender's retry with the
// same key runs as a new post.
func TestRetryOfAPostAnswered5xxRunsAgain(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	body := `{"order_ref": "SO-1", "status": "processing"}`
	status, h1, _ := f.postInbound(ep.Token, body, "Idempotency-Key", "retry-me")
	if status != http.StatusInternalServerError {
		t.Fatalf("first post without a workflow service: %d", status)
	}
	status, h2, _ := f.postInbound(ep.Token, body, "Idempotency-Key", "retry-me")
	if status != http.StatusInternalServerError || h2.Get("Idempotent-Replayed") != "" || h2.Get("X-Receipt-Id") == h1.Get("X-Receipt-Id") {
		t.Fatalf("retry: %d, replayed %q, receipt %q after %q", status, h2.Get("Idempotent-Replayed"), h2.Get("X-Receipt-Id"), h1.Get("X-Receipt-Id"))
	}
	if n := f.receiptCount(t, ep.ID); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
}

// Identical posts sent at once: one is stored and runs; each other one gets
// its answer or, while it has none, 409.
func TestIdenticalPostsAtOnceStoreOneReceipt(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	const posts = 8
	statuses := make([]int, posts)
	replayed := make([]string, posts)
	var wg sync.WaitGroup
	for i := range posts {
		wg.Go(func() {
			var h http.Header
			statuses[i], h, _ = f.postInbound(ep.Token, shapeless, "Idempotency-Key", "at-once")
			replayed[i] = h.Get("Idempotent-Replayed")
		})
	}
	wg.Wait()
	firsts := 0
	for i, s := range statuses {
		switch {
		case s == http.StatusBadRequest && replayed[i] == "":
			firsts++
		case s == http.StatusBadRequest && replayed[i] == "true", s == http.StatusConflict:
		default:
			t.Errorf("post %d: %d (replayed %q)", i, s, replayed[i])
		}
	}
	if n := f.receiptCount(t, ep.ID); n != 1 || firsts != 1 {
		t.Fatalf("%d receipts and %d first answers for %d identical posts, want 1 and 1", n, firsts, posts)
	}
}

// On a signed endpoint the signature value names the post: the captured
// post sent again, even under another Idempotency-Key, is the same post.
func TestSignedPostSentAgainIsTheSamePost(t *testing.T) {
	f := newFixture(t)
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	header := signature.Sign(*ep.Secret, time.Now(), []byte(shapeless))
	status, h, first := f.postInbound(ep.Token, shapeless, signature.Header, header, "Idempotency-Key", "first")
	if status != http.StatusBadRequest {
		t.Fatalf("first post: %d %s", status, first)
	}
	for name, extra := range map[string][]string{"as it was": {"Idempotency-Key", "first"}, "another key": {"Idempotency-Key", "second"}, "no key": nil} {
		status, h2, again := f.postInbound(ep.Token, shapeless, append([]string{signature.Header, header}, extra...)...)
		if status != http.StatusBadRequest || !sameJSON(again, first) || h2.Get("Idempotent-Replayed") != "true" || h2.Get("X-Receipt-Id") != h.Get("X-Receipt-Id") {
			t.Errorf("%s: %d %s (replayed %q)", name, status, again, h2.Get("Idempotent-Replayed"))
		}
	}
	// Signed again (another time, so another value), it is a new post.
	again := signature.Sign(*ep.Secret, time.Now().Add(-time.Minute), []byte(shapeless))
	if status, h, _ := f.postInbound(ep.Token, shapeless, signature.Header, again); status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("signed anew: %d %v", status, h)
	}
	if n := f.receiptCount(t, ep.ID); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
}

// A post refused for its signature claims nothing: its Idempotency-Key does
// not answer a later, signed post, and its answer is never handed out.
func TestPostRefusedForItsSignatureClaimsNoKey(t *testing.T) {
	f := newFixture(t)
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	if status, _, b := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "mine"); status != http.StatusUnauthorized {
		t.Fatalf("unsigned: %d %s", status, b)
	}
	status, h, b := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "mine", signature.Header, signature.Sign(*ep.Secret, time.Now(), []byte(shapeless)))
	if status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("signed post after an unsigned one with its key: %d %s (replayed %q)", status, b, h.Get("Idempotent-Replayed"))
	}
	// ...nor does a signed repeat reach the answer with a wrong signature.
	if status, _, b := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "mine"); status != http.StatusUnauthorized || bytes.Contains(b, []byte("order_ref")) {
		t.Fatalf("unsigned repeat of a signed post's key: %d %s", status, b)
	}
}

// Keys are per endpoint: the same key on another endpoint is another post.
func TestIdempotencyKeysArePerEndpoint(t *testing.T) {
	f := newFixture(t)
	a, b := f.erpEndpoint(t), f.erpEndpoint(t)
	f.postInbound(a.Token, shapeless, "Idempotency-Key", "shared")
	if status, h, _ := f.postInbound(b.Token, shapeless, "Idempotency-Key", "shared"); status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same key on another endpoint: %d (replayed %q)", status, h.Get("Idempotent-Replayed"))
	}
}

// A key older than 24 hours no longer names its post.
func TestIdempotencyKeyExpiresAfter24Hours(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	f.postInbound(ep.Token, shapeless, "Idempotency-Key", "old")
	if _, err := f.db.Pool().Exec(context.Background(), `UPDATE inbound_post_keys SET created_at = now() - interval '24 hours 1 second'
		WHERE org_id = $1 AND endpoint_id = $2`, f.org.ID, ep.ID); err != nil {
		t.Fatal(err)
	}
	if status, h, _ := f.postInbound(ep.Token, shapeless, "Idempotency-Key", "old"); status != http.StatusBadRequest || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a day-old key: %d (replayed %q)", status, h.Get("Idempotent-Replayed"))
	}
	if n := f.receiptCount(t, ep.ID); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
}
