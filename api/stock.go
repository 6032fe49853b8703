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

// StockLocationsOutput is every stock location, the default first.
type StockLocationsOutput struct {
	Body struct {
		Locations []domain.StockLocation `json:"locations" doc:"Every stock location, the default location first."`
	}
}

// ListMovementsInput is the query of GET /api/v1/stock/movements.
type ListMovementsInput struct {
	LineID    string `query:"line_id" format:"uuid" doc:"Only movements out of or (transfers) into this stock line."`
	ProductID string `query:"product_id" format:"uuid" doc:"Only movements of this product."`
	Kind      string `query:"kind" enum:"adjustment,transfer,scrap,return,receipt" doc:"Only movements of this kind."`
	SmallPage
}

// ListMovementsOutput is a page of stock movements, newest first.
type ListMovementsOutput struct {
	Body struct {
		Movements  []domain.StockMovement `json:"movements" doc:"Stock movements, newest first."`
		NextCursor *string                `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
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
	Body   MovementResult
}

// MovementResult is what a stock movement answers: the movement and the
// stock lines it changed, as they stood right after it.
type MovementResult struct {
	Movement domain.StockMovement `json:"movement"`
	Lines    []domain.StockLine   `json:"lines"`
}

// registerStock registers the locations, the movements and moving stock;
// the stock lines' reads are a table entry (stockLinesRoute, reads.go).
func (s *Server) registerStock() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-stock-locations", Method: http.MethodGet, Path: "/api/v1/stock/locations", Tags: []string{"Stock"},
		Summary: "List stock locations", Description: "Every stock location in one answer (not paged), the default location first.",
	}, domain.ScopeStockRead, domain.AddonStock, http.StatusNotFound), s.listStockLocations)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-stock-movements", Method: http.MethodGet, Path: "/api/v1/stock/movements", Tags: []string{"Stock"},
		Summary: "List stock movements", Description: "Stock movements, newest first.",
	}, domain.ScopeStockRead, domain.AddonStock, http.StatusBadRequest, http.StatusNotFound), s.listMovements)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "create-stock-movement", Method: http.MethodPost, Path: "/api/v1/stock/movements", Tags: []string{"Stock"},
		Summary: "Move stock", DefaultStatus: http.StatusCreated,
		Description: "Applies a stock movement: adjustment (qty signed, not 0), scrap (removes qty), return and receipt (add " +
			"qty; a receipt may set the unit cost), transfer (moves qty to to_location_id, both lines in one transaction). " +
			"The stock is named by line_id, or by product_id and location_id (the default location when omitted); adding to " +
			"a product with no line at that location creates the line. 201 with the movement and the lines it changed; 409 " +
			"when a balance would go below zero (nothing changes); a repeated idempotency_key answers 200 with the first " +
			"result, and 409 when its body differs. 413 for a body over 1 MB. Emits stock.movement.created.",
		Responses: map[string]*huma.Response{"200": {
			Description: "The idempotency key was applied before: its first result, unchanged.",
			Content: map[string]*huma.MediaType{"application/json": {
				Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[MovementResult](), true, ""),
			}},
		}},
	}, domain.ScopeStockWrite, domain.AddonStock, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict,
		http.StatusRequestEntityTooLarge), s.createMovement)
}

func (s *Server) listStockLocations(ctx context.Context, _ *struct{}) (*StockLocationsOutput, error) {
	locs, err := s.db.StockLocations(ctx, orgID(ctx))
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &StockLocationsOutput{}
	out.Body.Locations = locs
	return out, nil
}

func (s *Server) listMovements(ctx context.Context, in *ListMovementsInput) (*ListMovementsOutput, error) {
	line, err := optionalID("line_id", in.LineID)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	product, err := optionalID("product_id", in.ProductID)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &ListMovementsOutput{}
	out.Body.Movements, out.Body.NextCursor, err = newestList(ctx, s, "stock_movements", in.Cursor, in.Limit,
		[]string{"line_id", in.LineID, "product_id", in.ProductID, "kind", in.Kind},
		func(p db.Page) ([]domain.StockMovement, error) {
			return s.db.ListMovements(ctx, orgID(ctx), db.MovementFilter{LineID: line, ProductID: product, Kind: domain.MovementKind(in.Kind)}, p)
		},
		func(m domain.StockMovement) (domain.Timestamp, uuid.UUID) { return m.CreatedAt, m.ID })
	if err != nil {
		return nil, err
	}
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
	return &MovementOutput{Status: status, Body: MovementResult{Movement: res.Movement, Lines: res.Lines}}, nil
}
