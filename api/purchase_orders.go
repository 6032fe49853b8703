package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListPurchaseOrdersInput is the query of GET /api/v1/purchase-orders.
type ListPurchaseOrdersInput struct {
	Status     string `query:"status" enum:"draft,sent,acknowledged,partially_received,received,closed,cancelled" doc:"Only purchase orders in this state."`
	SupplierID string `query:"supplier_id" format:"uuid" doc:"Only purchase orders placed with this supplier."`
	SmallPage
	Since
}

// ListPurchaseOrdersOutput is a page of purchase orders, newest first.
type ListPurchaseOrdersOutput struct {
	Body struct {
		PurchaseOrders []domain.PurchaseOrder `json:"purchase_orders" doc:"Purchase orders, newest first; with updated_since, oldest change first."`
		NextCursor     *string                `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// PurchaseOrderOutput is a purchase order with its lines, receipts and invoices.
type PurchaseOrderOutput struct{ Body domain.PurchaseOrderDetail }

func (s *Server) registerPurchaseOrders() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-purchase-orders", Method: http.MethodGet, Path: "/api/v1/purchase-orders", Tags: []string{"Purchase orders"},
		Summary: "List purchase orders", Description: "The organisation's purchase orders, newest first.",
	}, domain.ScopePurchaseOrdersRead, domain.AddonSource, http.StatusBadRequest, http.StatusNotFound), s.listPurchaseOrders)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-purchase-order", Method: http.MethodGet, Path: "/api/v1/purchase-orders/{id}", Tags: []string{"Purchase orders"},
		Summary: "Read a purchase order", Description: "A purchase order with its lines (and the quantity received of " +
			"each), its goods receipts, and the supplier invoices matched against it with their variances.",
	}, domain.ScopePurchaseOrdersRead, domain.AddonSource, http.StatusNotFound), s.getPurchaseOrder)
}

func (s *Server) listPurchaseOrders(ctx context.Context, in *ListPurchaseOrdersInput) (*ListPurchaseOrdersOutput, error) {
	supplier, err := optionalID("supplier_id", in.SupplierID)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := &ListPurchaseOrdersOutput{}
	out.Body.PurchaseOrders, out.Body.NextCursor, err = changedList(ctx, s, "purchase_orders", in.Cursor, in.Limit, in.UpdatedSince,
		[]string{"status", in.Status, "supplier_id", in.SupplierID},
		func(p db.Page) ([]domain.PurchaseOrder, error) {
			return s.db.ListPurchaseOrders(ctx, orgID(ctx), db.PurchaseOrderFilter{Status: domain.PurchaseOrderStatus(in.Status), SupplierID: supplier}, p)
		},
		func(po domain.PurchaseOrder) (domain.Timestamp, uuid.UUID) { return po.CreatedAt, po.ID },
		func(po domain.PurchaseOrder) (domain.Timestamp, uuid.UUID) { return po.UpdatedAt, po.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getPurchaseOrder(ctx context.Context, in *IDPath) (*PurchaseOrderOutput, error) {
	return readByID[PurchaseOrderOutput](ctx, s, in.ID, "purchase order", s.db.PurchaseOrder)
}
