package api

import (
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// inboundDescription is the description of POST /api/in/{token}.
var inboundDescription = "The token in the URL is the credential: treat the URL as a password; no Authorization header is " +
	"read but a basic endpoint's. Each endpoint performs one action, chosen when it was created: " + domain.ActionList() + "; the body is that " +
	"action's shape (upsert_customers takes at most 500 customers, upsert_products at most 1000 products). Checks run in this order: 404 unknown token, 429 more than 120 " +
	"posts at once (refilling at two a second), 409 endpoint paused, 413 body over 1 MB, 401 the sender not verified, " +
	"as the endpoint's verification says (PUT /api/v1/inbound/endpoints/{id}/verification): service, the default, when the " +
	"endpoint requires a signature, either scheme of the service's, within five minutes (header X-Service-Signature, or the " +
	"Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature); hmac, the sender's own HMAC of the body " +
	"as sent in the header the endpoint names (GitHub's X-Hub-Signature-256: sha256=<hex>, Shopify's " +
	"X-Shopify-Hmac-Sha256: <base64>), of <timestamp>.<body> when the endpoint names a timestamp header too, within its " +
	"tolerance; basic, HTTP Basic authentication (Authorization: Basic, WWW-Authenticate on the 401); none, nothing. " +
	"Then 400 Idempotency-Key malformed, then a " +
	"repeat of an earlier post (below), 400 not the action's shape (naming the field), 413 too many customers or " +
	"products. Each post from 409 on is kept as a receipt (X-Receipt-Id), repeats aside; an accepted one runs as a " +
	"durable workflow. Sender retries: a post with the same Idempotency-Key on the same endpoint within 24 hours, or " +
	"on a signed endpoint the same signature value (of either scheme, or the sender's HMAC) or, without an Idempotency-Key, the same " +
	"verified webhook-id, is the same post: it is answered with the first post's status " +
	"and body, its X-Receipt-Id and the header Idempotent-Replayed: true, and applies nothing again; the same key with " +
	"another body answers 422; a repeat while the first post has no answer yet answers 409; a first post answered 5xx " +
	"did not go through, and a retry of it runs anew. 200: done, the body summarises what changed; 202: accepted (a " +
	"request was opened, the record named does not exist yet and the post waits for it, or it takes longer than 20 " +
	"seconds); 409 the record cannot move that way; 422 understood but not applicable (unknown status, an invoice that " +
	"does not fit, no owner to attribute a request to). Retry 429 and 5xx with a growing pause, with the same " +
	"Idempotency-Key; never retry a 4xx unchanged."

// documentInbound adds POST /api/in/{token} to the OpenAPI document. It is
// served outside Huma, because its checks run in a fixed order before the
// body is read whole.
func (s *Server) documentInbound() {
	reg := s.api.OpenAPI().Components.Schemas
	var bodies []*huma.Schema
	examples := map[string]*huma.Example{}
	for _, d := range domain.ActionDefs() {
		bodies = append(bodies, reg.Schema(d.Doc, true, ""))
		examples[string(d.Action)] = &huma.Example{Summary: d.Summary, Value: d.Example}
	}
	// An endpoint with a mapping takes its sender's own payload.
	bodies = append(bodies, &huma.Schema{Description: "On an endpoint with a mapping: the sender's own JSON, any value, " +
		"which the mapping turns into the action's body (docs/mappings.md); a body its mapping fails on answers 422."})
	limitItems(reg, reflect.TypeFor[domain.InboundProductsBody](), "products", domain.MaxInboundProducts)
	documentProductRows(reg, reflect.TypeFor[domain.InboundProductsBody]())
	limitItems(reg, reflect.TypeFor[domain.InboundCustomersBody](), "customers", domain.MaxInboundCustomers)
	// invoiced_qty is read by domain.ParseInvoicedQty: a number or lines.
	invoice := reg.SchemaFromRef(reg.Schema(reflect.TypeFor[domain.SupplierInvoiceBody](), true, "").Ref)
	invoice.Properties["invoiced_qty"] = &huma.Schema{
		Description: "What the supplier invoices: the total quantity across lines, or a quantity per line position.",
		OneOf: []*huma.Schema{
			{Type: huma.TypeNumber, Minimum: floatPtr(0)},
			{Type: huma.TypeArray, Items: &huma.Schema{
				Type: huma.TypeObject, Required: []string{"position", "qty"}, AdditionalProperties: false,
				Properties: map[string]*huma.Schema{
					"position": {Type: huma.TypeInteger, Minimum: floatPtr(1)},
					"qty":      {Type: huma.TypeNumber, Minimum: floatPtr(0)},
				},
			}},
		},
	}
	answer := documentInboundAnswers(reg)
	errRef := reg.Schema(reflect.TypeFor[ErrorBody](), true, "")
	receipt := &huma.Header{Description: "The id of the receipt that records the post.",
		Schema: &huma.Schema{Type: huma.TypeString, Format: "uuid"}}
	replayed := &huma.Header{Description: "true when this is the answer of an earlier post with the same Idempotency-Key or signature.",
		Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"true"}}}
	errResp := func(desc string) *huma.Response {
		return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: errRef}},
			Headers: map[string]*huma.Header{"X-Receipt-Id": receipt, "Idempotent-Replayed": replayed}}
	}
	refusal := reg.Schema(reflect.TypeFor[inboundRefusalDoc](), true, "")
	refusalResp := func(desc string) *huma.Response {
		r := errResp(desc)
		r.Content["application/json"].Schema = refusal
		return r
	}
	okResp := func(desc string) *huma.Response {
		r := errResp(desc)
		r.Content["application/json"].Schema = answer
		return r
	}
	s.api.OpenAPI().AddOperation(&huma.Operation{
		OperationID: "post-inbound",
		Method:      http.MethodPost,
		Path:        "/api/in/{token}",
		Tags:        []string{"Inbound"},
		Summary:     "Post to an inbound endpoint",
		Description: inboundDescription,
		// The token in the path is the credential; no security scheme applies.
		Security: []map[string][]string{},
		Metadata: map[string]any{metaDeclared: []int{400, 401, 402, 404, 409, 413, 422, 429, 500}},
		Parameters: []*huma.Param{
			{Name: "token", In: "path", Required: true, Description: "The endpoint's token: the credential.",
				Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(128)}},
			{Name: signature.Header, In: "header", Description: "Required when the endpoint requires signatures (401 when " +
				"missing or wrong), ignored otherwise: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\" keyed with " +
				"the endpoint's secret, the whole whsec_ string as UTF-8>, with t within five minutes of the service's clock. " +
				"Several v1 values may be given; any match passes. The construction Stripe uses.",
				Schema:  &huma.Schema{Type: huma.TypeString},
				Example: "t=1795340000,v1=5f2b8c0e1d4a7b9c3e6f8a1b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d"},
			{Name: signature.HeaderWebhookID, In: "header", Description: "Standard Webhooks, the other accepted signature " +
				"scheme: the message id, 1 to 255 printable ASCII characters. With webhook-timestamp and webhook-signature, " +
				"instead of X-Service-Signature. Without an Idempotency-Key, a verified webhook-id names the post for retries.",
				Schema: &huma.Schema{Type: huma.TypeString, MinLength: intPtr(1), MaxLength: intPtr(signature.MaxMessageID)}, Example: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"},
			{Name: signature.HeaderWebhookTimestamp, In: "header", Description: "Standard Webhooks: unix seconds, within five " +
				"minutes of the service's clock.", Schema: &huma.Schema{Type: huma.TypeString, Pattern: "^[0-9]+$"}, Example: "1795340000"},
			{Name: signature.HeaderWebhookSignature, In: "header", Description: "Standard Webhooks: space-separated " +
				"v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<raw body>\"> keyed with the bytes the endpoint's " +
				"secret encodes after whsec_; any match passes.", Schema: &huma.Schema{Type: huma.TypeString},
				Example: "v1,TUBPtBFca/cBAegoufeoeHE+G/x3hGwUaO8N+yI+shw="},
			{Name: IdempotencyKeyHeader, In: "header", Description: "Names the post for the sender's retries: a post with " +
				"the same key on the same endpoint within 24 hours is answered with the first post's answer and applies " +
				"nothing again. 1 to 255 printable ASCII characters (400 otherwise).",
				Schema:  &huma.Schema{Type: huma.TypeString, MinLength: intPtr(1), MaxLength: intPtr(255), Pattern: "^[\\x20-\\x7E]+$"},
				Example: "erp-7f3a9c"},
		},
		RequestBody: &huma.RequestBody{
			Required:    true,
			Description: "The body of the endpoint's action. The endpoint, not the body, decides the action: bodies of different actions can look alike (an order_ref and a status are both an erp_order_status and a delivery_status), so the body is any of these shapes and is read as the endpoint's one; an endpoint with a mapping takes its sender's own JSON instead.",
			Content: map[string]*huma.MediaType{"application/json": {
				Schema:   &huma.Schema{AnyOf: bodies},
				Examples: examples,
			}},
		},
		Responses: map[string]*huma.Response{
			"200": okResp("Done: what changed."),
			"202": okResp("Accepted: a request was opened, the named record does not exist yet (outcome parked), or the post is still running (outcome pending)."),
			"400": errResp("The body is not valid JSON or not the action's shape, or the Idempotency-Key is malformed."),
			"401": withChallenge(errResp("The sender is not verified as the endpoint's verification says: the service's signature " +
				"(X-Service-Signature or Standard Webhooks) or the sender's HMAC missing, wrong or stale, or HTTP Basic credentials " +
				"missing or wrong.")),
			"402": errResp("A products upsert would pass the plan's product cap."),
			"404": {Description: "No endpoint has that token.", Content: map[string]*huma.MediaType{"application/json": {Schema: errRef}}},
			"409": errResp("The endpoint is paused, the record cannot move that way, or the first post with this Idempotency-Key or signature has no answer yet."),
			"413": errResp("Body over 1 MB, or more than 500 customers or 1000 products."),
			"422": refusalResp("Understood but not applicable, the endpoint's mapping failed on the body (with the mapping's version), or the Idempotency-Key was used with another body."),
			"429": {Description: "Too many posts at once: Rate limited.", Content: map[string]*huma.MediaType{"application/json": {Schema: errRef}}},
			"500": errResp("Fault on the service side; retry later."),
		},
	})
}

