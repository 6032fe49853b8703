package integrations_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// docExample is one worked example of docs/mappings.md: its code blocks by
// role (post, mapping, mapped).
type docExample map[string]string

// fence is a code block of docs/mappings.md that belongs to an example:
// ```json example=NAME ROLE
var fence = regexp.MustCompile("(?ms)^```[a-z]+ example=([a-z]+) ([a-z]+)\n(.*?)^```")

func docExamples(t *testing.T) map[string]docExample {
	t.Helper()
	raw, err := os.ReadFile("../docs/mappings.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docExample{}
	for _, m := range fence.FindAllStringSubmatch(string(raw), -1) {
		if out[m[1]] == nil {
			out[m[1]] = docExample{}
		}
		out[m[1]][m[2]] = m[3]
	}
	return out
}

func sameJSON(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("the example's body is not JSON: %v\n%s", err, want)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	a, _ := json.Marshal(g)
	b, _ := json.Marshal(w)
	return bytes.Equal(a, b)
}

// The sender examples of docs/mappings.md run as written: each mapping,
// set on an endpoint of its action, maps its post to the body shown, which
// is of the action's shape.
func TestTheMappingExamplesOfTheDocsRunAsWritten(t *testing.T) {
	examples := docExamples(t)
	actions := map[string]domain.Action{"erp": domain.ActionERPOrderStatus, "carrier": domain.ActionDeliveryStatus,
		"invoice": domain.ActionSupplierInvoice}
	if len(examples) < len(actions) {
		t.Fatalf("docs/mappings.md has %d examples, want at least %d", len(examples), len(actions))
	}
	f := newFixture(t)
	for name, action := range actions {
		t.Run(name, func(t *testing.T) {
			ex := examples[name]
			if ex["post"] == "" || ex["mapping"] == "" || ex["mapped"] == "" {
				t.Fatalf("example %s lacks a post, mapping or mapped body: %v", name, ex)
			}
			ep, err := f.db.CreateEndpoint(context.Background(), nil, db.NewEndpoint{OrgID: f.org, AsEmail: "owner@acme.example",
				Name: name, Action: action})
			if err != nil {
				t.Fatal(err)
			}
			f.setMapping(ep.ID, ex["mapping"])
			res, err := f.service.TestEndpointMapping(context.Background(), f.org, ep.ID,
				integrations.MappingTest{Body: json.RawMessage(ex["post"])})
			if err != nil || res.Result != integrations.MappingMapped {
				t.Fatalf("%+v %v (error %v)", res, err, res.Error)
			}
			if !sameJSON(t, res.MappedBody, []byte(ex["mapped"])) {
				t.Fatalf("mapped to %s, the docs say %s", res.MappedBody, ex["mapped"])
			}
			// A post to the endpoint's URL is mapped the same way.
			a := f.receive(ep.Token, ex["post"])
			if a.Stage != domain.StageStart || !sameJSON(t, f.receipt(a.ReceiptID).ActionBody(), []byte(ex["mapped"])) {
				t.Fatalf("post: %+v", a)
			}
		})
	}
}

// The receiver example of docs/mappings.md runs as written: its
// transformation makes the body shown of its event, with its header, and
// skips an event it does not want.
func TestTheTransformationExampleOfTheDocsRunsAsWritten(t *testing.T) {
	ex := docExamples(t)["chat"]
	if ex["event"] == "" || ex["transformation"] == "" || ex["sent"] == "" {
		t.Fatalf("the chat example lacks an event, transformation or body sent: %v", ex)
	}
	f := newFixture(t)
	ctx := context.Background()
	sub, err := f.db.CreateSubscription(ctx, f.sealer, db.NewSubscription{OrgID: f.org, URL: "https://chat.example/hooks/1",
		EventTypes: []string{domain.EventOrderStatusChanged}})
	if err != nil {
		t.Fatal(err)
	}
	var event struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(ex["event"]), &event); err != nil {
		t.Fatal(err)
	}
	source := ex["transformation"]
	res, err := f.service.TestTransformation(ctx, f.org, sub.ID, integrations.TransformationTest{Source: &source,
		Event: &integrations.TestEvent{Type: event.Type, Data: event.Data}})
	if err != nil || res.Result != integrations.TransformTransformed {
		t.Fatalf("%+v %v", res, err)
	}
	if !sameJSON(t, res.Body, []byte(ex["sent"])) || len(res.Headers) != 1 || res.Headers[0].Name != "X-Chat-Channel" || res.Headers[0].Value != "#orders" {
		t.Fatalf("sent %s with %v", res.Body, res.Headers)
	}
	moving := json.RawMessage(strings.Replace(string(event.Data), `"to": "fulfilled"`, `"to": "in_progress"`, 1))
	res, err = f.service.TestTransformation(ctx, f.org, sub.ID, integrations.TransformationTest{Source: &source,
		Event: &integrations.TestEvent{Type: event.Type, Data: moving}})
	if err != nil || res.Result != integrations.TransformSkipped {
		t.Fatalf("an order only moving: %+v %v", res, err)
	}
}
