package integrations_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/signature"
)

// The senders' schemes of the tests: GitHub's, Shopify's, and one that
// signs a timestamp.
var (
	githubScheme  = domain.HMACConfig{Header: "X-Hub-Signature-256", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}
	shopifyScheme = domain.HMACConfig{Header: "X-Shopify-Hmac-Sha256", Algorithm: "sha256", Encoding: "base64"}
	stampedScheme = domain.HMACConfig{Header: "X-Signature", Algorithm: "sha512", Encoding: "hex", TimestampHeader: "X-Signature-Timestamp",
		ToleranceSeconds: 60}
)

// verifying is an endpoint set to verify its sender by kind, with the
// secret the service made for it ("" for none).
type verifying struct {
	db.CreatedEndpoint
	secret string
}

func (f *fixture) verifying(kind domain.Verification, cfg domain.VerificationConfig) verifying {
	f.t.Helper()
	ep := f.endpoint(false)
	set, err := f.service.SetEndpointVerification(context.Background(), integrations.OperatorActor("test"), f.org, ep.ID,
		db.NewVerification{Kind: kind, Config: cfg})
	if err != nil {
		f.t.Fatal(err)
	}
	v := verifying{CreatedEndpoint: ep}
	if set.Secret != nil {
		v.secret = *set.Secret
	}
	return v
}

// signedBy signs body as a sender of the scheme does, at t, and returns
// the headers as name/value pairs.
func signedBy(t *testing.T, scheme domain.HMACConfig, secret, body string, at time.Time) []string {
	t.Helper()
	h, err := signature.HMAC{Header: scheme.Header, Algorithm: scheme.Algorithm, Encoding: scheme.Encoding, Prefix: scheme.Prefix,
		TimestampHeader: scheme.TimestampHeader}.Sign(secret, at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for k, v := range h {
		pairs = append(pairs, k, v)
	}
	return pairs
}

// only is the pair of name among header pairs.
func only(pairs []string, name string) []string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == name {
			return pairs[i : i+2]
		}
	}
	return nil
}

func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// An hmac endpoint takes a post its sender signed by its own scheme
// (GitHub's hex after "sha256=", Shopify's base64) and refuses 401 one
// whose signature is missing, wrong, or signed too long ago, keeping it as
// a receipt refused at the signature step, as the service's signature is.
func TestHMACEndpointVerifiesTheSendersOwnSignature(t *testing.T) {
	f := newFixture(t)
	gh := f.verifying(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &githubScheme})
	shop := f.verifying(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &shopifyScheme})
	stamped := f.verifying(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &stampedScheme})
	if !strings.HasPrefix(gh.secret, "hmac_") || gh.secret == shop.secret {
		t.Fatalf("secrets %q and %q: want a new hmac_ secret for each endpoint", gh.secret, shop.secret)
	}
	now := time.Now()
	cases := []struct {
		name    string
		ep      verifying
		headers []string
		stage   domain.IntakeStage
		message string
	}{
		{"GitHub's scheme", gh, signedBy(t, githubScheme, gh.secret, good, now), domain.StageStart, ""},
		{"Shopify's scheme", shop, signedBy(t, shopifyScheme, shop.secret, good, now), domain.StageStart, ""},
		{"a signed timestamp", stamped, signedBy(t, stampedScheme, stamped.secret, good, now.Add(-50*time.Second)), domain.StageStart, ""},
		{"no signature", gh, nil, domain.StageSignature, "X-Hub-Signature-256: signature header is missing"},
		{"another secret", gh, signedBy(t, githubScheme, "hmac_other", good, now), domain.StageSignature, "signature does not match"},
		{"another endpoint's secret", shop, signedBy(t, shopifyScheme, gh.secret, good, now), domain.StageSignature, "signature does not match"},
		{"another body", gh, signedBy(t, githubScheme, gh.secret, `{"order_ref": "SO-2", "status": "processing"}`, now),
			domain.StageSignature, "signature does not match"},
		{"the service's signature", gh, []string{signature.Header, signature.Sign(gh.secret, now, []byte(good))}, domain.StageSignature,
			"missing"},
		{"a stale timestamp", stamped, signedBy(t, stampedScheme, stamped.secret, good, now.Add(-2*time.Minute)), domain.StageSignature,
			"X-Signature-Timestamp: signature timestamp is outside the tolerance"},
		{"a timestamp from the future", stamped, signedBy(t, stampedScheme, stamped.secret, good, now.Add(2*time.Minute)),
			domain.StageSignature, "outside the tolerance"},
		{"no timestamp", stamped, only(signedBy(t, stampedScheme, stamped.secret, good, now), stampedScheme.Header), domain.StageSignature,
			"X-Signature-Timestamp must carry the time it was signed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.receive(c.ep.Token, good, c.headers...)
			if a.Stage != c.stage || !strings.Contains(a.Error, c.message) || a.ReceiptID == uuid.Nil {
				t.Fatalf("answer = stage %s, %d %q, receipt %s; want stage %s saying %q, kept", a.Stage, a.Status, a.Error, a.ReceiptID,
					c.stage, c.message)
			}
			if c.stage == domain.StageSignature && (a.Status != http.StatusUnauthorized || a.Challenge != "") {
				t.Fatalf("refusal = %d, challenge %q; want 401 without one", a.Status, a.Challenge)
			}
			if r := f.receipt(a.ReceiptID); r.Stage != c.stage {
				t.Fatalf("receipt records stage %s, want %s", r.Stage, c.stage)
			}
		})
	}
}

