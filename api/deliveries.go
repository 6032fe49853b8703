package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListDeliveriesInput is the query of GET /api/v1/deliveries.
type ListDeliveriesInput struct {
	Status  string `query:"status" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled" doc:"Only deliveries in this state."`
	OrderID string `query:"order_id" format:"uuid" doc:"Only deliveries of this order."`
	SmallPage
	Since
}

// ListDeliveriesOutput is a page of deliveries, newest first.
type ListDeliveriesOutput struct {
	Body struct {
		Deliveries []domain.Delivery `json:"deliveries" doc:"Deliveries, newest first; with updated_since, oldest change first."`
		NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// DeliveryOutput is a delivery with its lines and packages.
type DeliveryOutput struct{ Body domain.DeliveryDetail }

func (s *Server) registerDeliveries() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-deliveries", Method: http.MethodGet, Path: "/api/v1/deliveries", Tags: []string{"Deliveries"},
		Summary: "List deliveries", Description: "The organisation's deliveries, newest first.",
	}, domain.ScopeDeliveriesRead, domain.AddonRoute, http.StatusBadRequest, http.StatusNotFound), s.listDeliveries)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-delivery", Method: http.MethodGet, Path: "/api/v1/deliveries/{id}", Tags: []string{"Deliveries"},
		Summary: "Read a delivery", Description: "A delivery with its lines and packages.",
	}, domain.ScopeDeliveriesRead, domain.AddonRoute, http.StatusNotFound), s.getDelivery)
}

func (s *Server) listDeliveries(ctx context.Context, in *ListDeliveriesInput) (*ListDeliveriesOutput, error) {
	order, err := optionalID("order_id", in.OrderID)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &ListDeliveriesOutput{}
	out.Body.Deliveries, out.Body.NextCursor, err = changedList(ctx, s, "deliveries", in.Cursor, in.Limit, in.UpdatedSince,
		[]string{"status", in.Status, "order_id", in.OrderID},
		func(p db.Page) ([]domain.Delivery, error) {
			return s.db.ListDeliveries(ctx, orgID(ctx), db.DeliveryFilter{Status: domain.DeliveryStatus(in.Status), OrderID: order}, p)
		},
		func(d domain.Delivery) (domain.Timestamp, uuid.UUID) { return d.CreatedAt, d.ID },
		func(d domain.Delivery) (domain.Timestamp, uuid.UUID) { return d.UpdatedAt, d.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getDelivery(ctx context.Context, in *IDPath) (*DeliveryOutput, error) {
	return readByID[DeliveryOutput](ctx, s, in.ID, "delivery", s.db.Delivery)
}
