package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/yaml"
)

// apiTags groups the operations of the OpenAPI document; every tag an
// operation or webhook uses is declared here, in this order.
var apiTags = []*huma.Tag{
	{Name: "Products", Description: "The organisation's catalogue: paged reads and bulk upserts by SKU."},
	{Name: "Quotes", Description: "Quotes to customers, with their lines and totals (read only)."},
	{Name: "Orders", Description: "Orders, with their lines, deliveries and the invoices an ERP recorded (read only)."},
	{Name: "Stock", Description: "Stock lines, locations and movements (the Stock add-on); movements are the only stock write."},
	{Name: "Deliveries", Description: "Shipments to customers (the Route add-on), read only; they move by inbound delivery_status posts."},
	{Name: "Suppliers", Description: "Suppliers (the Source add-on), read only."},
	{Name: "Purchase orders", Description: "Purchase orders to suppliers (the Source add-on), with their receipts and supplier invoices, read only."},
	{Name: "Customers", Description: "Customer companies: paged reads and batched upserts matched by external id or email domain."},
	{Name: "Requests", Description: "Request threads: open one with its first message, read them with their messages."},
	{Name: "Inbound", Description: "Tokenised inbound URLs that each perform one configured action on what is posted to them; the token in the URL is the credential."},
	{Name: "Webhooks", Description: "Events the service posts to subscribed URLs, signed with the subscription's secret; subscriptions, deliveries and their attempts, resend and recovery."},
	{Name: "Inbound management", Description: "For support staff and integrators: the inbound endpoints, the receipts of what was posted with their traces, replay (one, a dry run, or in bulk) and cancelling a parked post."},
	{Name: "Events", Description: "The outbox as a feed, kept 30 days: what a webhook receiver may have missed."},
}

// License and contact of the OpenAPI document. No licence is granted with
// the API description: its SPDX identifier is a LicenseRef of its own
// (SPDX's form for a licence not on SPDX's list); the 3.0 rendering, where
// a licence has a URL instead, points to the API reference, whose
// description says so (OpenAPI30). The contact is whoever
// runs the deployment that serves it.
var (
	docLicense = &huma.License{Name: "Proprietary", Identifier: "LicenseRef-Proprietary"}
	docContact = &huma.Contact{Name: "The operators of this deployment of the Commerce integration API"}
)

// openAPIRenderings is the suffix of each rendering of the document that
// the service serves besides the 3.1 JSON one.
const (
	openAPI30JSON = "-3.0.json"
	openAPI30YAML = "-3.0.yaml"
)

// specAdapter is chi's Huma adapter, except that the document's OpenAPI 3.0
// renderings are this package's (OpenAPI30) rather than Huma's Downgrade,
// which leaves in what 3.0 does not allow.
type specAdapter struct {
	huma.Adapter
	openAPIPath string
	server      *Server
}

func (a specAdapter) Handle(op *huma.Operation, handler func(huma.Context)) {
	switch op.Path {
	case a.openAPIPath + openAPI30JSON:
		handler = func(ctx huma.Context) {
			b, err := a.server.OpenAPI30()
			if err != nil {
				ctx.SetStatus(500)
				return
			}
			ctx.SetHeader("Content-Type", "application/openapi+json")
			_, _ = ctx.BodyWriter().Write(b)
		}
	case a.openAPIPath + openAPI30YAML:
		handler = func(ctx huma.Context) {
			b, err := a.server.OpenAPI30()
			if err == nil {
				b, err = jsonToYAML(b)
			}
			if err != nil {
				ctx.SetStatus(500)
				return
			}
			ctx.SetHeader("Content-Type", "application/openapi+yaml")
			_, _ = ctx.BodyWriter().Write(b)
		}
	}
	a.Adapter.Handle(op, handler)
}