// The signature value that verified a sender's post names it for the
// sender's retries: the same signed post again is answered with the first
// post's answer and runs nothing, and is not kept again.
func TestHMACEndpointAnswersASendersRetryBySignature(t *testing.T) {
	f := newFixture(t)
	for _, scheme := range []domain.HMACConfig{githubScheme, stampedScheme} {
		ep := f.verifying(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &scheme})
		shapeless := `{"status": "processing"}`
		signed := signedBy(t, scheme, ep.secret, shapeless, time.Now())
		first := f.receive(ep.Token, shapeless, signed...)
		again := f.receive(ep.Token, shapeless, signed...)
		if first.Stage != domain.StageShape || first.ReceiptID == uuid.Nil {
			t.Fatalf("%s: first post = stage %s, %d %q; want refused for its shape, kept", scheme.Header, first.Stage, first.Status, first.Error)
		}
		if !again.Replayed || again.Stage != domain.StageSenderRetry || again.ReceiptID != first.ReceiptID || again.Status != first.Status {
			t.Fatalf("%s: the same signed post again = replayed %v, stage %s, %d, receipt %s; want the first answer of %s",
				scheme.Header, again.Replayed, again.Stage, again.Status, again.ReceiptID, first.ReceiptID)
		}
		if n := f.receipts(ep.ID); n != 1 {
			t.Fatalf("%s: receipts = %d, want the first post's only", scheme.Header, n)
		}
	}
}

