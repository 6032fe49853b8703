package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// verificationAnswer is PUT .../verification's answer.
type verificationAnswer struct {
	EndpointID string `json:"endpoint_id"`
	Kind       string `json:"kind"`
	HMAC       *struct {
		Header           string `json:"header"`
		Prefix           string `json:"prefix"`
		TimestampHeader  string `json:"timestamp_header"`
		ToleranceSeconds int    `json:"tolerance_seconds"`
	} `json:"hmac"`
	Username *string `json:"username"`
	Secret   *string `json:"secret"`
	Password *string `json:"password"`
}

// setVerification PUTs body as the endpoint's verification with key and
// returns the status, headers and raw answer, checked against the
// document.
func (f *fixture) setVerification(t *testing.T, key, endpointID, body string) (int, http.Header, []byte) {
	t.Helper()
	path := "/api/v1/inbound/endpoints/" + endpointID + "/verification"
	status, h, b := f.do(http.MethodPut, path, key, strings.NewReader(body))
	_, validate := f.openAPI(t)
	req, _ := http.NewRequest(http.MethodPut, f.srv.URL+path, nil)
	if err := validate(req, status, h, b); err != nil {
		t.Fatalf("PUT %s answered %d, not as documented: %v\n%s", path, status, err, b)
	}
	return status, h, b
}

// verified sets an endpoint's verification and returns the answer, which
// must be 200.
func (f *fixture) verified(t *testing.T, endpointID, body string) verificationAnswer {
	t.Helper()
	status, h, b := f.setVerification(t, f.key, endpointID, body)
	var v verificationAnswer
	if status != http.StatusOK || json.Unmarshal(b, &v) != nil || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("PUT verification %s = %d %s (Cache-Control %q); want 200, not stored", body, status, b, h.Get("Cache-Control"))
	}
	return v
}

func hmacHex(secret, content string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(content))
	return hex.EncodeToString(m.Sum(nil))
}

// An endpoint set to verify GitHub's scheme answers its secret once (never
// in a read after), takes a post GitHub would sign, refuses 401 one signed
// otherwise, and answers the same signed post again as the sender's retry;
// a new PUT makes a new secret and the old one stops working.
func TestEndpointVerifiesGitHubsSignatureThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	v := f.verified(t, ep.ID.String(), `{"kind": "hmac", "hmac": {"header": "x-hub-signature-256", "algorithm": "sha256", "encoding": "hex", "prefix": "sha256="}}`)
	if v.Kind != "hmac" || v.HMAC == nil || v.HMAC.Header != "X-Hub-Signature-256" || v.Secret == nil || v.Password != nil || v.EndpointID != ep.ID.String() {
		t.Fatalf("answer = %+v; want hmac with its canonical header and a secret", v)
	}
	secret := *v.Secret

	for _, path := range []string{"/api/v1/inbound/endpoints/" + ep.ID.String(), "/api/v1/inbound/endpoints"} {
		status, _, b := f.do(http.MethodGet, path, f.key, nil)
		if status != 200 || strings.Contains(string(b), secret) || !strings.Contains(string(b), `"verification":{"kind":"hmac","hmac":{"header":"X-Hub-Signature-256","algorithm":"sha256","encoding":"hex","prefix":"sha256="}}`) {
			t.Fatalf("GET %s = %d %s; want the kind and scheme, never the secret", path, status, b)
		}
	}

	sign := func(secret, body string) []string {
		return []string{"X-Hub-Signature-256", "sha256=" + hmacHex(secret, body)}
	}
	status, h, b := f.postInbound(ep.Token, shapeless, sign(secret, shapeless)...)
	if status != http.StatusBadRequest || h.Get("X-Receipt-Id") == "" {
		t.Fatalf("a post signed as GitHub signs = %d %s; want it past the signature, refused for its shape", status, b)
	}
	first := h.Get("X-Receipt-Id")
	status, h, _ = f.postInbound(ep.Token, shapeless, sign(secret, shapeless)...)
	if h.Get("Idempotent-Replayed") != "true" || h.Get("X-Receipt-Id") != first || status != http.StatusBadRequest {
		t.Fatalf("the same signed post again = %d, replayed %q, receipt %s; want the first answer of %s", status, h.Get("Idempotent-Replayed"),
			h.Get("X-Receipt-Id"), first)
	}
	if n := f.receiptCount(t, ep.ID); n != 1 {
		t.Fatalf("receipts = %d, want the first post's only", n)
	}
	for name, headers := range map[string][]string{
		"unsigned":      nil,
		"another key":   sign("hmac_other", shapeless),
		"no prefix":     {"X-Hub-Signature-256", hmacHex(secret, shapeless)},
		"another body":  sign(secret, `{"status": "shipped"}`),
		"our signature": {"X-Service-Signature", "t=1,v1=" + hmacHex(secret, shapeless)},
	} {
		status, _, b := f.postInbound(ep.Token, shapeless, headers...)
		if status != http.StatusUnauthorized || !strings.Contains(errorBody(t, b), "X-Hub-Signature-256") {
			t.Errorf("%s: %d %s; want 401 naming the header", name, status, b)
		}
	}

	again := f.verified(t, ep.ID.String(), `{"kind": "hmac", "hmac": {"header": "X-Hub-Signature-256", "algorithm": "sha256", "encoding": "hex", "prefix": "sha256="}}`)
	if again.Secret == nil || *again.Secret == secret {
		t.Fatal("a new PUT did not make a new secret")
	}
	other := `{"status": "packed"}`
	if status, _, b := f.postInbound(ep.Token, other, sign(secret, other)...); status != http.StatusUnauthorized {
		t.Fatalf("the secret before = %d %s; want 401", status, b)
	}
	if status, _, b := f.postInbound(ep.Token, other, sign(*again.Secret, other)...); status != http.StatusBadRequest {
		t.Fatalf("the new secret = %d %s; want it past the signature", status, b)
	}
	if n := f.count(`SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'endpoint.verification'`); n != 2 {
		t.Fatalf("audit entries = %d, want one for each PUT", n)
	}
	if n := f.count(`SELECT count(*) FROM audit_log WHERE org_id = $1 AND (detail::text LIKE '%' || $2 || '%')`, secret); n != 0 {
		t.Fatal("the secret is in the audit log")
	}
}

