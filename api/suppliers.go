package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListSuppliersInput is the query of GET /api/v1/suppliers.
type ListSuppliersInput struct {
	Search string `query:"search" maxLength:"200" doc:"Matches name and email (case-insensitive substring)."`
	SmallPage
	Since
}

// ListSuppliersOutput is a page of suppliers, newest first.
type ListSuppliersOutput struct {
	Body struct {
		Suppliers  []domain.Supplier `json:"suppliers" doc:"Suppliers, newest first; with updated_since, oldest change first."`
		NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// SupplierOutput is a supplier with its contacts.
type SupplierOutput struct{ Body domain.SupplierDetail }

func (s *Server) registerSuppliers() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-suppliers", Method: http.MethodGet, Path: "/api/v1/suppliers", Tags: []string{"Suppliers"},
		Summary: "List suppliers", Description: "The organisation's suppliers, newest first.",
	}, domain.ScopeSuppliersRead, domain.AddonSource, http.StatusBadRequest, http.StatusNotFound), s.listSuppliers)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-supplier", Method: http.MethodGet, Path: "/api/v1/suppliers/{id}", Tags: []string{"Suppliers"},
		Summary: "Read a supplier", Description: "A supplier with its contacts, the primary contact first.",
	}, domain.ScopeSuppliersRead, domain.AddonSource, http.StatusNotFound), s.getSupplier)
}

func (s *Server) listSuppliers(ctx context.Context, in *ListSuppliersInput) (*ListSuppliersOutput, error) {
	out := &ListSuppliersOutput{}
	var err error
	out.Body.Suppliers, out.Body.NextCursor, err = changedList(ctx, s, "suppliers", in.Cursor, in.Limit, in.UpdatedSince, []string{"search", in.Search},
		func(p db.Page) ([]domain.Supplier, error) {
			return s.db.ListSuppliers(ctx, orgID(ctx), db.SupplierFilter{Search: in.Search}, p)
		},
		func(sp domain.Supplier) (domain.Timestamp, uuid.UUID) { return sp.CreatedAt, sp.ID },
		func(sp domain.Supplier) (domain.Timestamp, uuid.UUID) { return sp.UpdatedAt, sp.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getSupplier(ctx context.Context, in *IDPath) (*SupplierOutput, error) {
	return readByID[SupplierOutput](ctx, s, in.ID, "supplier", s.db.Supplier)
}