// withChallenge documents a 401's WWW-Authenticate.
func withChallenge(r *huma.Response) *huma.Response {
	r.Headers["WWW-Authenticate"] = &huma.Header{Description: "On a basic endpoint's 401: the Basic challenge.",
		Schema: &huma.Schema{Type: huma.TypeString}}
	return r
}

// limitItems sets the maxItems of an array property of a registered schema.
func limitItems(reg huma.Registry, t reflect.Type, property string, limit int) {
	schema := reg.SchemaFromRef(reg.Schema(t, true, "").Ref)
	schema.Properties[property].MaxItems = &limit
}

func intPtr(n int) *int { return &n }

// enumActions lists the inbound actions as the enum of the action
// property, when it has one, of a registered schema (domain.Actions is
// their one list), and returns the schema.
func enumActions(reg huma.Registry, ref *huma.Schema) *huma.Schema {
	if p := reg.SchemaFromRef(ref.Ref).Properties["action"]; p != nil && p.Type == huma.TypeString {
		p.Enum = nil
		for _, a := range domain.Actions {
			p.Enum = append(p.Enum, string(a))
		}
	}
	return ref
}

// inboundAnswerDoc documents the fields of every inbound post's 2xx answer;
// each action adds its own (domain.ActionDef.Answer).
type inboundAnswerDoc struct {
	ReceiptID  uuid.UUID       `json:"receipt_id" doc:"The receipt that records the post (X-Receipt-Id too)."`
	Action     domain.Action   `json:"action" doc:"The endpoint's action: it decides which fields follow."`
	Outcome    domain.Outcome  `json:"outcome" enum:"applied,unchanged,parked,pending,ignored" doc:"applied: the post changed something; unchanged: it changed nothing; parked: it waits for the record it names (202); pending: it is still running (202); ignored: the endpoint's mapping returned null, and nothing was applied."`
	Changes    []domain.Change `json:"changes" doc:"The changes the post made; empty for a parked, pending or ignored post."`
	WaitingFor string          `json:"waiting_for,omitempty" doc:"The record a parked post waits for."`
}