// OpenAPI30 is the document rendered as OpenAPI 3.0.3, for generators that
// do not read 3.1: Huma's Downgrade, then
//   - security requirements of schemes other than oauth2 and openIdConnect
//     name no scopes (3.0 allows scopes only there); each operation's scope
//     stays in its description and its x-required-scope extension;
//   - the top-level webhooks, which 3.0 does not have, are left out (the
//     3.1 document carries them), and so is the licence's identifier,
//     for which the licence's URL is the API reference;
//   - anyOf a schema and {"type": "null"} (a record or null), which 3.0
//     cannot write, becomes allOf of the schema with nullable: true;
//   - a $ref with other keywords beside it (a property's description),
//     which 3.0 readers ignore, becomes allOf of the reference, the other
//     keywords kept.
func (s *Server) OpenAPI30() ([]byte, error) {
	raw, err := s.api.OpenAPI().Downgrade()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	delete(doc, "webhooks")
	delete(doc, "jsonSchemaDialect")
	if info, ok := doc["info"].(map[string]any); ok {
		if license, ok := info["license"].(map[string]any); ok {
			delete(license, "identifier")
			// 3.0 names a licence by URL: the API reference, whose
			// description says that none is granted.
			license["url"] = s.baseURL + "/api/v1/docs"
		}
	}
	scoped := map[string]bool{}
	if comps, ok := doc["components"].(map[string]any); ok {
		schemes, _ := comps["securitySchemes"].(map[string]any)
		for name, v := range schemes {
			if scheme, ok := v.(map[string]any); ok && (scheme["type"] == "oauth2" || scheme["type"] == "openIdConnect") {
				scoped[name] = true
			}
		}
	}
	unscope := func(v any) {
		reqs, _ := v.([]any)
		for _, r := range reqs {
			req, _ := r.(map[string]any)
			for name := range req {
				if !scoped[name] {
					req[name] = []any{}
				}
			}
		}
	}
	unscope(doc["security"])
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			if o, ok := op.(map[string]any); ok {
				unscope(o["security"])
			}
		}
	}
	pruneSchemas(doc)
	nullableAnyOf(doc)
	wrapRefSiblings(doc)
	return json.Marshal(doc)
}

// nullableAnyOf rewrites every {"anyOf": [s, {"type": "null"}], ...others}
// in v as {"allOf": [s], "nullable": true, ...others}, with "type":
// "object" when s is a $ref (a record).
func nullableAnyOf(v any) {
	switch t := v.(type) {
	case map[string]any:
		if alts, ok := t["anyOf"].([]any); ok {
			var rest []any
			null := false
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && len(m) == 1 && m["type"] == "null" {
					null = true
					continue
				}
				rest = append(rest, a)
			}
			if null {
				t["nullable"] = true
				if len(rest) == 1 {
					delete(t, "anyOf")
					t["allOf"] = rest
					// 3.0's nullable is read beside a type; the records
					// made nullable this way are objects.
					if _, ref := rest[0].(map[string]any)["$ref"]; ref {
						t["type"] = "object"
					}
				} else {
					t["anyOf"] = rest
				}
			}
		}
		for _, child := range t {
			nullableAnyOf(child)
		}
	case []any:
		for _, child := range t {
			nullableAnyOf(child)
		}
	}
}

// wrapRefSiblings rewrites every {"$ref": r, ...others} in v as
// {"allOf": [{"$ref": r}], ...others}.
func wrapRefSiblings(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"]; ok && len(t) > 1 {
			delete(t, "$ref")
			t["allOf"] = []any{map[string]any{"$ref": ref}}
		}
		for _, child := range t {
			wrapRefSiblings(child)
		}
	case []any:
		for _, child := range t {
			wrapRefSiblings(child)
		}
	}
}

// pruneSchemas removes the component schemas nothing in the document refers
// to (those only the webhooks used).
func pruneSchemas(doc map[string]any) {
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if schemas == nil {
		return
	}
	const prefix = "#/components/schemas/"
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, prefix) {
				name := strings.TrimPrefix(ref, prefix)
				if !used[name] {
					used[name] = true
					walk(schemas[name])
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	delete(comps, "schemas")
	walk(doc)
	comps["schemas"] = schemas
	for name := range schemas {
		if !used[name] {
			delete(schemas, name)
		}
	}
}

// declareTags sets the document's top-level tags: those of apiTags that an
// operation or webhook uses, in apiTags' order.
func declareTags(doc *huma.OpenAPI) {
	used := map[string]bool{}
	for _, items := range []map[string]*huma.PathItem{doc.Paths, doc.Webhooks} {
		for _, item := range items {
			for _, op := range operations(item) {
				for _, t := range op.Tags {
					used[t] = true
				}
			}
		}
	}
	doc.Tags = nil
	for _, t := range apiTags {
		if used[t.Name] {
			doc.Tags = append(doc.Tags, t)
		}
	}
}

// operations lists a path item's operations.
func operations(item *huma.PathItem) []*huma.Operation {
	return slices.DeleteFunc([]*huma.Operation{item.Get, item.Put, item.Post, item.Delete, item.Options, item.Head,
		item.Patch, item.Trace}, func(op *huma.Operation) bool { return op == nil })
}

// operationIDPart turns a name such as an event type into a part of an
// operationId.
func operationIDPart(name string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(name)
}

// jsonToYAML renders a JSON document as YAML.
func jsonToYAML(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	err := yaml.Convert(&buf, bytes.NewReader(b))
	return buf.Bytes(), err
}
