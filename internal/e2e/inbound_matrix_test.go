package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// actionCase is one action's good post, the status it answers, and a post
// of the wrong shape with the field its 400 names.
type actionCase struct {
	good     string
	status   int
	bad      string
	badField string
}

var actionCases = map[domain.Action]actionCase{
	domain.ActionCreateRequest:    {`{"text": "Please quote 5 bolts"}`, 202, `{"text": 5}`, "text"},
	domain.ActionUpsertCustomers:  {`{"customers": [{"company": "Matrix Ltd"}]}`, 200, `{"customers": {}}`, "customers"},
	domain.ActionUpsertProducts:   {`{"products": [{"sku": "M-1", "title": "Matrix"}]}`, 200, `{"products": "M-1"}`, "products"},
	domain.ActionERPOrderStatus:   {`{"order_ref": "SO-1", "status": "processing"}`, 200, `{"order_ref": "SO-1"}`, "status"},
	domain.ActionOrderInvoice:     {`{"order_ref": "SO-1", "invoice_ref": "I-M", "amount_minor": 10}`, 200, `{"order_ref": "SO-1", "amount_minor": 10}`, "invoice_ref"},
	domain.ActionPurchaseOrderAck: {`{"po_number": "P-SENT", "supplier_ref": "S-M"}`, 200, `{"supplier_ref": "S-M"}`, "po_number"},
	domain.ActionSupplierInvoice:  {`{"po_number": "P-REC", "invoice_ref": "SI-M", "amount_minor": 20000}`, 200, `{"po_number": "P-REC", "amount_minor": "20000"}`, "amount_minor"},
	domain.ActionDeliveryStatus:   {`{"delivery_ref": "DN-3", "status": "shipped"}`, 200, `{"delivery_ref": "DN-3", "status": ["shipped"]}`, "status"},
}

// TestEveryActionAnswersEachPipelineStatus posts to a signed endpoint of
// each of the eight actions: its success, and 401, 400, 413, 409, 429 and
// 404 from the pipeline in front of it.
func TestEveryActionAnswersEachPipelineStatus(t *testing.T) {
	f := newInbound(t)
	ctx := context.Background()
	if len(actionCases) != len(domain.Actions) {
		t.Fatalf("%d cases for %d actions", len(actionCases), len(domain.Actions))
	}
	for _, action := range domain.Actions {
		c := actionCases[action]
		url, epID, secret := f.endpoint(action, true)
		now := time.Now()
		expect := func(what string, a answer, status int) {
			t.Helper()
			if a.status != status {
				t.Errorf("%s %s: %d %s, want %d", action, what, a.status, a.raw, status)
			}
		}
		good := f.signedPost(url, secret, c.good, now)
		expect("good post", good, c.status)
		if good.str("outcome") != "applied" || good.receipt == "" {
			t.Errorf("%s good post: outcome %q receipt %q", action, good.str("outcome"), good.receipt)
		}
		expect("unsigned", f.post(url, c.good), 401)
		bad := f.signedPost(url, secret, c.bad, now)
		expect("wrong shape", bad, 400)
		if !strings.Contains(bad.str("error"), c.badField) {
			t.Errorf("%s wrong shape: %q does not name %s", action, bad.str("error"), c.badField)
		}
		expect("over 1 MB", f.signedPost(url, secret, `{"x": "`+strings.Repeat("x", 1<<20)+`"}`, now), 413)

		id := mustID(t, epID)
		if _, err := f.DB.SetEndpointState(ctx, f.org.ID, id, domain.EndpointPaused); err != nil {
			t.Fatal(err)
		}
		expect("paused", f.signedPost(url, secret, c.good, now), 409)
		if _, err := f.DB.SetEndpointState(ctx, f.org.ID, id, domain.EndpointActive); err != nil {
			t.Fatal(err)
		}
		// Spend the endpoint's whole burst at once.
		if _, err := f.DB.Pool().Exec(ctx, `UPDATE rate_limits SET tat = now() + interval '61 seconds' WHERE org_id = $1 AND subject_id = $2`, f.org.ID, id); err != nil {
			t.Fatal(err)
		}
		expect("burst spent", f.signedPost(url, secret, c.good, now), 429)
		if _, err := f.DB.Pool().Exec(ctx, `UPDATE rate_limits SET tat = now() WHERE org_id = $1 AND subject_id = $2`, f.org.ID, id); err != nil {
			t.Fatal(err)
		}
		if _, err := f.DB.SetEndpointState(ctx, f.org.ID, id, domain.EndpointDeleted); err != nil {
			t.Fatal(err)
		}
		expect("deleted", f.signedPost(url, secret, c.good, now), 404)
		// Receipts: the good post, 401, 400, 413 and 409; not the 429 or 404.
		if n := f.count(`SELECT count(*) FROM inbound_receipts WHERE org_id = $1 AND endpoint_id = $2`, epID); n != 5 {
			t.Errorf("%s: %d receipts, want 5", action, n)
		}
	}
}
