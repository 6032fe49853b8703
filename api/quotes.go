package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// ListQuotesInput is the query of GET /api/v1/quotes.
type ListQuotesInput struct {
	Status string `query:"status" enum:"draft,sent,accepted,declined,expired" doc:"Only quotes in this state."`
	SmallPage
	Since
}

// ListQuotesOutput is a page of quotes, newest first.
type ListQuotesOutput struct {
	Body struct {
		Quotes     []domain.Quote `json:"quotes" doc:"Quotes, newest first; with updated_since, oldest change first."`
		NextCursor *string        `json:"next_cursor" doc:"Cursor of the next page; null when no rows follow."`
	}
}

// QuoteOutput is a quote with its totals and lines.
type QuoteOutput struct{ Body domain.QuoteDetail }

func (s *Server) registerQuotes() {
	huma.Register(s.api, access(huma.Operation{
		OperationID: "list-quotes", Method: http.MethodGet, Path: "/api/v1/quotes", Tags: []string{"Quotes"},
		Summary: "List quotes", Description: "The organisation's quotes, newest first.",
	}, domain.ScopeQuotesRead, "", http.StatusBadRequest), s.listQuotes)
	huma.Register(s.api, access(huma.Operation{
		OperationID: "get-quote", Method: http.MethodGet, Path: "/api/v1/quotes/{id}", Tags: []string{"Quotes"},
		Summary: "Read a quote", Description: "A quote with its subtotal, discount, VAT and lines in position order. " +
			"Use each line's amount_minor as its value: a seller can pin a line total.",
	}, domain.ScopeQuotesRead, "", http.StatusNotFound), s.getQuote)
}

func (s *Server) listQuotes(ctx context.Context, in *ListQuotesInput) (*ListQuotesOutput, error) {
	out := &ListQuotesOutput{}
	var err error
	out.Body.Quotes, out.Body.NextCursor, err = changedList(ctx, s, "quotes", in.Cursor, in.Limit, in.UpdatedSince, []string{"status", in.Status},
		func(p db.Page) ([]domain.Quote, error) {
			return s.db.ListQuotes(ctx, orgID(ctx), db.QuoteFilter{Status: domain.QuoteStatus(in.Status)}, p)
		},
		func(q domain.Quote) (domain.Timestamp, uuid.UUID) { return q.CreatedAt, q.ID },
		func(q domain.Quote) (domain.Timestamp, uuid.UUID) { return q.UpdatedAt, q.ID })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getQuote(ctx context.Context, in *IDPath) (*QuoteOutput, error) {
	return readByID[QuoteOutput](ctx, s, in.ID, "quote", s.db.Quote)
}
