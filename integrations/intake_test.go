package integrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/signature"
)

// fixture is an organisation on a schema of its own, with the service
// built as a process's assembly builds it, without Temporal: a post that
// passes every stage ends at the start of its workflow.
type fixture struct {
	t       *testing.T
	db      *testdb.DB
	sealer  *secrets.Sealer
	service *integrations.Service
	org     uuid.UUID
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d := testdb.New(t)
	sealer, err := secrets.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	org, _, err := d.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: d, sealer: sealer, org: org.ID,
		service: integrations.New(integrations.Deps{DB: d.DB, Sealer: sealer, BaseURL: "http://commerce.test"})}
}

func (f *fixture) endpoint(signed bool) db.CreatedEndpoint {
	f.t.Helper()
	ep, err := f.db.CreateEndpoint(context.Background(), f.sealer, db.NewEndpoint{OrgID: f.org, AsEmail: "owner@acme.example",
		Name: "ERP", Action: domain.ActionERPOrderStatus, RequireSignature: signed})
	if err != nil {
		f.t.Fatal(err)
	}
	return ep
}

func (f *fixture) setState(id uuid.UUID, to domain.EndpointState) {
	f.t.Helper()
	if _, err := f.db.SetEndpointState(context.Background(), f.org, id, to); err != nil {
		f.t.Fatal(err)
	}
}

// receive posts body to the token, with headers as name/value pairs.
func (f *fixture) receive(token, body string, headers ...string) integrations.Answer {
	f.t.Helper()
	return f.receiveFrom(token, strings.NewReader(body), headers...)
}

func (f *fixture) receiveFrom(token string, body io.Reader, headers ...string) integrations.Answer {
	f.t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Add(headers[i], headers[i+1])
	}
	a, err := f.service.Receive(context.Background(), integrations.Request{Token: token, Received: time.Now(), Header: h, Body: body})
	if err != nil {
		f.t.Fatalf("receive: %v", err)
	}
	return a
}

func (f *fixture) receipt(id uuid.UUID) db.Receipt {
	f.t.Helper()
	r, err := f.db.GetReceipt(context.Background(), f.org, id)
	if err != nil {
		f.t.Fatalf("receipt %s: %v", id, err)
	}
	return r
}

