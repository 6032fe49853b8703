package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListOrdersInput is the query of GET /api/v1/orders.
type ListOrdersInput struct {
	Status string `query:"status" enum:"confirmed,in_progress,fulfilled,cancelled" doc:"Only orders in this state."`
	SmallPage
	Since
}

// ListOrdersOutput is a page of orders, newest first.
type ListOrdersOutput struct {
	Body struct {
		Orders     []domain.Order `json:"orders" doc:"Orders, newest first; with updated_since, oldest change first."`
		NextCursor *string        `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// OrderOutput is an order with its totals, lines and invoice references.
type OrderOutput struct{ Body domain.OrderDetail }

func (s *Server) registerOrders() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-orders", Method: http.MethodGet, Path: "/api/v1/orders", Tags: []string{"Orders"},
		Summary: "List orders", Description: "The organisation's orders, newest first. Orders are read-only here.",
	}, domain.ScopeOrdersRead, "", http.StatusBadRequest), s.listOrders)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-order", Method: http.MethodGet, Path: "/api/v1/orders/{id}", Tags: []string{"Orders"},
		Summary: "Read an order", Description: "An order with its subtotal, VAT, lines, tracking address and the invoice " +
			"references recorded against it (the service records invoices; it never issues one).",
	}, domain.ScopeOrdersRead, "", http.StatusNotFound), s.getOrder)
}

func (s *Server) listOrders(ctx context.Context, in *ListOrdersInput) (*ListOrdersOutput, error) {
	out := &ListOrdersOutput{}
	var err error
	out.Body.Orders, out.Body.NextCursor, err = changedList(ctx, s, "orders", in.Cursor, in.Limit, in.UpdatedSince, []string{"status", in.Status},
		func(p db.Page) ([]domain.Order, error) {
			return s.db.ListOrders(ctx, orgID(ctx), db.OrderFilter{Status: domain.OrderStatus(in.Status)}, p)
		},
		func(o domain.Order) (domain.Timestamp, uuid.UUID) { return o.CreatedAt, o.ID },
		func(o domain.Order) (domain.Timestamp, uuid.UUID) { return o.UpdatedAt, o.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getOrder(ctx context.Context, in *IDPath) (*OrderOutput, error) {
	return readByID[OrderOutput](ctx, s, in.ID, "order", s.db.Order)
}
