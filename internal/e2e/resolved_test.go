package e2e

import (
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// Through the inbound workflows: a post naming an order in another case
// than the order's number applies rather than parking, and a post parked
// for a reference in another case applies when that order is loaded. A
// post refused for its order's state, replayed once the cause is fixed,
// reads resolved by the replay; a parked post cancelled reads resolved by
// its cancellation; the list of failures leaves both out by default.
func TestReferencesIgnoreCaseAndReplaysResolveThroughTheWorkflows(t *testing.T) {
	f := newInbound(t)
	key := f.apiKey()
	url, _, _ := f.endpoint(domain.ActionERPOrderStatus, false)
	f.seed(`{"orders": [{"number": "SO-2026-0202", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`)
	if a := f.post(url, `{"order_ref": "so-2026-0202", "status": "in_progress"}`); a.status != 200 || a.str("outcome") != "applied" {
		t.Fatalf("a post naming so-2026-0202: %d %s, want applied to SO-2026-0202", a.status, a.raw)
	}
	waiting := f.post(url, `{"order_ref": "so-late-7", "status": "in_progress"}`)
	if waiting.status != 202 || waiting.str("outcome") != "parked" {
		t.Fatalf("a post naming a missing order: %d %s", waiting.status, waiting.raw)
	}
	f.seed(`{"orders": [{"number": "SO-LATE-7", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`)
	f.eventually("the post parked for so-late-7 applying to SO-LATE-7", func() bool {
		return f.receipt(waiting.receipt).Outcome == domain.OutcomeApplied
	})

	// Refused: the order is fulfilled (final). Support fixes the order and
	// replays the post.
	f.seed(`{"orders": [{"number": "SO-FIX", "status": "fulfilled", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 100}]}]}`)
	refused := f.post(url, `{"order_ref": "SO-FIX", "status": "in_progress"}`)
	if f.receipt(refused.receipt).Outcome != domain.OutcomeFailed {
		t.Fatalf("a move out of fulfilled: %d %s, want failed", refused.status, refused.raw)
	}
	f.one(`UPDATE orders SET status = 'confirmed' WHERE org_id = $1 AND number = 'SO-FIX' RETURNING number`)
	if status, raw := f.call("POST", "/api/v1/inbound/receipts/"+refused.receipt+"/replay", key, `{}`, nil); status != 200 {
		t.Fatalf("replay after the fix: %d %s", status, raw)
	}
	var got struct {
		Replays    []string `json:"replays"`
		Resolution *struct {
			By        string `json:"by"`
			ReceiptID string `json:"receipt_id"`
		} `json:"resolution"`
	}
	if status, raw := f.call("GET", "/api/v1/inbound/receipts/"+refused.receipt, key, "", &got); status != 200 || got.Resolution == nil ||
		len(got.Replays) != 1 || got.Resolution.By != "replay" || got.Resolution.ReceiptID != got.Replays[0] {
		t.Fatalf("the refused post after its replay applied: %d %s", status, raw)
	}

	parked := f.post(url, `{"order_ref": "SO-NEVER", "status": "in_progress"}`)
	if status, raw := f.call("POST", "/api/v1/inbound/receipts/"+parked.receipt+"/cancel", key, "", &got); status != 200 {
		t.Fatalf("cancel: %d %s", status, raw)
	}
	f.eventually("the cancelled post resolved by its cancellation", func() bool {
		return f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND id = $2 AND resolved_by = 'cancel'`, parked.receipt) == 1
	})
	var list struct {
		Receipts []struct {
			ID string `json:"id"`
		} `json:"receipts"`
	}
	if status, raw := f.call("GET", "/api/v1/inbound/receipts?outcome=failed,parked,error,unmatched", key, "", &list); status != 200 || len(list.Receipts) != 0 {
		t.Fatalf("the failures by default: %d %s, want none unresolved", status, raw)
	}
}
