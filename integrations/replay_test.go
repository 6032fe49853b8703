package integrations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// Replay reads the stage a receipt records: a post refused at or before
// the signature step (paused, size, signature) is refused for replay with
// the reason, one that got past it (a malformed Idempotency-Key, a shape
// refusal, a post handed to its workflow) may be replayed. A refused
// replay stores nothing.
func TestReplayReadsTheStageTheReceiptRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	signed := f.endpoint(true)
	unsigned := f.endpoint(false)
	sign := func(body string) []string {
		return []string{signature.Header, signature.Sign(*signed.Secret, time.Now(), []byte(body))}
	}
	receipt := func(token, body string, headers ...string) uuid.UUID {
		t.Helper()
		a := f.receive(token, body, headers...)
		if a.ReceiptID == uuid.Nil {
			t.Fatalf("post (%d %s) was not kept", a.Status, a.Error)
		}
		return a.ReceiptID
	}
	shapeless := `{"status": "processing"}`
	huge := `{"order_ref": "` + strings.Repeat("x", domain.MaxInboundBody) + `"}`

	tooBig := receipt(unsigned.Token, huge)
	wrongSignature := receipt(signed.Token, good, signature.Header, signature.Sign("whsec_wrong", time.Now(), []byte(good)))
	f.setState(unsigned.ID, domain.EndpointPaused)
	whilePaused := receipt(unsigned.Token, good)
	f.setState(unsigned.ID, domain.EndpointActive)
	badKey := receipt(signed.Token, good, append(sign(good), domain.IdempotencyKeyHeader, "")...)
	shape := receipt(signed.Token, shapeless, sign(shapeless)...)
	started := receipt(unsigned.Token, good) // its workflow could not start here: error, replayable

	for name, id := range map[string]uuid.UUID{"sender_retry": badKey, "shape": shape, "start": started} {
		if stage := f.receipt(id).Stage; string(stage) != name {
			t.Fatalf("receipt %s records stage %s, want %s", id, stage, name)
		}
		if err := f.service.CheckReplay(ctx, f.org, id); err != nil {
			t.Errorf("a post that reached %s is refused for replay: %v", name, err)
		}
	}
	for _, c := range []struct {
		name    string
		receipt uuid.UUID
		reason  string
	}{
		{"size", tooBig, "only its start was kept"},
		{"signature", wrongSignature, "refused for its signature"},
		{"paused", whilePaused, "while its endpoint was paused"},
	} {
		if stage := f.receipt(c.receipt).Stage; string(stage) != c.name {
			t.Fatalf("receipt %s records stage %s, want %s", c.receipt, stage, c.name)
		}
		before := f.receipts(unsigned.ID) + f.receipts(signed.ID)
		for what, err := range map[string]error{
			"check":   f.service.CheckReplay(ctx, f.org, c.receipt),
			"replay":  replayErr(f, c.receipt),
			"dry run": dryRunErr(f, c.receipt),
		} {
			if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), c.reason) ||
				!strings.Contains(domain.ErrorMessage(err), c.receipt.String()+" cannot be replayed") {
				t.Errorf("%s (%s): %v; want ECONFLICT saying %q", c.name, what, err, c.reason)
			}
		}
		if after := f.receipts(unsigned.ID) + f.receipts(signed.ID); after != before {
			t.Errorf("%s: a refused replay stored %d receipts", c.name, after-before)
		}
	}
}

// A receipt stored while its endpoint was paused by a replica of the
// release before intake stages (a rolling upgrade) names no stage; the
// schema reads it off what that replica stored, and replay refuses it as
// it refuses one stored while paused now.
func TestReplayRefusesAPausedPostOfAnEarlierRelease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ep := f.endpoint(false)
	id := uuid.New()
	if _, err := f.db.Pool().Exec(ctx, `INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes,
		status_code, error, outcome) VALUES ($1, $2, $3, 'erp_order_status', now(), $4, $5, 409, 'the endpoint is paused', 'failed')`,
		id, f.org, ep.ID, []byte(good), len(good)); err != nil {
		t.Fatal(err)
	}
	err := f.service.CheckReplay(ctx, f.org, id)
	if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "while its endpoint was paused") {
		t.Fatalf("replay of a paused post stored by an earlier release: %v", err)
	}
}

// A replay of a signed endpoint's post verifies its stored signature again,
// with the time it was received as the clock: a receipt that records a
// stage past the signature step but whose signature never verified is
// refused.
func TestReplayVerifiesAStoredSignatureAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	signed := f.endpoint(true)
	a := f.receive(signed.Token, good, signature.Header, signature.Sign(*signed.Secret, time.Now(), []byte(good)))
	if err := f.service.CheckReplay(ctx, f.org, a.ReceiptID); err != nil {
		t.Fatalf("a post its signature verified: %v", err)
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE inbound_receipts SET headers = jsonb_build_object($2::text, $3::text) WHERE id = $1`,
		a.ReceiptID, signature.Header, signature.Sign(*signed.Secret, time.Now().Add(-time.Hour), []byte(good))); err != nil {
		t.Fatal(err)
	}
	err := f.service.CheckReplay(ctx, f.org, a.ReceiptID)
	if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "signature does not verify") {
		t.Fatalf("a stored signature that did not verify at its received_at: %v", err)
	}
}

func replayErr(f *fixture, id uuid.UUID) error {
	_, err := f.service.Replay(context.Background(), f.org, id, domain.MappingChoice{})
	return err
}

func dryRunErr(f *fixture, id uuid.UUID) error {
	_, err := f.service.DryRun(context.Background(), f.org, id, domain.MappingChoice{})
	return err
}
