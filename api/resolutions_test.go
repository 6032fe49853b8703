package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// A failed receipt whose replay applied answers resolution {by: replay,
// receipt_id, at}; the list of failures leaves it out unless asked
// (resolved=true or any), and an unknown resolved value is refused naming
// it.
func TestResolvedReceiptsReadResolvedAndLeaveTheFailuresList(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ours := f.managedRecords(t, f.org.ID)
	_, validate := f.openAPI(t)
	list := func(query string) []uuid.UUID {
		t.Helper()
		status, _, body := f.do("GET", "/api/v1/inbound/receipts?"+query, f.key, nil)
		if status != 200 {
			t.Fatalf("receipts?%s: %d %s", query, status, body)
		}
		var page struct {
			Receipts []struct {
				ID uuid.UUID `json:"id"`
			} `json:"receipts"`
		}
		_ = json.Unmarshal(body, &page)
		var ids []uuid.UUID
		for _, r := range page.Receipts {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := list("outcome=failed"); len(got) != 1 || got[0] != ours.receipt {
		t.Fatalf("failures before the replay: %v, want the failed receipt", got)
	}
	replay, _, err := f.db.StoreReplay(ctx, db.NewReceipt{OrgID: f.org.ID, EndpointID: ours.endpoint, Action: domain.ActionERPOrderStatus,
		ReceivedAt: time.Now(), Body: []byte(`{}`), Size: 2, BodyComplete: true, ReplayOf: &ours.receipt})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.UpdateReceipt(ctx, f.org.ID, replay, db.ReceiptUpdate{Outcome: domain.OutcomeApplied}); err != nil {
		t.Fatal(err)
	}

	path := "/api/v1/inbound/receipts/" + ours.receipt.String()
	status, hdr, body := f.do("GET", path, f.key, nil)
	var got struct {
		Resolution *struct {
			By        string     `json:"by"`
			ReceiptID *uuid.UUID `json:"receipt_id"`
			At        string     `json:"at"`
		} `json:"resolution"`
	}
	if status != 200 || json.Unmarshal(body, &got) != nil || got.Resolution == nil || got.Resolution.By != "replay" ||
		got.Resolution.ReceiptID == nil || *got.Resolution.ReceiptID != replay || got.Resolution.At == "" {
		t.Fatalf("the replayed receipt: %d %s, want resolution by replay naming %s", status, body, replay)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	if err := validate(req, status, hdr, body); err != nil {
		t.Fatalf("the receipt with its resolution is not the documented shape: %v", err)
	}

	if got := list("outcome=failed"); len(got) != 0 {
		t.Fatalf("failures by default after the replay applied: %v, want none", got)
	}
	for _, q := range []string{"outcome=failed&resolved=true", "outcome=failed&resolved=any"} {
		if got := list(q); len(got) != 1 || got[0] != ours.receipt {
			t.Fatalf("receipts?%s: %v, want the resolved receipt", q, got)
		}
	}
	if got := list("resolved=false"); len(got) != 1 || got[0] != replay {
		t.Fatalf("receipts?resolved=false: %v, want the replay only", got)
	}
	if status, _, body := f.do("GET", "/api/v1/inbound/receipts?resolved=maybe", f.key, nil); status != 400 || !json.Valid(body) ||
		!strings.Contains(string(body), "maybe") {
		t.Fatalf("resolved=maybe: %d %s, want 400 naming the value", status, body)
	}
}
