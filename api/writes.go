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

// Body limits. A body beyond its route's limit is refused with 413 before it
// is read whole. The bulk limit leaves room for 10000 products with generous
// attributes; the others hold the largest valid body even with every
// character written as a JSON \u escape (500 customers with every field at
// its maximum length; a request of 100000 characters).
const (
	maxBulkBody      = 32 << 20
	maxCustomersBody = 8 << 20
	maxRequestBody   = 2 << 20
)

// BulkProductsBody documents the body of POST /api/v1/products/bulk. The
// handler reads the raw body itself, so that a malformed product is that
// row's error and not the whole call's.
type BulkProductsBody struct {
	Products []domain.ProductInput `json:"products" doc:"At most 10000 products, upserted by SKU. Rows that break a rule are reported by index and the others are still written; when a SKU repeats, its last row is kept and the earlier ones are reported."`
	SchemaID *string               `json:"schema_id,omitempty" format:"uuid" doc:"A catalogue schema of the organisation: each product's attrs are coerced to its declared types (\"12\" to 12, \"yes\" to true, enum values checked)."`
}

// BulkProductsInput is the request of POST /api/v1/products/bulk.
type BulkProductsInput struct {
	RawBody []byte
}

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

// CustomersInput is the request of POST /api/v1/customers.
type CustomersInput struct {
	Body struct {
		Customers []domain.CustomerInput `json:"customers" maxItems:"500" doc:"At most 500 customers. Matched by external_id, then by email domain (free-mail domains never match); matched ones are updated, others created. Any invalid entry rejects the call, naming its index, and nothing is written."`
	}
}

// CustomersOutput counts what a customers upsert did.
type CustomersOutput struct{ Body db.CustomerUpsert }

// CreateRequestInput is the request of POST /api/v1/requests.
type CreateRequestInput struct {
	Body struct {
		Text  string `json:"text" minLength:"1" maxLength:"100000" doc:"RFQ or enquiry text, at most 100000 characters."`
		Title string `json:"title,omitempty" maxLength:"200" doc:"At most 200 characters; defaults to the text's first line."`
	}
}

// CreateRequestOutput is the request thread just opened.
type CreateRequestOutput struct {
	Body struct {
		ID    uuid.UUID `json:"id" doc:"The request thread's id."`
		Title string    `json:"title" doc:"Its title."`
		URL   string    `json:"url" doc:"Where the request opens in the AI area."`
	}
}

// MovementInput is the request of POST /api/v1/stock/movements.
type MovementInput struct {
	Body domain.MovementInput
}

// MovementOutput is a movement and the stock lines it changed; 201 when it
// was applied, 200 when its idempotency key had been applied before.
type MovementOutput struct {
	Status int
	Body   db.MovementResult
}

