package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/commerce-integration/commerce/client"
	"github.com/commerce-integration/commerce/domain"
)

// strictly decodes raw into a T with unknown fields refused, as a client
// that holds the document to its word decodes.
func strictly[T any](raw []byte) (any, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// answerTypes are the generated client's types of each action's answer.
var answerTypes = map[domain.Action]func([]byte) (any, error){
	domain.ActionCreateRequest:    strictly[client.CreateRequestAnswer],
	domain.ActionUpsertCustomers:  strictly[client.UpsertCustomersAnswer],
	domain.ActionUpsertProducts:   strictly[client.UpsertProductsAnswer],
	domain.ActionERPOrderStatus:   strictly[client.ERPOrderStatusAnswer],
	domain.ActionOrderInvoice:     strictly[client.OrderInvoiceAnswer],
	domain.ActionPurchaseOrderAck: strictly[client.PurchaseOrderAckAnswer],
	domain.ActionSupplierInvoice:  strictly[client.SupplierInvoiceAnswer],
	domain.ActionDeliveryStatus:   strictly[client.DeliveryStatusAnswer],
}

// The generated client decodes real answers of every inbound action (the
// end-to-end suite records them in testdata/inbound-answers.json) with
// unknown fields refused: the union InboundAnswer picks the action's type
// by its discriminator, and that type takes every field of the answer.
func TestGeneratedClientDecodesEveryInboundAnswer(t *testing.T) {
	raw, err := os.ReadFile("testdata/inbound-answers.json")
	if err != nil {
		t.Fatal(err)
	}
	var byAction map[string][]json.RawMessage
	if err := json.Unmarshal(raw, &byAction); err != nil {
		t.Fatal(err)
	}
	for _, action := range domain.Actions {
		decode, ok := answerTypes[action]
		if !ok {
			t.Errorf("%s: no generated answer type listed", action)
			continue
		}
		if len(byAction[string(action)]) == 0 {
			t.Errorf("%s: no answer recorded", action)
		}
		for i, a := range byAction[string(action)] {
			where := fmt.Sprintf("%s answer %d", action, i)
			var union client.InboundAnswer
			if err := json.Unmarshal(a, &union); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			picked, err := union.ValueByDiscriminator()
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			v, err := decode(a)
			if err != nil {
				t.Fatalf("%s is not its action's answer with unknown fields refused: %v\n%s", where, err, a)
			}
			if reflect.TypeOf(picked) != reflect.TypeOf(v) {
				t.Fatalf("%s: the discriminator picks %T, the action's type is %T", where, picked, v)
			}
			// Nothing is lost: the decoded answer encodes back to the same JSON.
			back, _ := json.Marshal(v)
			var want, have any
			_ = json.Unmarshal(a, &want)
			_ = json.Unmarshal(back, &have)
			if !reflect.DeepEqual(want, have) {
				t.Fatalf("%s decodes to\n%s\nnot\n%s", where, back, a)
			}
		}
	}
	// A field the document does not name is refused.
	if _, err := strictly[client.ERPOrderStatusAnswer]([]byte(`{"receipt_id": "01a20000-0000-7000-8000-000000000000",
		"action": "erp_order_status", "outcome": "applied", "changes": [], "surprise": 1}`)); err == nil {
		t.Fatal("an unknown field was taken")
	}
}
