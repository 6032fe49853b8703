package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListCustomersInput is the query of GET /api/v1/customers.
type ListCustomersInput struct {
	Search string `query:"search" maxLength:"200" doc:"Matches company and email domain (case-insensitive substring)."`
	LargePage
}

// ListCustomersOutput is a page of customers, newest first.
type ListCustomersOutput struct {
	Body struct {
		Customers  []domain.Customer `json:"customers" doc:"Customers, newest first."`
		NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// CustomerOutput is a customer with its contacts.
type CustomerOutput struct{ Body domain.CustomerDetail }

// ListRequestsInput is the query of GET /api/v1/requests.
type ListRequestsInput struct{ SmallPage }

// ListRequestsOutput is a page of request threads, newest first.
type ListRequestsOutput struct {
	Body struct {
		Requests   []domain.RequestThread `json:"requests" doc:"Request threads, newest first."`
		NextCursor *string                `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// RequestOutput is a request thread with its messages.
type RequestOutput struct{ Body domain.RequestDetail }

func (s *Server) registerCustomersAndRequests() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-customers", Method: http.MethodGet, Path: "/api/v1/customers", Tags: []string{"Customers"},
		Summary: "List customers", Description: "The organisation's customers, newest first.",
	}, domain.ScopeCustomersRead, "", http.StatusBadRequest), s.listCustomers)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-customer", Method: http.MethodGet, Path: "/api/v1/customers/{id}", Tags: []string{"Customers"},
		Summary: "Read a customer", Description: "A customer with its contacts, the primary contact first.",
	}, domain.ScopeCustomersRead, "", http.StatusNotFound), s.getCustomer)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-requests", Method: http.MethodGet, Path: "/api/v1/requests", Tags: []string{"Requests"},
		Summary: "List requests", Description: "The organisation's request threads (enquiries, RFQs), newest first.",
	}, domain.ScopeRequestsRead, "", http.StatusBadRequest), s.listRequests)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-request", Method: http.MethodGet, Path: "/api/v1/requests/{id}", Tags: []string{"Requests"},
		Summary: "Read a request", Description: "A request thread with its messages, oldest first; message blocks are " +
			"returned as they were stored.",
	}, domain.ScopeRequestsRead, "", http.StatusNotFound), s.getRequest)
}

func (s *Server) listCustomers(ctx context.Context, in *ListCustomersInput) (*ListCustomersOutput, error) {
	out := &ListCustomersOutput{}
	var err error
	out.Body.Customers, out.Body.NextCursor, err = newestList(ctx, s, "customers", in.Cursor, in.Limit, []string{"search", in.Search},
		func(p db.Page) ([]domain.Customer, error) {
			return s.db.ListCustomers(ctx, orgID(ctx), db.CustomerFilter{Search: in.Search}, p)
		},
		func(c domain.Customer) (domain.Timestamp, uuid.UUID) { return c.CreatedAt, c.ID })
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return out, nil
}

func (s *Server) getCustomer(ctx context.Context, in *IDPath) (*CustomerOutput, error) {
	v, err := readByID(ctx, s, in.ID, "customer", s.db.Customer)
	if err != nil {
		return nil, err
	}
	return &CustomerOutput{Body: v}, nil
}

func (s *Server) listRequests(ctx context.Context, in *ListRequestsInput) (*ListRequestsOutput, error) {
	out := &ListRequestsOutput{}
	var err error
	out.Body.Requests, out.Body.NextCursor, err = newestList(ctx, s, "requests", in.Cursor, in.Limit, nil,
		func(p db.Page) ([]domain.RequestThread, error) { return s.db.ListRequests(ctx, orgID(ctx), p) },
		func(r domain.RequestThread) (domain.Timestamp, uuid.UUID) { return r.CreatedAt, r.ID })
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return out, nil
}

func (s *Server) getRequest(ctx context.Context, in *IDPath) (*RequestOutput, error) {
	v, err := readByID(ctx, s, in.ID, "request", s.db.Request)
	if err != nil {
		return nil, err
	}
	return &RequestOutput{Body: v}, nil
}
