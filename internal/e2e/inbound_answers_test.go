package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// answersFile holds real 2xx answers of every inbound action, as this test
// records them: the generated clients' tests decode them with unknown
// fields refused (client.TestGeneratedClientDecodesEveryInboundAnswer and
// .ci/lint-openapi's TypeScript check). With COMMERCE_UPDATE_ANSWERS=1 the
// test writes the file; otherwise it fails when the answers it gets differ
// from the file in shape (their fields and the types of their values).
const answersFile = "../../client/testdata/inbound-answers.json"

// answerPosts are the posts of each action whose answers the file keeps:
// applied, unchanged and parked where the action can be.
var answerPosts = map[domain.Action][]string{
	domain.ActionCreateRequest: {`{"text": "Please quote 200 x M10 nuts", "customer": {"company": "New Buyer GmbH"}, "external_ref": "CRM-7"}`,
		`{"text": "Please quote again", "external_ref": "CRM-7"}`},
	domain.ActionUpsertCustomers: {`{"customers": [{"company": "Buyer Ltd", "email": "c@buyer.example"}, {"company": "Fresh plc", "external_id": "F1"}]}`,
		`{"customers": [{"company": "Fresh plc", "external_id": "F1"}]}`},
	domain.ActionUpsertProducts: {`{"products": [{"sku": "N-1", "title": "Nut"}, {"sku": "N-2"}, 7]}`,
		`{"products": [{"sku": "N-1", "title": "Nut"}]}`},
	domain.ActionERPOrderStatus: {`{"order_ref": "SO-1", "status": "processing", "tracking_url": "https://track.example/1"}`,
		`{"order_ref": "SO-1", "status": "picking"}`, `{"order_ref": "SO-404", "status": "processing"}`},
	domain.ActionOrderInvoice: {`{"order_ref": "SO-1", "invoice_ref": "INV-1", "amount_minor": 1000, "currency": "GBP"}`,
		`{"order_ref": "SO-1", "invoice_ref": "INV-1", "invoice_status": "issued"}`, `{"order_ref": "SO-404", "invoice_ref": "INV-2"}`},
	domain.ActionPurchaseOrderAck: {`{"po_number": "P-SENT", "supplier_ref": "SUP-88", "lines": [{"position": 1, "expected_date": "2026-12-01"}]}`,
		`{"po_number": "P-SENT", "lines": [{"position": 1, "expected_date": "2026-12-01"}]}`, `{"po_number": "P-404"}`},
	domain.ActionSupplierInvoice: {`{"po_number": "P-REC", "invoice_ref": "S-1", "amount_minor": 20000, "invoiced_qty": 14}`,
		`{"po_number": "P-REC", "invoice_ref": "S-1", "amount_minor": 20000, "invoiced_qty": 14}`,
		`{"po_number": "P-404", "invoice_ref": "S-9"}`},
	domain.ActionDeliveryStatus: {`{"delivery_ref": "DN-1", "status": "shipped", "tracking_url": "https://track.example/dn1"}`,
		`{"delivery_ref": "DN-1", "status": "shipped"}`, `{"delivery_ref": "DN-404", "status": "shipped"}`},
}

func TestInboundAnswersOfEveryAction(t *testing.T) {
	f := newInbound(t)
	got := map[string][]json.RawMessage{}
	for _, action := range domain.Actions {
		posts, ok := answerPosts[action]
		if !ok {
			t.Fatalf("no post of action %s: add its posts to answerPosts", action)
		}
		url, _, _ := f.endpoint(action, false)
		for _, body := range posts {
			a := f.post(url, body)
			if a.status != 200 && a.status != 202 {
				t.Fatalf("%s %s: %d %s", action, body, a.status, a.raw)
			}
			got[string(action)] = append(got[string(action)], a.raw)
		}
	}
	if os.Getenv("COMMERCE_UPDATE_ANSWERS") == "1" {
		var buf bytes.Buffer
		buf.WriteString("{\n")
		for i, action := range domain.Actions {
			fmt.Fprintf(&buf, "  %q: [\n", action)
			for j, raw := range got[string(action)] {
				var out bytes.Buffer
				_ = json.Indent(&out, raw, "    ", "  ")
				fmt.Fprintf(&buf, "    %s%s\n", out.String(), map[bool]string{true: ",", false: ""}[j < len(got[string(action)])-1])
			}
			fmt.Fprintf(&buf, "  ]%s\n", map[bool]string{true: ",", false: ""}[i < len(domain.Actions)-1])
		}
		buf.WriteString("}\n")
		if err := os.WriteFile(answersFile, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(answersFile)
	if err != nil {
		t.Fatal(err)
	}
	var kept map[string][]json.RawMessage
	if err := json.Unmarshal(raw, &kept); err != nil {
		t.Fatal(err)
	}
	for action, answers := range got {
		if len(kept[action]) != len(answers) {
			t.Errorf("%s: %d answers kept, %d got: run this test with COMMERCE_UPDATE_ANSWERS=1", action, len(kept[action]), len(answers))
			continue
		}
		for i := range answers {
			if g, k := shape(answers[i]), shape(kept[action][i]); g != k {
				t.Errorf("%s answer %d has the shape\n%s\nthe file keeps\n%s\nrun this test with COMMERCE_UPDATE_ANSWERS=1", action, i, g, k)
			}
		}
	}
	if len(kept) != len(got) {
		t.Errorf("the file keeps answers of %d actions, there are %d", len(kept), len(got))
	}
}

// shape describes a JSON value by its fields and the types of their values,
// for comparing answers whose ids and times differ.
func shape(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "not JSON"
	}
	var lines []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			lines = append(lines, path+": object")
			for k, e := range t {
				walk(path+"."+k, e)
			}
		case []any:
			lines = append(lines, fmt.Sprintf("%s: array of %d", path, len(t)))
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			lines = append(lines, path+": string")
		case float64:
			lines = append(lines, path+": number")
		case bool:
			lines = append(lines, path+": bool")
		default:
			lines = append(lines, path+": null")
		}
	}
	walk("", v)
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
