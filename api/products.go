package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListProductsInput is the query of GET /api/v1/products.
type ListProductsInput struct {
	Search   string `query:"search" maxLength:"200" doc:"Matches title, SKU and category (case-insensitive substring)."`
	SKU      string `query:"sku" maxLength:"64" doc:"Exact SKU."`
	Category string `query:"category" maxLength:"200" doc:"Exact category."`
	LargePage
}

// ListProductsOutput is a page of products in SKU order.
type ListProductsOutput struct {
	Body struct {
		Products   []domain.Product `json:"products" doc:"Products in SKU order."`
		NextCursor *string          `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
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
}

func (s *Server) listProducts(ctx context.Context, in *ListProductsInput) (*ListProductsOutput, error) {
	bound := binding(ctx, "search", in.Search, "sku", in.SKU, "category", in.Category)
	key, err := s.after(in.Cursor, "products", bound, 1)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	afterSKU := ""
	if key != nil {
		afterSKU = key[0]
	}
	rows, err := s.db.ListProducts(ctx, orgID(ctx), db.ProductFilter{Search: in.Search, SKU: in.SKU, Category: in.Category}, afterSKU, in.Limit)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &ListProductsOutput{}
	out.Body.Products, out.Body.NextCursor = page(s, rows, in.Limit, "products", bound,
		func(p domain.Product) []string { return []string{p.SKU} })
	return out, nil
}
