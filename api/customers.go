package api

import (
	"context"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/commerce-integration/commerce/domain"
)

// maxCustomersBody is the body limit of POST /customers: it holds 500
// customers with every field at its maximum length even with every character
// written as a JSON \u escape. A larger body is refused with 413 before it is
// read whole.
const maxCustomersBody = 8 << 20

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

// registerCustomers registers the customers upsert; the customers' reads
// are a table entry (customersRoute, reads.go).
func (s *Server) registerCustomers() {
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
