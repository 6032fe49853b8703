package api

import (
	"context"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// LargePage is the paging input of the lists that default to 100 rows and
// allow up to 500 (products, customers).
type LargePage struct {
	Cursor string `query:"cursor" doc:"Opaque cursor: the previous page's next_cursor."`
	Limit  int    `query:"limit" minimum:"1" maximum:"500" default:"100" doc:"Rows per page, 1 to 500."`
}

func (p LargePage) paging() (string, int) { return p.Cursor, p.Limit }

// SmallPage is the paging input of the lists that default to 50 rows and
// allow up to 200.
type SmallPage struct {
	Cursor string `query:"cursor" doc:"Opaque cursor: the previous page's next_cursor."`
	Limit  int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Rows per page, 1 to 200."`
}

func (p SmallPage) paging() (string, int) { return p.Cursor, p.Limit }

// binding is what a cursor is bound to: the organisation, and the list's
// filters in a fixed order.
func binding(ctx context.Context, filters ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(filters); i += 2 {
		if filters[i+1] != "" { // an empty filter is no filter
			v.Set(filters[i], filters[i+1])
		}
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

// Since is the updated_since filter of the lists a client mirrors.
type Since struct {
	UpdatedSince time.Time `query:"updated_since" doc:"RFC 3339 time. Walks the records changed at or after it (updated_at >= updated_since) instead: oldest change first, ties by id, paged by next_cursor. A record changed while the walk runs moves to the end and comes again later in the same walk, so the walk returns every record as it last changed and never skips one. The walk stops short of changes whose transactions may still be running: a record changed in the last moments comes in the next walk. To stay in sync, walk again from the updated_at of the last record seen (it comes once more)."`
}

func (s Since) since() time.Time { return s.UpdatedSince }

// newestList serves one page of a newest-first list: it checks the cursor
// against the list and its filters (name/value pairs), fetches limit+1 rows
// and makes the next cursor from the last row's (created_at, id). Its error
// is already the answer (see fail), so a handler returns it as it is.
func newestList[T any](ctx context.Context, s *Server, list string, cursor string, limit int, filters []string,
	fetch func(db.Page) ([]T, error), key func(T) (domain.Timestamp, uuid.UUID)) ([]T, *string, error) {
	return keyedList(ctx, s, list, cursor, limit, nil, filters, fetch, key)
}

// changedList serves a list a client can mirror: newest first as
// newestList, or with updated_since the walk of the rows changed since then,
// oldest change first, keyed by the rows' (updated_at, id) (changed).
func changedList[T any](ctx context.Context, s *Server, list string, cursor string, limit int, since time.Time, filters []string,
	fetch func(db.Page) ([]T, error), newest, changed func(T) (domain.Timestamp, uuid.UUID)) ([]T, *string, error) {
	if since.IsZero() {
		return keyedList(ctx, s, list, cursor, limit, nil, filters, fetch, newest)
	}
	filters = slices.Concat(filters, []string{"updated_since", since.UTC().Format(time.RFC3339Nano)})
	return keyedList(ctx, s, list, cursor, limit, &since, filters, fetch, changed)
}

// keyedList serves one page of a list keyed by (time, id): newest first, or
// the walk since *since.
func keyedList[T any](ctx context.Context, s *Server, list string, cursor string, limit int, since *time.Time, filters []string,
	fetch func(db.Page) ([]T, error), key func(T) (domain.Timestamp, uuid.UUID)) ([]T, *string, error) {
	bound := binding(ctx, filters...)
	k, err := s.after(cursor, list, bound, 2)
	if err != nil {
		return nil, nil, s.fail(ctx, err)
	}
	p := db.Page{Limit: limit, Since: since}
	if k != nil {
		t, errT := time.Parse(time.RFC3339Nano, k[0])
		id, errID := uuid.Parse(k[1])
		if errT != nil || errID != nil {
			return nil, nil, s.fail(ctx, domain.Errorf(domain.EINVALID, "cursor is not valid for this list"))
		}
		p.After = &db.Key{At: t, ID: id}
	}
	rows, err := fetch(p)
	if err != nil {
		return nil, nil, s.fail(ctx, err)
	}
	out, next := page(s, rows, limit, list, bound, func(r T) []string {
		at, id := key(r)
		return []string{at.Time.Format(time.RFC3339Nano), id.String()}
	})
	return out, next, nil
}

// pathID reads a record id from the path. A value that is not a UUID names
// no record: the answer is 404, like any id outside the organisation.
func pathID(raw, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, domain.Errorf(domain.ENOTFOUND, "%s not found", what)
	}
	return id, nil
}

// optionalID reads an optional id filter.
func optionalID(name, raw string) (*uuid.UUID, error) {
	if raw == "" {
		return nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "%s is not a UUID", name)
	}
	return &id, nil
}

// IDPath is the path of a read by id.
type IDPath struct {
	ID string `path:"id" doc:"The record's id (a UUID). An id outside the organisation, or not a UUID, answers 404."`
}

// readByID serves a read by id as the operation's output O, whose only field
// is Body: the id must be a UUID and the record must belong to the caller's
// organisation, or the answer is 404.
func readByID[O ~struct{ Body T }, T any](ctx context.Context, s *Server, raw, what string,
	fetch func(ctx context.Context, org, id uuid.UUID) (T, error)) (*O, error) {
	id, err := pathID(raw, what)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	v, err := fetch(ctx, orgID(ctx), id)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &O{Body: v}, nil
}

// answered is a read of a record by id that returns the record's answer,
// for readByID: db and integrations return records, and api writes them in
// its answer types.
func answered[R, A any](fetch func(ctx context.Context, org, id uuid.UUID) (R, error), answer func(R) A) func(ctx context.Context, org, id uuid.UUID) (A, error) {
	return func(ctx context.Context, org, id uuid.UUID) (A, error) {
		r, err := fetch(ctx, org, id)
		if err != nil {
			var zero A
			return zero, err
		}
		return answer(r), nil
	}
}
