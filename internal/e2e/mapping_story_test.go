package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// rawPost posts body and answers the status and decoded answer, whatever
// its fields.
func (f *inboundFixture) rawPost(url, body string) (int, map[string]any, string) {
	f.T.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		f.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, resp.Header.Get("X-Receipt-Id")
}

// The story mappings are for, through the real API, Temporal and worker:
// an ERP posts its own invoice documents through a mapping and they are
// recorded; the ERP changes its payload and its posts fail, kept; support
// fixes the mapping, tries it on a failed receipt, and a bulk replay
// records every failed invoice exactly once.
func TestAMappingFixedAfterASenderChangeReplaysItsFailuresOnce(t *testing.T) {
	f := newInbound(t)
	key := f.apiKey()
	url, epID, _ := f.endpoint(domain.ActionOrderInvoice, false)
	path := "/api/v1/inbound/endpoints/" + epID + "/mapping"

	v1 := `function map(post) {
  const inv = post.body.Invoice;
  return {order_ref: inv.SalesOrder, invoice_ref: inv.Number, amount_minor: Math.round(inv.Amount * 100)};
}`
	body, _ := json.Marshal(map[string]string{"source": v1})
	if status, raw := f.call("PUT", path, key, string(body), nil); status != 201 {
		t.Fatalf("set v1: %d %s", status, raw)
	}
	// 1. The ERP's own documents are mapped and recorded.
	for i := 1; i <= 2; i++ {
		status, out, _ := f.rawPost(url, fmt.Sprintf(`{"Invoice": {"SalesOrder": "SO-1", "Number": "ERP-INV-%d", "Amount": 1.5}}`, i))
		if status != 200 || out["outcome"] != "applied" {
			t.Fatalf("mapped post %d: %d %v", i, status, out)
		}
	}
	// 2. The ERP changes its payload: every post now fails, and is kept.
	var failed []string
	for i := 3; i <= 5; i++ {
		status, out, receipt := f.rawPost(url, fmt.Sprintf(`{"document": {"type": "invoice", "order": "SO-1", "no": "ERP-INV-%d", "total": "2.00"}}`, i))
		msg, _ := out["error"].(string)
		if status != 422 || !strings.HasPrefix(msg, "mapping failed: TypeError") || out["mapping_version"] != float64(1) {
			t.Fatalf("post %d after the change: %d %v", i, status, out)
		}
		failed = append(failed, receipt)
	}
	// 3. Support fixes the mapping and tries it on a failed receipt first.
	v2 := `function map(post) {
  const d = post.body.document;
  if (d) return {order_ref: d.order, invoice_ref: d.no, amount_minor: Math.round(Number(d.total) * 100)};
  const inv = post.body.Invoice;
  return {order_ref: inv.SalesOrder, invoice_ref: inv.Number, amount_minor: Math.round(inv.Amount * 100)};
}`
	test, _ := json.Marshal(map[string]any{"source": v2, "receipt_id": failed[0], "dry_run": true})
	var tried struct {
		Result     string           `json:"result"`
		MappedBody map[string]any   `json:"mapped_body"`
		Outcome    string           `json:"outcome"`
		Changes    []map[string]any `json:"changes"`
	}
	if status, raw := f.call("POST", path+"/test", key, string(test), &tried); status != 200 || tried.Result != "mapped" ||
		tried.MappedBody["invoice_ref"] != "ERP-INV-3" || tried.Outcome != "applied" || len(tried.Changes) == 0 {
		t.Fatalf("test on a failed receipt: %d %s", status, raw)
	}
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref = 'ERP-INV-3'`); n != 0 {
		t.Fatalf("the test recorded the invoice")
	}
	body, _ = json.Marshal(map[string]string{"source": v2})
	if status, raw := f.call("PUT", path, key, string(body), nil); status != 201 {
		t.Fatalf("set v2: %d %s", status, raw)
	}
	// 4. A bulk replay of the failures maps each stored body with the fixed
	// mapping and records each invoice once.
	var batch struct {
		ID                                                       string
		Status                                                   string
		Total, Done, Applied, Unchanged, Parked, Failed, Skipped int
	}
	if status, raw := f.call("POST", "/api/v1/inbound/replays", key,
		fmt.Sprintf(`{"endpoint_id": %q, "outcome": "failed"}`, epID), &batch); status != 202 || batch.Total != len(failed) {
		t.Fatalf("bulk replay: %d %s", status, raw)
	}
	f.eventuallyWithin(2*time.Minute, "the batch completed", func() bool {
		if status, raw := f.call("GET", "/api/v1/inbound/replays/"+batch.ID, key, "", &batch); status != 200 {
			t.Fatalf("progress: %d %s", status, raw)
		}
		return batch.Status == "completed"
	})
	if batch.Applied != len(failed) || batch.Failed+batch.Skipped+batch.Unchanged+batch.Parked != 0 {
		t.Fatalf("batch %+v", batch)
	}
	if n := f.count(`SELECT count(*) FROM order_invoices WHERE org_id = $1 AND invoice_ref LIKE 'ERP-INV-%'`); n != 5 {
		t.Fatalf("%d invoices recorded, want the 2 first and the 3 replayed", n)
	}
	for _, id := range failed {
		if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND replay_of = $2 AND mapping_version = 2
			AND outcome = 'applied'`, id); n != 1 {
			t.Fatalf("receipt %s was replayed %d times under version 2", id, n)
		}
	}
	// The originals keep the body as sent and the version that failed.
	r := f.receipt(failed[0])
	if r.MappingVersion == nil || *r.MappingVersion != 1 || !strings.Contains(string(r.RawBody()), `"document"`) {
		t.Fatalf("original receipt %+v", r)
	}
}