// A basic endpoint takes a post with its username and the password the
// service made, and refuses 401, with a Basic challenge, one without or
// with wrong credentials; a none endpoint takes any post; a service
// endpoint verifies as before, with the signing secret it was made with
// even after verifying by another kind for a while.
func TestBasicNoneAndServiceEndpoints(t *testing.T) {
	f := newFixture(t)
	basic := f.verifying(domain.VerifyBasic, domain.VerificationConfig{Username: "erp"})
	if !strings.HasPrefix(basic.secret, "pw_") {
		t.Fatalf("password %q, want a new pw_ password", basic.secret)
	}
	for _, c := range []struct {
		name, authorization string
		ok                  bool
	}{
		{"the right credentials", basicAuth("erp", basic.secret), true},
		{"the scheme in lower case", "basic " + strings.TrimPrefix(basicAuth("erp", basic.secret), "Basic "), true},
		{"none", "", false},
		{"a wrong password", basicAuth("erp", basic.secret+"x"), false},
		{"a wrong username", basicAuth("ERP", basic.secret), false},
		{"a bearer token", "Bearer " + basic.secret, false},
		{"not base64", "Basic %%%", false},
	} {
		var headers []string
		if c.authorization != "" {
			headers = []string{"Authorization", c.authorization}
		}
		a := f.receive(basic.Token, good, headers...)
		if c.ok && a.Stage != domain.StageStart {
			t.Errorf("%s: stage %s, %d %q; want it taken", c.name, a.Stage, a.Status, a.Error)
		}
		if !c.ok && (a.Stage != domain.StageSignature || a.Status != 401 || !strings.HasPrefix(a.Error, "HTTP Basic credentials required") ||
			!strings.HasPrefix(a.Challenge, "Basic ")) {
			t.Errorf("%s: stage %s, %d %q, challenge %q; want 401 with a Basic challenge", c.name, a.Stage, a.Status, a.Error, a.Challenge)
		}
		if a.ReceiptID != uuid.Nil {
			if r := f.receipt(a.ReceiptID); r.Headers["Authorization"] != "" || strings.Contains(strings.Join(mapValues(r.Headers), " "), basic.secret) {
				t.Errorf("%s: the receipt keeps the credentials: %v", c.name, r.Headers)
			}
		}
	}

	none := f.verifying(domain.VerifyNone, domain.VerificationConfig{})
	if a := f.receive(none.Token, good); a.Stage != domain.StageStart {
		t.Fatalf("none: stage %s, %d %q; want it taken", a.Stage, a.Status, a.Error)
	}

	signed := f.endpoint(true)
	set := func(kind domain.Verification, cfg domain.VerificationConfig) {
		t.Helper()
		if _, err := f.service.SetEndpointVerification(context.Background(), integrations.OperatorActor("test"), f.org, signed.ID,
			db.NewVerification{Kind: kind, Config: cfg}); err != nil {
			t.Fatal(err)
		}
	}
	set(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &githubScheme})
	set(domain.VerifyService, domain.VerificationConfig{})
	if a := f.receive(signed.Token, good); a.Stage != domain.StageSignature || a.Status != 401 {
		t.Fatalf("service, unsigned: stage %s, %d; want 401", a.Stage, a.Status)
	}
	sig := []string{signature.Header, signature.Sign(*signed.Secret, time.Now(), []byte(good))}
	if a := f.receive(signed.Token, good, sig...); a.Stage != domain.StageStart {
		t.Fatalf("service, signed with the secret it was made with: stage %s, %d %q", a.Stage, a.Status, a.Error)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A receipt of an hmac endpoint keeps the scheme's headers, so a replay
// verifies them again (and refuses once the endpoint's secret changed); a
// basic endpoint's receipt, whose Authorization is not kept, may be
// replayed without. Shown, the signature is masked and the timestamp not.
func TestReceiptsOfSendersSchemesAreReplayedAndMasked(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	shapeless := `{"status": "processing"}`
	stamped := f.verifying(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &stampedScheme})
	signed := signedBy(t, stampedScheme, stamped.secret, shapeless, time.Now())
	a := f.receive(stamped.Token, shapeless, signed...)
	r := f.receipt(a.ReceiptID)
	if r.Headers["X-Signature"] == "" || r.Headers["X-Signature-Timestamp"] == "" {
		t.Fatalf("the receipt keeps %v; want the signature and its timestamp", r.Headers)
	}
	if err := f.service.CheckReplay(ctx, f.org, r.ID); err != nil {
		t.Fatalf("replay of a verified post: %v", err)
	}
	ep, err := f.db.Endpoint(ctx, f.org, stamped.ID)
	if err != nil {
		t.Fatal(err)
	}
	masked := integrations.MaskedHeaders(ep, map[string]string{"X-Signature": "abc", "X-Signature-Timestamp": "1700000000",
		"Authorization": basicAuth("erp", "pw"), "Content-Type": "application/json", signature.Header: "t=1,v1=abc",
		signature.HeaderWebhookSignature: "v1,abc v1,def", "X-Hub-Signature-256": "sha256=abc"})
	for k, want := range map[string]string{"X-Signature": "***", "X-Signature-Timestamp": "1700000000", "Authorization": "***",
		"Content-Type": "application/json", signature.Header: "t=1,v1=***", signature.HeaderWebhookSignature: "v1,*** v1,***",
		"X-Hub-Signature-256": "***"} {
		if masked[k] != want {
			t.Errorf("masked %s = %q, want %q", k, masked[k], want)
		}
	}
	detail, err := f.service.Receipt(ctx, f.org, r.ID)
	if err != nil || detail.Headers["X-Signature"] != "***" || detail.Headers["X-Signature-Timestamp"] != r.Headers["X-Signature-Timestamp"] {
		t.Fatalf("the receipt as shown: %v, %v", detail.Headers, err)
	}

	// A new secret: the stored signature no longer verifies.
	if _, err := f.service.SetEndpointVerification(ctx, integrations.OperatorActor("test"), f.org, stamped.ID,
		db.NewVerification{Kind: domain.VerifyHMAC, Config: domain.VerificationConfig{HMAC: &stampedScheme}}); err != nil {
		t.Fatal(err)
	}
	if err := f.service.CheckReplay(ctx, f.org, r.ID); domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "signature does not verify") {
		t.Fatalf("replay after a new secret: %v, want refused", err)
	}

	basic := f.verifying(domain.VerifyBasic, domain.VerificationConfig{Username: "erp"})
	b := f.receive(basic.Token, shapeless, "Authorization", basicAuth("erp", basic.secret))
	if b.Stage != domain.StageShape {
		t.Fatalf("basic post = stage %s, %d %q", b.Stage, b.Status, b.Error)
	}
	if err := f.service.CheckReplay(ctx, f.org, b.ReceiptID); err != nil {
		t.Fatalf("replay of a basic endpoint's verified post: %v", err)
	}
	refused := f.receive(basic.Token, shapeless)
	if err := f.service.CheckReplay(ctx, f.org, refused.ReceiptID); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("replay of a post refused for its credentials: %v, want refused", err)
	}
}

// Setting a verification is audited with its kind and scheme, never its
// secret.
func TestSettingAVerificationIsAuditedWithoutItsSecret(t *testing.T) {
	f := newFixture(t)
	ep := f.verifying(domain.VerifyHMAC, domain.VerificationConfig{HMAC: &githubScheme})
	var detail string
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT detail::text FROM audit_log WHERE org_id = $1 AND action = 'endpoint.verification'
		AND target_id = $2`, f.org, ep.ID.String()).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, `"kind": "hmac"`) || !strings.Contains(detail, "X-Hub-Signature-256") || strings.Contains(detail, ep.secret) {
		t.Fatalf("audit detail = %s; want the kind and the scheme, without the secret", detail)
	}
}
