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

// maxCustomersBody is the body limit of POST /customers: it holds 500
// customers with every field at its maximum length even with every character
// written as a JSON \u escape. A larger body is refused with 413 before it is
// read whole.
const maxCustomersBody = 8 << 20

// ListCustomersInput is the query of GET /api/v1/customers.
type ListCustomersInput struct {
	Search string `query:"search" maxLength:"200" doc:"Matches company and email domain (case-insensitive substring)."`
	LargePage
	Since
}

// ListCustomersOutput is a page of customers, newest first.
type ListCustomersOutput struct {
	Body struct {
		Customers  []domain.Customer `json:"customers" doc:"Customers, newest first; with updated_since, oldest change first."`
		NextCursor *string           `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// CustomerOutput is a customer with its contacts.
type CustomerOutput struct{ Body domain.CustomerDetail }

// CustomersInputBody documents the body of POST /api/v1/customers. The
// handler reads the raw body itself, so that the customer past the limit is
// refused before the rest is decoded.
type CustomersInputBody struct {
	Customers []domain.CustomerInput `json:"customers" maxItems:"500" doc:"At most 500 customers. Matched by external_id, then by email domain (free-mail domains never match); matched ones are updated, others created. Any invalid entry rejects the call, naming its index, and nothing is written."`
}

// CustomersInput is the request of POST /api/v1/customers.
type CustomersInput struct{}

// CustomersOutput counts what a customers upsert did.
type CustomersOutput struct{ Body CustomerUpsert }

// CustomerUpsert counts the customers an upsert created and updated.
type CustomerUpsert struct {
	Created int `json:"created"`
	Updated int `json:"updated"`
}

func (s *Server) registerCustomers() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-customers", Method: http.MethodGet, Path: "/api/v1/customers", Tags: []string{"Customers"},
		Summary: "List customers", Description: "The organisation's customers, newest first.",
	}, domain.ScopeCustomersRead, "", http.StatusBadRequest), s.listCustomers)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-customer", Method: http.MethodGet, Path: "/api/v1/customers/{id}", Tags: []string{"Customers"},
		Summary: "Read a customer", Description: "A customer with its contacts, the primary contact first.",
	}, domain.ScopeCustomersRead, "", http.StatusNotFound), s.getCustomer)
	registerRawJSON(s, access(huma.Operation{
		OperationID: "upsert-customers", Method: http.MethodPost, Path: "/api/v1/customers", Tags: []string{"Customers"},
		Summary: "Create or update customers",
		Description: "Creates or updates up to 500 customers (400 above, as soon as the 501st is read). Each is matched by " +
			"external_id, then by its email's domain (gmail.com and other free-mail domains never match); matched customers " +
			"are updated, others created; the email and phone become a contact. A customer sent with neither external_id nor " +
			"email is created again on every retry. Emits customer.created for each customer made, and customer.updated for " +
			"each one changed. 413 for a body over 8 MB.",
		MaxBodyBytes: maxCustomersBody,
	}, domain.ScopeCustomersWrite, "", http.StatusBadRequest, http.StatusRequestEntityTooLarge),
		reflect.TypeFor[CustomersInputBody](), s.upsertCustomers)
}

func (s *Server) listCustomers(ctx context.Context, in *ListCustomersInput) (*ListCustomersOutput, error) {
	out := &ListCustomersOutput{}
	var err error
	out.Body.Customers, out.Body.NextCursor, err = changedList(ctx, s, "customers", in.Cursor, in.Limit, in.UpdatedSince, []string{"search", in.Search},
		func(p db.Page) ([]domain.Customer, error) {
			return s.db.ListCustomers(ctx, orgID(ctx), db.CustomerFilter{Search: in.Search}, p)
		},
		func(c domain.Customer) (domain.Timestamp, uuid.UUID) { return c.CreatedAt, c.ID },
		func(c domain.Customer) (domain.Timestamp, uuid.UUID) { return c.UpdatedAt, c.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getCustomer(ctx context.Context, in *IDPath) (*CustomerOutput, error) {
	return readByID[CustomerOutput](ctx, s, in.ID, "customer", s.db.Customer)
}

func (s *Server) upsertCustomers(ctx context.Context, in *CustomersInput) (*CustomersOutput, error) {
	raw := requestBody(ctx)
	body, err := domain.ReadCustomersBody(raw, domain.MaxCustomersPerCall)
	if refused := raw.Settle(err); refused != nil {
		return nil, refused
	}
	if domain.ErrorCode(err) == domain.ETOOLARGE {
		// Too many customers is a 400 on this route (413 is for the bytes).
		err = domain.Errorf(domain.EINVALID, "%s", domain.ErrorMessage(err))
	}
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	if err := domain.NormalizeCustomers(body.Customers); err != nil {
		return nil, s.fail(ctx, err)
	}
	res, err := s.db.UpsertCustomers(ctx, orgID(ctx), body.Customers)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &CustomersOutput{Body: CustomerUpsert{Created: res.Created, Updated: res.Updated}}, nil
}