// Shopify's scheme (base64, no prefix) and one that signs a timestamp;
// a stale timestamp is refused 401.
func TestEndpointVerifiesShopifysAndTimestampedSignatures(t *testing.T) {
	f := newFixture(t)
	shop := f.erpEndpoint(t)
	v := f.verified(t, shop.ID.String(), `{"kind": "hmac", "hmac": {"header": "X-Shopify-Hmac-Sha256", "algorithm": "sha256", "encoding": "base64"}}`)
	m := hmac.New(sha256.New, []byte(*v.Secret))
	m.Write([]byte(shapeless))
	if status, _, b := f.postInbound(shop.Token, shapeless, "X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(m.Sum(nil))); status != http.StatusBadRequest {
		t.Fatalf("a post signed as Shopify signs = %d %s; want it past the signature", status, b)
	}

	stamped := f.erpEndpoint(t)
	v = f.verified(t, stamped.ID.String(), `{"kind": "hmac", "hmac": {"header": "X-Signature", "algorithm": "sha256", "encoding": "hex", "timestamp_header": "X-Timestamp"}}`)
	if v.HMAC.ToleranceSeconds != 300 {
		t.Fatalf("tolerance = %d, want the default 300", v.HMAC.ToleranceSeconds)
	}
	post := func(at time.Time) (int, []byte) {
		ts := strconv.FormatInt(at.Unix(), 10)
		status, _, b := f.postInbound(stamped.Token, shapeless, "X-Timestamp", ts, "X-Signature", hmacHex(*v.Secret, ts+"."+shapeless))
		return status, b
	}
	if status, b := post(time.Now()); status != http.StatusBadRequest {
		t.Fatalf("signed now = %d %s; want it past the signature", status, b)
	}
	if status, b := post(time.Now().Add(-10 * time.Minute)); status != http.StatusUnauthorized || !strings.Contains(errorBody(t, b), "outside the tolerance") {
		t.Fatalf("signed ten minutes ago = %d %s; want 401, stale", status, b)
	}
}

