package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
)

// maxRequestBody is the body limit of POST /requests: it holds a request of
// 100000 characters even with every character written as a JSON \u escape.
// A larger body is refused with 413 before it is read whole.
const maxRequestBody = 2 << 20

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

// registerRequests registers the opening of a request; the request
// threads' reads are a table entry (requestsRoute, reads.go).
func (s *Server) registerRequests() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "create-request", Method: http.MethodPost, Path: "/api/v1/requests", Tags: []string{"Requests"},
		Summary: "Open a request", DefaultStatus: http.StatusCreated,
		Description: "Opens a request thread from RFQ or enquiry text, attributed to the organisation's owner (422 when " +
			"it has none). The text becomes the first message. Opening a request draws no usage. Emits request.created. 413 " +
			"for a body over 2 MB.",
		MaxBodyBytes: maxRequestBody,
	}, domain.ScopeRequestsWrite, "", http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge), s.createRequest)
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
