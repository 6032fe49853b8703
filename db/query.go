package db

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// conds builds a WHERE clause from conditions written with ? placeholders,
// numbering them after the arguments already taken.
type conds struct {
	parts []string
	args  []any
}

func newConds(args ...any) *conds { return &conds{args: args} }

// add appends a condition; each ? in it stands for v.
func (c *conds) add(cond string, v any) {
	c.args = append(c.args, v)
	c.parts = append(c.parts, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(c.args))))
}

// addIf appends the condition when ok.
func (c *conds) addIf(ok bool, cond string, v any) {
	if ok {
		c.add(cond, v)
	}
}

// param adds v as an argument and returns its placeholder.
func (c *conds) param(v any) string {
	c.args = append(c.args, v)
	return "$" + strconv.Itoa(len(c.args))
}

func (c *conds) where() string {
	if len(c.parts) == 0 {
		return "true"
	}
	return strings.Join(c.parts, " AND ")
}

// Newest is the sort key of newest-first lists: created_at descending, then
// id descending (ids are UUIDv7, so ties keep creation order).
type Newest struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// Page says where a newest-first list continues and how many rows to return.
// Lists fetch Limit+1 rows so the caller knows whether another page follows.
type Page struct {
	After *Newest
	Limit int
}

// listNewest runs "SELECT <selectSQL> WHERE <conds> ORDER BY newest" with
// keyset paging on the table alias's (created_at, id).
func listNewest[T any](ctx context.Context, q querier, selectSQL, alias string, c *conds, p Page, scan func(pgx.Row) (T, error)) ([]T, error) {
	if p.After != nil {
		c.parts = append(c.parts, "("+alias+".created_at, "+alias+".id) < ("+c.param(p.After.CreatedAt)+", "+c.param(p.After.ID)+")")
	}
	sql := selectSQL + " WHERE " + c.where() + " ORDER BY " + alias + ".created_at DESC, " + alias + ".id DESC LIMIT " + c.param(p.Limit+1)
	rows, err := q.Query(ctx, sql, c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
}

// searchPattern makes an ILIKE pattern matching s anywhere: wildcards in s
// are taken literally, and the field separator of the search indexes is
// dropped so a match never spans two fields.
func searchPattern(s string) string {
	s = strings.ReplaceAll(s, "\x1f", "")
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// detail runs a record's query and its children's queries in one round
// trip. The first query must return the record (none: not found); fill
// scans each further query's rows in order.
func (d *DB) detail(ctx context.Context, what string, first func(pgx.Row) error, queries []string, args []any, fill ...func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	for _, q := range queries {
		b.Queue(q, args...)
	}
	br := d.pool.SendBatch(ctx, b)
	defer br.Close()
	if err := first(br.QueryRow()); err != nil {
		return notFound(err, what)
	}
	for _, f := range fill {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if err := f(rows); err != nil {
			return err
		}
	}
	return br.Close()
}

// collect scans every row into *dst (an empty slice, never nil).
func collect[T any](dst *[]T, scan func(pgx.Row) (T, error)) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
		*dst = out
		return err
	}
}