func (s *Server) registerWrites() {
	bulkBody := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[BulkProductsBody](), true, "")
	// The handler enforces the limit (413, not a validation error); the
	// schema states it.
	if named := s.api.OpenAPI().Components.Schemas.SchemaFromRef(bulkBody.Ref); named != nil {
		if p := named.Properties["products"]; p != nil {
			p.MaxItems = new(MaxBulkProducts)
		}
	}
	huma.Register(s.api, access(huma.Operation{
		OperationID: "bulk-upsert-products", Method: http.MethodPost, Path: "/api/v1/products/bulk", Tags: []string{"Products"},
		Summary: "Upsert products in bulk",
		Description: "Creates or updates up to 10000 products by SKU, with the import wizard's rules: sku (1-64 characters) and " +
			"title (1-500) required; uom defaults to each; price_minor and lead_time_days whole numbers >= 0 or null; stock_qty " +
			">= 0 or null; currency defaults to the organisation's; status active, draft or archived (default active); attrs an " +
			"object. Valid rows are written in one statement and invalid ones reported; retrying the same batch is safe. 402 " +
			"(and nothing written) when existing products plus the batch's new SKUs would pass the plan's product cap; 413 " +
			"above 10000 products or for a body over 32 MB. Emits one products.upserted event.",
		MaxBodyBytes:     maxBulkBody,
		SkipValidateBody: true,
		RequestBody: &huma.RequestBody{
			Required: true,
			Content:  map[string]*huma.MediaType{"application/json": {Schema: bulkBody}},
		},
	}, domain.ScopeProductsWrite, "", http.StatusBadRequest, http.StatusPaymentRequired, http.StatusRequestEntityTooLarge), s.bulkProducts)
	// A raw body makes Huma document application/octet-stream as well; the
	// route takes JSON only.
	delete(s.api.OpenAPI().Paths["/api/v1/products/bulk"].Post.RequestBody.Content, "application/octet-stream")

	huma.Register(s.api, access(huma.Operation{
		OperationID: "upsert-customers", Method: http.MethodPost, Path: "/api/v1/customers", Tags: []string{"Customers"},
		Summary: "Create or update customers",
		Description: "Creates or updates up to 500 customers. Each is matched by external_id, then by its email's domain " +
			"(gmail.com and other free-mail domains never match); matched customers are updated, others created; the email " +
			"and phone become a contact. A customer sent with neither external_id nor email is created again on every " +
			"retry. Emits customer.created for each customer made, and customer.updated for each one changed. 413 for a " +
			"body over 8 MB.",
		MaxBodyBytes: maxCustomersBody,
	}, domain.ScopeCustomersWrite, "", http.StatusBadRequest, http.StatusRequestEntityTooLarge), s.upsertCustomers)

	huma.Register(s.api, access(huma.Operation{
		OperationID: "create-request", Method: http.MethodPost, Path: "/api/v1/requests", Tags: []string{"Requests"},
		Summary: "Open a request", DefaultStatus: http.StatusCreated,
		Description: "Opens a request thread from RFQ or enquiry text, attributed to the organisation's owner (422 when " +
			"it has none). The text becomes the first message. Opening a request draws no usage. Emits request.created. 413 " +
			"for a body over 2 MB.",
		MaxBodyBytes: maxRequestBody,
	}, domain.ScopeRequestsWrite, "", http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge), s.createRequest)

	huma.Register(s.api, access(huma.Operation{
		OperationID: "create-stock-movement", Method: http.MethodPost, Path: "/api/v1/stock/movements", Tags: []string{"Stock"},
		Summary: "Move stock", DefaultStatus: http.StatusCreated,
		Description: "Applies a stock movement: adjustment (qty signed, not 0), scrap (removes qty), return and receipt (add " +
			"qty; a receipt may set the unit cost), transfer (moves qty to to_location_id, both lines in one transaction). " +
			"The stock is named by line_id, or by product_id and location_id (the default location when omitted); adding to " +
			"a product with no line at that location creates the line. 201 with the movement and the lines it changed; 409 " +
			"when a balance would go below zero (nothing changes); a repeated idempotency_key answers 200 with the first " +
			"result, and 409 when its body differs. Emits stock.movement.created.",
		Responses: map[string]*huma.Response{"200": {Description: "The idempotency key was applied before: its first result."}},
	}, domain.ScopeStockWrite, domain.AddonStock, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict), s.createMovement)
}

func (s *Server) bulkProducts(ctx context.Context, in *BulkProductsInput) (*BulkProductsOutput, error) {
	body, err := domain.DecodeProductsBody(in.RawBody, MaxBulkProducts)
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

func (s *Server) upsertCustomers(ctx context.Context, in *CustomersInput) (*CustomersOutput, error) {
	if err := domain.NormalizeCustomers(in.Body.Customers); err != nil {
		return nil, s.fail(ctx, err)
	}
	res, err := s.db.UpsertCustomers(ctx, orgID(ctx), in.Body.Customers)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &CustomersOutput{Body: res}, nil
}

func (s *Server) createRequest(ctx context.Context, in *CreateRequestInput) (*CreateRequestOutput, error) {
	r := domain.NewRequest{Text: in.Body.Text, Title: in.Body.Title}
	if err := r.Normalize(); err != nil {
		return nil, s.fail(ctx, err)
	}
	created, err := s.db.CreateRequest(ctx, orgID(ctx), r)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &CreateRequestOutput{}
	out.Body.ID, out.Body.Title = created.ID, created.Title
	out.Body.URL = s.baseURL + "/ai/requests/" + created.ID.String()
	return out, nil
}

func (s *Server) createMovement(ctx context.Context, in *MovementInput) (*MovementOutput, error) {
	m := in.Body
	if err := m.Normalize(); err != nil {
		return nil, s.fail(ctx, err)
	}
	res, replayed, err := s.db.CreateMovement(ctx, orgID(ctx), m)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	return &MovementOutput{Status: status, Body: res}, nil
}
