package api

import (
	"context"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// MaxBulkProducts is the most products one POST /products/bulk may carry.
const MaxBulkProducts = 10000

// maxBulkBody is the body limit of POST /products/bulk, with room for 10000
// products with generous attributes. A larger body is refused with 413
// before it is read whole.
const maxBulkBody = 32 << 20

// ListProductsInput is the query of GET /api/v1/products.
type ListProductsInput struct {
	Search   string `query:"search" maxLength:"200" doc:"Matches title, SKU and category (case-insensitive substring)."`
	SKU      string `query:"sku" maxLength:"64" doc:"Exact SKU."`
	Category string `query:"category" maxLength:"200" doc:"Exact category."`
	LargePage
	Since
}

// ListProductsOutput is a page of products in SKU order.
type ListProductsOutput struct {
	Body struct {
		Products   []domain.Product `json:"products" doc:"Products in SKU order; with updated_since, oldest change first."`
		NextCursor *string          `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// BulkProductsBody documents the body of POST /api/v1/products/bulk. The
// handler reads the raw body itself, so that a malformed product is that
// row's error and not the whole call's, and the row past the limit is
// refused before the rest is decoded.
type BulkProductsBody struct {
	Products []domain.ProductInput `json:"products" maxItems:"10000" doc:"At most 10000 products, upserted by SKU. Rows that break a rule are reported by index and the others are still written; when a SKU repeats, its last row is kept and the earlier ones are reported."`
	SchemaID *string               `json:"schema_id,omitempty" format:"uuid" doc:"A catalogue schema of the organisation: each product's attrs are coerced to its declared types (\"12\" to 12, \"yes\" to true, enum values checked)."`
}

// BulkProductsInput is the request of POST /api/v1/products/bulk; its body
// is read as it arrives (requestBody).
type BulkProductsInput struct{}

// BulkProductsOutput is the answer of a bulk import.
type BulkProductsOutput struct {
	Body struct {
		Upserted  int               `json:"upserted" doc:"Products written (created, updated, or already as sent)."`
		Created   int               `json:"created" doc:"New SKUs."`
		Updated   int               `json:"updated" doc:"Existing SKUs whose values changed."`
		Unchanged int               `json:"unchanged" doc:"Existing SKUs already as sent (not rewritten)."`
		Errors    []domain.RowError `json:"errors" doc:"Rows not written, in row order."`
	}
}

func (s *Server) registerProducts() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-products",
		Method:      http.MethodGet,
		Path:        "/api/v1/products",
		Summary:     "List products",
		Description: "The organisation's catalogue products, in SKU order.",
		Tags:        []string{"Products"},
	}, domain.ScopeProductsRead, "", http.StatusBadRequest), s.listProducts)

	registerRawJSON(s, access(huma.Operation{
		OperationID: "bulk-upsert-products", Method: http.MethodPost, Path: "/api/v1/products/bulk", Tags: []string{"Products"},
		Summary: "Upsert products in bulk",
		Description: "Creates or updates up to 10000 products by SKU, with the import wizard's rules: sku (1-64 characters) and " +
			"title (1-500) required; category at most 200 characters; uom defaults to each; price_minor and lead_time_days " +
			"whole numbers >= 0 or null; stock_qty >= 0 or null; currency defaults to the organisation's; status active, " +
			"draft or archived (default active); attrs an object. Valid rows are written in one statement and invalid ones " +
			"reported; retrying the same batch is safe. 402 (and nothing written) when existing products plus the batch's " +
			"new SKUs would pass the plan's product cap; 413 above 10000 products or for a body over 32 MB. Emits one " +
			"products.upserted event.",
		MaxBodyBytes: maxBulkBody,
	}, domain.ScopeProductsWrite, "", http.StatusBadRequest, http.StatusPaymentRequired, http.StatusRequestEntityTooLarge),
		reflect.TypeFor[BulkProductsBody](), s.bulkProducts)
	documentProductRows(s.api.OpenAPI().Components.Schemas, reflect.TypeFor[BulkProductsBody]())
}

// productRowDoc describes a row of a products array that is not a product.
const productRowDoc = "Any other value is taken too and refused alone: a row that is not an object, has a field of the " +
	"wrong type, an unknown or repeated field, or breaks a rule (sku, title and the other limits of ProductInput) is " +
	"not written and is named in the answer's errors by its index, with the reason; the other rows are still written."

// documentProductRows documents the products of a registered body type as
// the rows the service reads (domain.ReadProductsBody): each row is a
// ProductInput or any other value, which is that row's error, not the
// whole body's. A client that validates its requests sends what the service
// would partly accept.
func documentProductRows(reg huma.Registry, body reflect.Type) {
	schema := reg.SchemaFromRef(reg.Schema(body, true, "").Ref)
	products := schema.Properties["products"]
	products.Items = &huma.Schema{
		Description: "A product (ProductInput) to upsert. " + productRowDoc,
		AnyOf:       []*huma.Schema{reg.Schema(reflect.TypeFor[domain.ProductInput](), true, ""), {Description: "A row that is not a product."}},
	}
}

func (s *Server) listProducts(ctx context.Context, in *ListProductsInput) (*ListProductsOutput, error) {
	out := &ListProductsOutput{}
	filter := db.ProductFilter{Search: in.Search, SKU: in.SKU, Category: in.Category}
	if !in.UpdatedSince.IsZero() {
		var err error
		out.Body.Products, out.Body.NextCursor, err = changedList(ctx, s, "products", in.Cursor, in.Limit, in.UpdatedSince,
			[]string{"search", in.Search, "sku", in.SKU, "category", in.Category},
			func(p db.Page) ([]domain.Product, error) { return s.db.ListChangedProducts(ctx, orgID(ctx), filter, p) },
			nil, func(p domain.Product) (domain.Timestamp, uuid.UUID) { return p.UpdatedAt, p.ID })
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	bound := binding(ctx, "search", in.Search, "sku", in.SKU, "category", in.Category)
	key, err := s.after(in.Cursor, "products", bound, 1)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	afterSKU := ""
	if key != nil {
		afterSKU = key[0]
	}
	rows, err := s.db.ListProducts(ctx, orgID(ctx), filter, afterSKU, in.Limit)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out.Body.Products, out.Body.NextCursor = page(s, rows, in.Limit, "products", bound,
		func(p domain.Product) []string { return []string{p.SKU} })
	return out, nil
}

func (s *Server) bulkProducts(ctx context.Context, in *BulkProductsInput) (*BulkProductsOutput, error) {
	raw := requestBody(ctx)
	body, err := domain.ReadProductsBody(raw, MaxBulkProducts)
	if refused := raw.Settle(err); refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	org, err := s.db.Organisation(ctx, orgID(ctx))
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	var schema *domain.CatalogueSchema
	if body.SchemaID != nil {
		id, err := uuid.Parse(*body.SchemaID)
		if err != nil {
			return nil, s.fail(ctx, domain.Errorf(domain.EINVALID, "schema_id is not a UUID"))
		}
		sc, err := s.db.CatalogueSchema(ctx, org.ID, id)
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			return nil, s.fail(ctx, domain.Errorf(domain.EINVALID, "schema_id %s is not a catalogue schema of the organisation", id))
		}
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		schema = &sc
	}
	batch := body.PrepareProducts(schema, org.Currency)
	out := &BulkProductsOutput{}
	out.Body.Errors = batch.Errors
	if len(batch.Products) > 0 {
		res, err := s.db.UpsertProducts(ctx, org.ID, batch.Products)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		out.Body.Created, out.Body.Updated, out.Body.Unchanged = res.Created, res.Updated, res.Unchanged
		out.Body.Upserted = len(batch.Products)
	}
	return out, nil
}
