package api_test

import (
	"context"
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

// runner is the replay side of the fixture's server, without a workflow
// service: every refusal comes before a workflow would start.
func (f *fixture) runner() *integrations.Posts {
	return &integrations.Posts{DB: f.db.DB, Sealer: f.sealer}
}

func (f *fixture) setEndpointState(t *testing.T, id uuid.UUID, to domain.EndpointState) {
	t.Helper()
	if _, err := f.db.SetEndpointState(context.Background(), f.org.ID, id, to); err != nil {
		t.Fatal(err)
	}
}

// The reproduction of issue 11: a cancellation posted without a signature
// to a signed endpoint is refused 401, and replaying it is refused too.
func TestReplayRefusesAPostRefusedForItsSignature(t *testing.T) {
	f := newFixture(t)
	f.seed(`{"orders": [{"number": "SO-9", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`)
	ep := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	status, h, _ := f.postInbound(ep.Token, `{"order_ref":"SO-9","status":"cancelled"}`)
	if status != http.StatusUnauthorized {
		t.Fatalf("unsigned post: %d", status)
	}
	receipt := uuid.MustParse(h.Get("X-Receipt-Id"))
	_, err := f.runner().Replay(context.Background(), f.org.ID, receipt, domain.MappingChoice{})
	if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "refused for its signature") {
		t.Fatalf("replay of a 401 receipt: %v", err)
	}
	var orderStatus string
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-9'`, f.org.ID).Scan(&orderStatus); err != nil {
		t.Fatal(err)
	}
	if orderStatus != "confirmed" || f.receiptCount(t, ep.ID) != 1 {
		t.Fatalf("order %s, %d receipts after a refused replay; want confirmed and 1", orderStatus, f.receiptCount(t, ep.ID))
	}
}

// Each replay rule of docs/design.md#replay, with its reason; the receipts
// the rules let through pass CheckReplay, and a refused replay stores
// nothing.
func TestReplayRulesRefuseWithAReason(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good := `{"order_ref": "SO-1", "status": "processing"}`
	post := func(ep db.CreatedEndpoint, body string, header ...string) uuid.UUID {
		t.Helper()
		_, h, b := f.postInbound(ep.Token, body, header...)
		id, err := uuid.Parse(h.Get("X-Receipt-Id"))
		if err != nil {
			t.Fatalf("post kept no receipt: %s", b)
		}
		return id
	}
	signed := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	unsigned := f.erpEndpoint(t)
	sign := func(body string, at time.Time) []string {
		return []string{signature.Header, signature.Sign(*signed.Secret, at, []byte(body))}
	}

	signedOK := post(signed, good, sign(good, time.Now())...)              // 500 here: no workflow service
	signedShape := post(signed, shapeless, sign(shapeless, time.Now())...) // 400, after the signature step
	unsignedOK := post(unsigned, good)
	tooBig := post(unsigned, `{"order_ref": "`+strings.Repeat("x", domain.MaxInboundBody)+`"}`)
	wrongSignature := post(signed, good, signature.Header, signature.Sign("whsec_wrong", time.Now(), []byte(good)))

	f.setEndpointState(t, unsigned.ID, domain.EndpointPaused)
	whilePaused := post(unsigned, good)
	f.setEndpointState(t, unsigned.ID, domain.EndpointActive)

	// A receipt whose stored signature was never good at its received_at
	// (as one stored without the check would be).
	never, err := f.db.StoreReceipt(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: signed.ID, Action: signed.Action,
		ReceivedAt: time.Now(), Headers: map[string]string{signature.Header: signature.Sign(*signed.Secret, time.Now().Add(-time.Hour), []byte(good))},
		Body: []byte(good), Size: len(good), BodyComplete: true})
	if err != nil {
		t.Fatal(err)
	}
	// A replay of unsignedOK still running.
	running, err := f.db.StoreReceipt(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: unsigned.ID, Action: unsigned.Action,
		ReceivedAt: time.Now(), Body: []byte(good), Size: len(good), BodyComplete: true, ReplayOf: &unsignedOK})
	if err != nil {
		t.Fatal(err)
	}

	r := f.runner()
	for _, id := range []uuid.UUID{signedOK, signedShape} {
		if err := r.CheckReplay(ctx, f.org.ID, id); err != nil {
			t.Errorf("a signed post that passed its signature step is refused: %v", err)
		}
	}
	cases := []struct {
		name    string
		receipt uuid.UUID
		reason  string
	}{
		{"refused 401", wrongSignature, "refused for its signature (401)"},
		{"refused 413", tooBig, "only its start was kept"},
		{"stored while paused", whilePaused, "while its endpoint was paused"},
		{"signature never good", never, "signature does not verify"},
		{"a replay running", unsignedOK, "replay " + running.String() + " of it is still running or parked"},
		{"the running replay itself", running, "still running or parked"},
	}
	for _, c := range cases {
		before := f.receiptCount(t, unsigned.ID) + f.receiptCount(t, signed.ID)
		for name, err := range map[string]error{"check": r.CheckReplay(ctx, f.org.ID, c.receipt), "replay": replayErr(r, f.org.ID, c.receipt)} {
			if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), c.reason) ||
				!strings.Contains(domain.ErrorMessage(err), c.receipt.String()+" cannot be replayed") {
				t.Errorf("%s (%s): %v; want ECONFLICT saying %q", c.name, name, err, c.reason)
			}
		}
		if after := f.receiptCount(t, unsigned.ID) + f.receiptCount(t, signed.ID); after != before {
			t.Errorf("%s: a refused replay stored %d receipts", c.name, after-before)
		}
	}

	// The endpoint's state: paused (resume it first), then deleted.
	f.setEndpointState(t, signed.ID, domain.EndpointPaused)
	if err := r.CheckReplay(ctx, f.org.ID, signedOK); domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "is paused: resume it first") {
		t.Errorf("paused endpoint: %v", err)
	}
	f.setEndpointState(t, signed.ID, domain.EndpointDeleted)
	if err := r.CheckReplay(ctx, f.org.ID, signedOK); domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "was deleted") {
		t.Errorf("deleted endpoint: %v", err)
	}
	// Another organisation's receipt is not found.
	other, _, err := f.db.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckReplay(ctx, other.ID, unsignedOK); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("another organisation's receipt: %v", err)
	}
}

func replayErr(r *integrations.Posts, orgID, id uuid.UUID) error {
	_, err := r.Replay(context.Background(), orgID, id, domain.MappingChoice{})
	return err
}

// Without the service key a signed endpoint's receipt cannot be checked
// again, so it is not replayed; an unsigned one needs no key.
func TestReplayOfASignedReceiptNeedsTheServiceKey(t *testing.T) {
	f := newFixture(t)
	signed := f.signedEndpoint(t, domain.ActionERPOrderStatus)
	_, h, _ := f.postInbound(signed.Token, shapeless, signature.Header, signature.Sign(*signed.Secret, time.Now(), []byte(shapeless)))
	_, hu, _ := f.postInbound(f.erpEndpoint(t).Token, shapeless)
	r := &integrations.Posts{DB: f.db.DB}
	if err := r.CheckReplay(context.Background(), f.org.ID, uuid.MustParse(h.Get("X-Receipt-Id"))); err == nil || !strings.Contains(err.Error(), "COMMERCE_SECRET_KEY") {
		t.Fatalf("signed receipt without a key: %v", err)
	}
	if err := r.CheckReplay(context.Background(), f.org.ID, uuid.MustParse(hu.Get("X-Receipt-Id"))); err != nil {
		t.Fatalf("unsigned receipt without a key: %v", err)
	}
}