func (f *fixture) receipts(endpoint uuid.UUID) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2`,
		f.org, endpoint).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// failingReader fails once its text is read, as a sender that stops
// mid-body does.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset")
	}
	return n, err
}

const good = `{"order_ref": "SO-1", "status": "processing"}`

// Each stage of the intake refuses what its rule refuses, in the order of
// docs/design.md#the-inbound-pipeline: the answer names the stage, a post
// refused from the paused check on is kept as a receipt that records the
// same stage, and one refused before it is not kept.
func TestIntakeStagesRefuseInOrderAndReceiptsRecordTheStage(t *testing.T) {
	f := newFixture(t)
	unsigned := f.endpoint(false)
	signed := f.endpoint(true)
	paused := f.endpoint(false)
	f.setState(paused.ID, domain.EndpointPaused)
	deleted := f.endpoint(false)
	f.setState(deleted.ID, domain.EndpointDeleted)
	huge := `{"order_ref": "` + strings.Repeat("x", domain.MaxInboundBody) + `"}`
	sign := func(body string) []string {
		return []string{signature.Header, signature.Sign(*signed.Secret, time.Now(), []byte(body))}
	}

	cases := []struct {
		name    string
		token   string
		body    string
		headers []string
		stage   domain.IntakeStage
		status  int
		message string
		kept    bool
		unread  bool
	}{
		{"not a token", "ck_" + strings.Repeat("a", 43), good, nil, domain.StageToken, 404, "Not found", false, true},
		{"unknown token", "in_" + strings.Repeat("a", 43), good, nil, domain.StageToken, 404, "Not found", false, true},
		{"deleted endpoint", deleted.Token, good, nil, domain.StageToken, 404, "Not found", false, true},
		{"paused, and over the size too", paused.Token, huge, nil, domain.StagePaused, 409, "the endpoint is paused", true, true},
		{"paused", paused.Token, good, nil, domain.StagePaused, 409, "the endpoint is paused", true, false},
		{"over 1 MB, on a signed endpoint", signed.Token, huge, sign(huge), domain.StageSize, 413, "the body is over 1 MB", true, true},
		{"no signature", signed.Token, good, nil, domain.StageSignature, 401, "signature required and missing or wrong", true, false},
		{"malformed Idempotency-Key", signed.Token, good, append(sign(good), domain.IdempotencyKeyHeader, "a\tb"),
			domain.StageSenderRetry, 400, domain.BadIdempotencyKey, true, false},
		{"not the action's shape", unsigned.Token, `{"status": "processing"}`, nil, domain.StageShape, 400, "order_ref", true, false},
		{"not JSON", unsigned.Token, `{`, nil, domain.StageShape, 400, "", true, false},
		// No Temporal here: the post is kept, and its workflow cannot start.
		{"every check passed", unsigned.Token, good, nil, domain.StageStart, 500, "", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.receive(c.token, c.body, c.headers...)
			if a.Stage != c.stage || a.Status != c.status || !strings.Contains(a.Error+string(a.Body), c.message) || a.Unread != c.unread {
				t.Fatalf("answer = stage %s, %d %q %s, unread %v; want stage %s, %d saying %q, unread %v",
					a.Stage, a.Status, a.Error, a.Body, a.Unread, c.stage, c.status, c.message, c.unread)
			}
			if kept := a.ReceiptID != uuid.Nil; kept != c.kept {
				t.Fatalf("kept as a receipt: %v, want %v", kept, c.kept)
			}
			if !c.kept {
				return
			}
			r := f.receipt(a.ReceiptID)
			if r.Stage != c.stage || r.StatusCode == nil || *r.StatusCode != c.status {
				t.Fatalf("receipt = stage %s, status %v; want stage %s, %d", r.Stage, r.StatusCode, c.stage, c.status)
			}
			if wantWhole := !c.unread; r.BodyComplete() != wantWhole {
				t.Fatalf("receipt keeps its whole body: %v, want %v", r.BodyComplete(), wantWhole)
			}
		})
	}
	if n := f.receipts(deleted.ID); n != 0 {
		t.Errorf("a post to a deleted endpoint kept %d receipts", n)
	}
}

// A post over the endpoint's rate is refused before anything else about it
// is looked at, and is counted on the endpoint, not kept.
func TestIntakeRefusesOverTheRateBeforeThePausedCheck(t *testing.T) {
	f := newFixture(t)
	paused := f.endpoint(false)
	f.setState(paused.ID, domain.EndpointPaused)
	// The bucket refills as the posts go: post until it is empty.
	var last integrations.Answer
	kept := 0
	for range 2 * db.EndpointLimit.Burst() {
		if last = f.receive(paused.Token, good); last.Status == 429 {
			break
		}
		kept++
	}
	if kept < db.EndpointLimit.Burst() {
		t.Fatalf("only %d posts within the burst of %d", kept, db.EndpointLimit.Burst())
	}
	if last.Stage != domain.StageRate || last.Status != 429 || last.RetryAfter <= 0 || last.ReceiptID != uuid.Nil || !last.Unread {
		t.Fatalf("post over the rate = stage %s, %d, retry after %v, receipt %s, unread %v; want rate, 429, a wait, none, unread",
			last.Stage, last.Status, last.RetryAfter, last.ReceiptID, last.Unread)
	}
	if n := f.receipts(paused.ID); n != kept {
		t.Errorf("receipts = %d, want the %d posts within the rate", n, kept)
	}
}

// A body that cannot be read (its sender stopped mid-body) is refused 400
// and leaves nothing to keep, even on a paused endpoint, whose refusal
// would keep the body.
func TestIntakeKeepsNothingOfABodyThatCannotBeRead(t *testing.T) {
	f := newFixture(t)
	for _, paused := range []bool{false, true} {
		ep := f.endpoint(false)
		if paused {
			f.setState(ep.ID, domain.EndpointPaused)
		}
		a := f.receiveFrom(ep.Token, failingReader{strings.NewReader(good)})
		if a.Status != 400 || a.Error != "the body could not be read" || a.ReceiptID != uuid.Nil || !a.Unread {
			t.Fatalf("paused %v: answer = %d %q, receipt %s, unread %v; want 400, nothing kept, unread", paused, a.Status, a.Error, a.ReceiptID, a.Unread)
		}
		if n := f.receipts(ep.ID); n != 0 {
			t.Fatalf("paused %v: %d receipts kept", paused, n)
		}
	}
}

// A sender's retry of a post (the same Idempotency-Key, or on a signed
// endpoint the same signature) is answered with the first post's answer and
// is not kept again; the key with another body is refused 422. A post
// refused for a malformed key claims none of its keys: its sender's
// corrected retry, with the same signature, is a post of its own.
func TestIntakeAnswersASendersRetryWithTheFirstAnswer(t *testing.T) {
	f := newFixture(t)
	unsigned := f.endpoint(false)
	shapeless := `{"status": "processing"}`
	first := f.receive(unsigned.Token, shapeless, domain.IdempotencyKeyHeader, "k-1")
	again := f.receive(unsigned.Token, shapeless, domain.IdempotencyKeyHeader, "k-1")
	if first.Status != 400 || first.ReceiptID == uuid.Nil {
		t.Fatalf("first post = %d, receipt %s; want 400, kept", first.Status, first.ReceiptID)
	}
	var answered struct{ Error string }
	_ = json.Unmarshal(again.Body, &answered)
	if !again.Replayed || again.Status != first.Status || again.ReceiptID != first.ReceiptID || answered.Error != first.Error {
		t.Fatalf("retry = replayed %v, %d %s, receipt %s; want the first answer %d %q of %s",
			again.Replayed, again.Status, again.Body, again.ReceiptID, first.Status, first.Error, first.ReceiptID)
	}
	other := f.receive(unsigned.Token, `{"order_ref": "SO-2"}`, domain.IdempotencyKeyHeader, "k-1")
	if other.Status != 422 || !strings.Contains(other.Error, "this Idempotency-Key was already used on this endpoint with another body") {
		t.Fatalf("the key with another body = %d %q, want 422", other.Status, other.Error)
	}
	if n := f.receipts(unsigned.ID); n != 1 {
		t.Fatalf("receipts = %d, want the first post's only", n)
	}

	signed := f.endpoint(true)
	sig := signature.Sign(*signed.Secret, time.Now(), []byte(shapeless))
	bad := f.receive(signed.Token, shapeless, signature.Header, sig, domain.IdempotencyKeyHeader, "")
	if bad.Stage != domain.StageSenderRetry || bad.Status != 400 || bad.ReceiptID == uuid.Nil {
		t.Fatalf("malformed key = stage %s, %d, receipt %s; want sender_retry, 400, kept", bad.Stage, bad.Status, bad.ReceiptID)
	}
	fixed := f.receive(signed.Token, shapeless, signature.Header, sig)
	if fixed.Replayed || fixed.Stage != domain.StageShape || fixed.ReceiptID == bad.ReceiptID {
		t.Fatalf("corrected retry = replayed %v, stage %s, receipt %s; want a post of its own refused for its shape",
			fixed.Replayed, fixed.Stage, fixed.ReceiptID)
	}
	repeat := f.receive(signed.Token, shapeless, signature.Header, sig)
	if !repeat.Replayed || repeat.ReceiptID != fixed.ReceiptID {
		t.Fatalf("the same signed post again = replayed %v, receipt %s; want %s's answer", repeat.Replayed, repeat.ReceiptID, fixed.ReceiptID)
	}
}
