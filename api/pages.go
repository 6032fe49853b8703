package api

import (
	"context"
	"net/url"
)

// LargePage is the paging input of the lists that default to 100 rows and
// allow up to 500 (products, customers).
type LargePage struct {
	Cursor string `query:"cursor" doc:"Opaque cursor: the previous page's next_cursor."`
	Limit  int    `query:"limit" minimum:"1" maximum:"500" default:"100" doc:"Rows per page."`
}

// SmallPage is the paging input of the lists that default to 50 rows and
// allow up to 200.
type SmallPage struct {
	Cursor string `query:"cursor" doc:"Opaque cursor: the previous page's next_cursor."`
	Limit  int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Rows per page."`
}

// binding is what a cursor is bound to: the organisation, and the list's
// filters in a fixed order.
func binding(ctx context.Context, filters ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(filters); i += 2 {
		v.Set(filters[i], filters[i+1])
	}
	return orgID(ctx).String() + "|" + v.Encode()
}

// after decodes the cursor of a request, returning the sort key to continue
// after (nil for the first page).
func (s *Server) after(cursor, list, bound string, parts int) ([]string, error) {
	if cursor == "" {
		return nil, nil
	}
	return s.cursors.Decode(cursor, list, bound, parts)
}

// page trims rows fetched with limit+1 to limit and, when a row was left
// over, returns the cursor that continues after the last row kept. So
// next_cursor is null exactly when no rows follow.
func page[T any](s *Server, rows []T, limit int, list, bound string, key func(T) []string) ([]T, *string) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	c := s.cursors.Encode(list, bound, key(rows[limit-1])...)
	return rows, &c
}
