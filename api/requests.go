package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// maxRequestBody is the body limit of POST /requests: it holds a request of
// 100000 characters even with every character written as a JSON \u escape.
// A larger body is refused with 413 before it is read whole.
const maxRequestBody = 2 << 20

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

func (s *Server) registerRequests() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-requests", Method: http.MethodGet, Path: "/api/v1/requests", Tags: []string{"Requests"},
		Summary: "List requests", Description: "The organisation's request threads (enquiries, RFQs), newest first.",
	}, domain.ScopeRequestsRead, "", http.StatusBadRequest), s.listRequests)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-request", Method: http.MethodGet, Path: "/api/v1/requests/{id}", Tags: []string{"Requests"},
		Summary: "Read a request", Description: "A request thread with its first 500 messages, oldest first; message blocks are " +
			"returned as they were stored.",
	}, domain.ScopeRequestsRead, "", http.StatusNotFound), s.getRequest)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "create-request", Method: http.MethodPost, Path: "/api/v1/requests", Tags: []string{"Requests"},
		Summary: "Open a request", DefaultStatus: http.StatusCreated,
		Description: "Opens a request thread from RFQ or enquiry text, attributed to the organisation's owner (422 when " +
			"it has none). The text becomes the first message. Opening a request draws no usage. Emits request.created. 413 " +
			"for a body over 2 MB.",
		MaxBodyBytes: maxRequestBody,
	}, domain.ScopeRequestsWrite, "", http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge), s.createRequest)
}

func (s *Server) listRequests(ctx context.Context, in *ListRequestsInput) (*ListRequestsOutput, error) {
	out := &ListRequestsOutput{}
	var err error
	out.Body.Requests, out.Body.NextCursor, err = newestList(ctx, s, "requests", in.Cursor, in.Limit, nil,
		func(p db.Page) ([]domain.RequestThread, error) { return s.db.ListRequests(ctx, orgID(ctx), p) },
		func(r domain.RequestThread) (domain.Timestamp, uuid.UUID) { return r.CreatedAt, r.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getRequest(ctx context.Context, in *IDPath) (*RequestOutput, error) {
	return readByID[RequestOutput](ctx, s, in.ID, "request", s.db.Request)
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
