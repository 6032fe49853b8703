package console

import (
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// listPage is one of the console's list pages: what it reads off its query,
// the rows it shows, and the template's data. serve does what every list
// page does alike: the filters first (a value that is not valid is a 400
// page naming it), then the page key, perPage+1 rows, the link to the page
// after, and the template.
type listPage[F, T any] struct {
	template string
	// filter reads the page's filters off its query; nil for a page
	// without. A badFilter error is answered 400 with its words.
	filter func(r *http.Request) (F, error)
	rows   func(c *console, r *http.Request, org uuid.UUID, f F, p db.Page) ([]T, error)
	// key is a row's place in the newest-first list.
	key func(T) (domain.Timestamp, uuid.UUID)
	// data is the template's data: the page's rows, the link to the page
	// after ("" for none), and what else the page shows. It may refuse a
	// filter that names nothing of the organisation with a badFilter.
	data func(c *console, r *http.Request, org uuid.UUID, f F, rows []T, next string) (any, error)
}

// badFilter is a filter value that is not valid, in words that name it.
type badFilter string

func (b badFilter) Error() string { return string(b) }

// filterErr answers a badFilter 400 with its words, and any other error
// as failErr does.
func (c *console) filterErr(w http.ResponseWriter, r *http.Request, err error) {
	var bad badFilter
	if errors.As(err, &bad) {
		c.fail(w, r, http.StatusBadRequest, string(bad))
		return
	}
	c.failErr(w, r, err)
}

// serve is the page's handler.
func (l listPage[F, T]) serve(c *console) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var f F
		if l.filter != nil {
			var err error
			if f, err = l.filter(r); err != nil {
				c.filterErr(w, r, err)
				return
			}
		}
		p, err := pageKey(r)
		if err != nil {
			c.failErr(w, r, err)
			return
		}
		org := viewerOf(r.Context()).OrgID
		rows, err := l.rows(c, r, org, f, p)
		if err != nil {
			c.failErr(w, r, err)
			return
		}
		shown, next := nextPage(r, rows, l.key)
		d, err := l.data(c, r, org, f, shown, next)
		if err != nil {
			c.filterErr(w, r, err)
			return
		}
		c.render(w, r, http.StatusOK, l.template, d)
	}
}
