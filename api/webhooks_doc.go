package api

import (
	"github.com/danielgtaylor/huma/v2"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// webhookDeliveryDescription is said of every webhook.
const webhookDeliveryDescription = "Posted to every active subscription to this event type, as one delivery with its " +
	"own id. A 2xx answer within 10 seconds is success; anything else is a failed attempt, tried again at the nightly " +
	"run, at most 5 attempts in all. Every attempt carries the same body and delivery id. Verify the signature over " +
	"the raw body before parsing it (X-Service-Signature, or the Standard Webhooks headers); deliveries are not " +
	"ordered and may rarely repeat, so keep the event ids processed."

// documentWebhooks describes the event catalogue under the document's
// top-level webhooks: one entry per event type, its body the event envelope
// with that type's data, and the delivery headers.
func (s *Server) documentWebhooks() {
	doc := s.api.OpenAPI()
	reg := doc.Components.Schemas
	str := func(format string) *huma.Schema { return &huma.Schema{Type: huma.TypeString, Format: format} }
	header := func(name, desc string, schema *huma.Schema, example any) *huma.Param {
		return &huma.Param{Name: name, In: "header", Required: true, Description: desc, Schema: schema, Example: example}
	}
	doc.Webhooks = map[string]*huma.PathItem{}
	for _, d := range domain.EventCatalogue {
		eventType := d.Type
		envelope := &huma.Schema{
			Type:                 huma.TypeObject,
			Description:          "The event: its id, type, when it happened, and its data.",
			Required:             []string{"id", "type", "created_at", "data"},
			AdditionalProperties: false,
			Properties: map[string]*huma.Schema{
				"id":         {Type: huma.TypeString, Format: "uuid", Description: "The event's id; the same on every delivery and attempt of the event."},
				"type":       {Type: huma.TypeString, Enum: []any{eventType}},
				"created_at": {Type: huma.TypeString, Format: "date-time", Description: "When the change happened (RFC 3339 UTC, milliseconds)."},
				"data":       enumActions(reg, reg.Schema(d.Data, true, "")),
			},
		}
		doc.Webhooks[eventType] = &huma.PathItem{Post: &huma.Operation{
			OperationID: "event-" + operationIDPart(eventType),
			Summary:     eventType,
			Description: d.When + "\n\n" + webhookDeliveryDescription,
			Tags:        []string{"Webhooks"},
			// The signature headers, not a security scheme, authenticate a delivery.
			Security: []map[string][]string{},
			Parameters: []*huma.Param{
				header("X-Service-Event-Id", "The event's id.", str("uuid"), nil),
				header("X-Service-Event-Type", "The event's type.", &huma.Schema{Type: huma.TypeString, Enum: []any{eventType}}, eventType),
				header("X-Service-Delivery-Id", "The delivery's id: the same on every attempt of the delivery.", str("uuid"), nil),
				header("X-Service-Attempt", "The attempt's number, from 1 to 5.", &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(1), Maximum: floatPtr(5)}, 1),
				header(signature.Header, "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\" keyed with the subscription's "+
					"secret, the whole whsec_ string as UTF-8>; while a secret is rotated, one v1 per secret. Refuse a t more than "+
					"five minutes from your clock. The construction Stripe uses.", str(""),
					"t=1795340000,v1=5f2b8c0e1d4a7b9c3e6f8a1b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d"),
				header("webhook-id", "Standard Webhooks (standardwebhooks.com): the event's id.", str(""), nil),
				header("webhook-timestamp", "Standard Webhooks: when the attempt was signed, in unix seconds.", str(""), "1795340000"),
				header("webhook-signature", "Standard Webhooks: v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<raw body>\" "+
					"keyed with the base64-decoded part of the secret after whsec_>; space separated, one per secret, while a secret is "+
					"rotated. Standard Webhooks libraries verify it.", str(""), nil),
			},
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
				"application/json": {Schema: envelope},
			}},
			Responses: map[string]*huma.Response{
				"2XX":     {Description: "Received: the delivery succeeded. The answer's body is ignored (support sees its first 1 KB)."},
				"default": {Description: "Any other answer, or none within 10 seconds: the attempt failed and is tried again at the nightly run."},
			},
		}}
	}
}

func floatPtr(f float64) *float64 { return &f }