// A basic endpoint takes its username and password (answered once, as
// password) and refuses others 401 with a Basic challenge; a none endpoint
// takes anything; service is what an endpoint did before.
func TestBasicAndNoneEndpointsThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	v := f.verified(t, ep.ID.String(), `{"kind": "basic", "username": "erp"}`)
	if v.Kind != "basic" || v.Username == nil || *v.Username != "erp" || v.Password == nil || v.Secret != nil {
		t.Fatalf("answer = %+v; want basic with its username and a password", v)
	}
	if status, _, b := f.do(http.MethodGet, "/api/v1/inbound/endpoints/"+ep.ID.String(), f.key, nil); status != 200 ||
		strings.Contains(string(b), *v.Password) || !strings.Contains(string(b), `"verification":{"kind":"basic","username":"erp"}`) {
		t.Fatalf("GET = %d %s", status, b)
	}
	auth := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	if status, _, b := f.postInbound(ep.Token, shapeless, "Authorization", auth("erp", *v.Password)); status != http.StatusBadRequest {
		t.Fatalf("the right credentials = %d %s; want them past the signature step", status, b)
	}
	for name, a := range map[string]string{"none": "", "a wrong password": auth("erp", "pw_wrong"), "a wrong user": auth("sap", *v.Password)} {
		var headers []string
		if a != "" {
			headers = []string{"Authorization", a}
		}
		status, h, b := f.postInbound(ep.Token, shapeless, headers...)
		if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic realm=") || errorBody(t, b) == "" {
			t.Errorf("%s: %d %s, WWW-Authenticate %q; want 401 with a Basic challenge", name, status, b, h.Get("WWW-Authenticate"))
		}
	}

	f.verified(t, ep.ID.String(), `{"kind": "none"}`)
	if status, _, b := f.postInbound(ep.Token, shapeless); status != http.StatusBadRequest {
		t.Fatalf("none = %d %s; want any post past the signature step", status, b)
	}
	signed := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	f.verified(t, signed.ID.String(), `{"kind": "none"}`)
	if v := f.verified(t, signed.ID.String(), `{"kind": "service"}`); v.Secret != nil || v.Password != nil || v.HMAC != nil {
		t.Fatalf("service = %+v; want no secret or scheme", v)
	}
	if status, _, b := f.postInbound(signed.Token, shapeless); status != http.StatusUnauthorized {
		t.Fatalf("back to service, unsigned = %d %s; want 401 as before", status, b)
	}
	status, _, b := f.do(http.MethodGet, "/api/v1/inbound/endpoints/"+signed.ID.String(), f.key, nil)
	if status != 200 || !strings.Contains(string(b), `"require_signature":true`) || !strings.Contains(string(b), `"verification":{"kind":"service"}`) {
		t.Fatalf("GET = %d %s", status, b)
	}
}

// Setting a verification needs inbound:write (403 without, nothing
// changed); a scheme that breaks a rule answers 400 naming the field; a
// deleted endpoint 409.
func TestSettingAVerificationIsRefusedWithTheReason(t *testing.T) {
	f := newFixture(t)
	ep := f.erpEndpoint(t)
	id := ep.ID.String()
	readOnly := f.newKey(domain.ScopeInboundRead, domain.ScopeInboundReplay)
	status, _, b := f.setVerification(t, readOnly, id, `{"kind": "none"}`)
	if status != http.StatusForbidden || !strings.Contains(errorBody(t, b), "inbound:write") {
		t.Fatalf("without inbound:write = %d %s; want 403 naming the scope", status, b)
	}
	if n := f.count(`SELECT count(*) FROM inbound_endpoints WHERE org_id = $1 AND verification <> 'service'`); n != 0 {
		t.Fatal("a refused PUT changed the endpoint")
	}
	for body, field := range map[string]string{
		`{"kind": "hmac"}`: "hmac is required",
		`{"kind": "hmac", "hmac": {"header": "X Sig", "algorithm": "sha256", "encoding": "hex"}}`:                              "hmac.header",
		`{"kind": "hmac", "hmac": {"header": "Authorization", "algorithm": "sha256", "encoding": "hex"}}`:                      "hmac.header may not be Authorization",
		`{"kind": "hmac", "hmac": {"header": "X-Sig", "algorithm": "md5", "encoding": "hex"}}`:                                 "hmac.algorithm",
		`{"kind": "hmac", "hmac": {"header": "X-Sig", "algorithm": "sha256", "encoding": "base32"}}`:                           "hmac.encoding",
		`{"kind": "hmac", "hmac": {"header": "X-Sig", "algorithm": "sha256", "encoding": "hex", "tolerance_seconds": 60}}`:     "hmac.tolerance_seconds",
		`{"kind": "hmac", "hmac": {"header": "X-Sig", "algorithm": "sha256", "encoding": "hex", "timestamp_header": "x-sig"}}`: "hmac.timestamp_header",
		`{"kind": "basic"}`:                             "username",
		`{"kind": "basic", "username": "a:b"}`:          "username",
		`{"kind": "none", "username": "erp"}`:           "username is only for kind basic",
		`{"kind": "ldap"}`:                              "kind",
		`{"kind": "hmac", "hmac": {"header": "X-Sig"}}`: "property algorithm",
	} {
		status, _, b := f.setVerification(t, f.key, id, body)
		if status != http.StatusBadRequest || !strings.Contains(errorBody(t, b), field) {
			t.Errorf("%s = %d %s; want 400 naming %q", body, status, b, field)
		}
	}
	f.setEndpointState(t, ep.ID, domain.EndpointDeleted)
	if status, _, b := f.setVerification(t, f.key, id, `{"kind": "none"}`); status != http.StatusConflict || errorBody(t, b) == "" {
		t.Fatalf("a deleted endpoint = %d %s; want 409", status, b)
	}
	if n := f.count(`SELECT count(*) FROM audit_log WHERE org_id = $1`); n != 0 {
		t.Fatalf("%d audit entries after refused PUTs", n)
	}
}