// inboundRefusalDoc documents an inbound post's 422: the error, and the
// version of the endpoint's mapping when it was the mapping that failed.
type inboundRefusalDoc struct {
	Error          string `json:"error" doc:"What went wrong."`
	MappingVersion int    `json:"mapping_version,omitempty" doc:"The version of the endpoint's mapping that failed on the body; absent when no mapping failed."`
}

// inboundAnswerName is the component schema of an inbound post's 2xx
// answer: one of the actions' answers, chosen by action.
const inboundAnswerName = "InboundAnswer"

// documentInboundAnswers describes the 2xx answer of each action, from the
// action table: the common fields (inboundAnswerDoc), action fixed to the
// action's name, and the fields of the action's Answer type, nothing else.
// Each is the component schema of that type; InboundAnswer is one of them,
// chosen by action (its discriminator), and is returned as a reference.
func documentInboundAnswers(reg huma.Registry) *huma.Schema {
	common := huma.SchemaFromType(reg, reflect.TypeFor[inboundAnswerDoc]())
	union := &huma.Schema{
		Description: "The answer of a post that went through (or is still running), by the endpoint's action: the " +
			"fields of every answer, and the action's own, which a parked, pending or ignored post's answer leaves out.",
		Discriminator: &huma.Discriminator{PropertyName: "action", Mapping: map[string]string{}},
	}
	for _, d := range domain.ActionDefs() {
		ref := reg.Schema(d.Answer, true, "")
		schema := reg.SchemaFromRef(ref.Ref)
		props := make(map[string]*huma.Schema, len(common.Properties)+len(schema.Properties))
		for name, p := range schema.Properties {
			if common.Properties[name] != nil {
				panic("the answer of " + string(d.Action) + " repeats the common field " + name)
			}
			props[name] = p
		}
		for name, p := range common.Properties {
			props[name] = p
		}
		// The constant's name, for generators that name one after the
		// value alone (oapi-codegen), which would take the name of a type.
		varName := d.Answer.Name() + "Action"
		for _, part := range strings.Split(string(d.Action), "_") {
			varName += strings.ToUpper(part[:1]) + part[1:]
		}
		props["action"] = &huma.Schema{Type: huma.TypeString, Enum: []any{string(d.Action)},
			Description: common.Properties["action"].Description, Extensions: map[string]any{"x-enum-varnames": []string{varName}}}
		schema.Properties = props
		schema.Required = common.Required
		schema.AdditionalProperties = false
		schema.Description = "The answer of a " + string(d.Action) + " post. Its own fields (beside receipt_id, action, " +
			"outcome, changes and waiting_for) come with outcome applied or unchanged."
		schema.PrecomputeMessages()
		union.OneOf = append(union.OneOf, ref)
		union.Discriminator.Mapping[string(d.Action)] = ref.Ref
	}
	reg.Map()[inboundAnswerName] = union
	return &huma.Schema{Ref: "#/components/schemas/" + inboundAnswerName}
}
