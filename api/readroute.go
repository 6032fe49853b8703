package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// readRoute is a read-only resource: a list at path, newest first, and a
// read by id at path/{id}. A list whose query input F embeds Since is also
// the walk of the records changed since a time (changedList). Q is the
// filter F makes for the list's query, T an item of the list, B the list's
// answer body and D the record a read by id answers.
type readRoute[F paged, Q, T, B, D any] struct {
	path  string
	tag   string
	scope domain.Scope
	addon domain.Addon // "" for none
	// list and get are the operations' ids, summaries and descriptions;
	// register fills in the rest.
	list, get huma.Operation
	// name is the list's name in its cursors and what the record's name in a
	// 404 ("order not found").
	name, what string
	// filter makes the query's filter of F, and the name/value pairs its
	// cursors are bound to, in a fixed order; its error answers before the
	// cursor is read. nil for a list without filters.
	filter func(*F) (Q, []string, error)
	query  func(*db.DB, context.Context, uuid.UUID, Q, db.Page) ([]T, error)
	// newest is an item's key in the newest-first list, changed its key in
	// the walk by updated_since (nil when F has no Since).
	newest, changed func(T) (domain.Timestamp, uuid.UUID)
	// body is the list's answer of a page of items and its next cursor.
	body func([]T, *string) B
	read func(*db.DB, context.Context, uuid.UUID, uuid.UUID) (D, error)
}

// paged is the query input of a list: its cursor and page size.
type paged interface {
	paging() (cursor string, limit int)
}

// walked is the query input of a list that takes updated_since.
type walked interface{ since() time.Time }

// listOutput is a list's answer; Huma names its schema after B.
type listOutput[B any] struct{ Body B }

// readOutput is a read by id's answer; Huma names its schema after D.
type readOutput[D any] struct{ Body D }

// readResource is a readRoute of any types, as the table of them holds it.
type readResource interface{ register(s *Server) }

// register registers the list and the read by id with their scope and
// add-on. A list declares 400 (a query or cursor that does not parse), and
// 404 when its add-on is off; a read declares 404.
func (r readRoute[F, Q, T, B, D]) register(s *Server) {
	var in F
	if _, ok := any(in).(walked); ok && r.changed == nil {
		// Checked here, so that the walk never reaches a nil key at the
		// first request.
		panic("readRoute " + r.name + ": its query takes updated_since and it has no changed key")
	}
	errs := []int{http.StatusBadRequest}
	if r.addon != "" {
		errs = append(errs, http.StatusNotFound)
	}
	list := r.list
	list.Method, list.Path, list.Tags = http.MethodGet, r.path, []string{r.tag}
	huma.Register(s.api, access(list, r.scope, r.addon, errs...), func(ctx context.Context, in *F) (*listOutput[B], error) {
		return r.serveList(ctx, s, in)
	})
	get := r.get
	get.Method, get.Path, get.Tags = http.MethodGet, r.path+"/{id}", []string{r.tag}
	huma.Register(s.api, access(get, r.scope, r.addon, http.StatusNotFound), func(ctx context.Context, in *IDPath) (*readOutput[D], error) {
		return readByID[readOutput[D]](ctx, s, in.ID, r.what, func(ctx context.Context, org, id uuid.UUID) (D, error) {
			return r.read(s.db, ctx, org, id)
		})
	})
}

// serveList answers one page of the list: the filters first, then the
// cursor (checked against the list and its filters), then the query.
func (r readRoute[F, Q, T, B, D]) serveList(ctx context.Context, s *Server, in *F) (*listOutput[B], error) {
	var filter Q
	var bound []string
	if r.filter != nil {
		var err error
		if filter, bound, err = r.filter(in); err != nil {
			return nil, s.fail(ctx, err)
		}
	}
	cursor, limit := (*in).paging()
	fetch := func(p db.Page) ([]T, error) { return r.query(s.db, ctx, orgID(ctx), filter, p) }
	var rows []T
	var next *string
	var err error
	if w, ok := any(*in).(walked); ok {
		rows, next, err = changedList(ctx, s, r.name, cursor, limit, w.since(), bound, fetch, r.newest, r.changed)
	} else {
		rows, next, err = newestList(ctx, s, r.name, cursor, limit, bound, fetch, r.newest)
	}
	if err != nil {
		return nil, err
	}
	return &listOutput[B]{Body: r.body(rows, next)}, nil
}
