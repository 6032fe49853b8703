package db

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
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

// Key is a row's place in a keyed list: in a newest-first list its
// created_at (descending), in a walk by updated_since its updated_at
// (ascending); then its id the same way (ids are UUIDv7, so ties keep
// creation order).
type Key struct {
	At time.Time
	ID uuid.UUID
}

// Page says where a keyed list continues and how many rows to return.
// Lists fetch Limit+1 rows so the caller knows whether another page follows.
type Page struct {
	After *Key
	Limit int
	// Since makes the list a walk of the rows changed at or after it,
	// oldest change first (see listPage).
	Since *time.Time
}

// EveryPage reads a keyed list (newest first) from its first page to its
// last, for a caller that shows every row (a CLI listing, a form's
// choices): list reads one page, as the list functions do, and key is a
// row's place in it.
func EveryPage[T any](list func(Page) ([]T, error), key func(T) Key) ([]T, error) {
	const size = 200 // rows a page, as many as the API's largest page
	all := []T{}
	p := Page{Limit: size}
	for {
		rows, err := list(p)
		if err != nil {
			return nil, err
		}
		if len(rows) <= size {
			return append(all, rows...), nil
		}
		all = append(all, rows[:size]...)
		k := key(rows[size-1])
		p.After = &k
	}
}

// listPage runs "SELECT <selectSQL> WHERE <conds> ORDER BY ..." with keyset
// paging on the (created_at, id) of table (named alias in selectSQL), newest
// first; or, when p.Since is set, on its (updated_at, id), oldest change
// first, over the rows changed at or after p.Since and before the table's
// sync horizon.
func listPage[T any](ctx context.Context, q querier, selectSQL, table, alias string, c *conds, p Page, scan func(pgx.Row) (T, error)) ([]T, error) {
	order := alias + ".created_at DESC, " + alias + ".id DESC"
	if p.Since != nil {
		horizon, err := syncHorizon(ctx, q, table)
		if err != nil {
			return nil, err
		}
		c.add(alias+".updated_at >= ?", *p.Since)
		c.add(alias+".updated_at < ?", horizon)
		if p.After != nil {
			c.parts = append(c.parts, "("+alias+".updated_at, "+alias+".id) > ("+c.param(p.After.At)+", "+c.param(p.After.ID)+")")
		}
		order = alias + ".updated_at, " + alias + ".id"
	} else if p.After != nil {
		c.parts = append(c.parts, "("+alias+".created_at, "+alias+".id) < ("+c.param(p.After.At)+", "+c.param(p.After.ID)+")")
	}
	sql := selectSQL + " WHERE " + c.where() + " ORDER BY " + order + " LIMIT " + c.param(p.Limit+1)
	rows, err := q.Query(ctx, sql, c.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
}

// syncHorizon is how far a walk of table by updated_since may go now: rows
// whose updated_at is before it are all committed, so none can appear later
// behind a walk that has passed them. updated_at is the clock when a row is
// written (migration 003), never before its transaction's start, and a
// transaction that writes to a table holds a RowExclusiveLock on it from
// before its first row until it ends. So the horizon is the start of the
// oldest other transaction holding that lock now, or the start of this
// statement when there is none: a transaction that takes the lock later
// writes its rows later. It is read in a statement before the list's own,
// whose snapshot then holds every transaction that had ended by then.
//
// pg_locks and pg_stat_activity are read one after the other, so a holder
// may have ended its transaction (idle: no xact_start) or its session (no
// row) in between: its rows are committed and it holds nothing back. A
// holder whose start is hidden (a session of another database role, seen
// without pg_read_all_stats: no state) or a prepared transaction (no pid)
// holds the horizon at its lowest until it ends. pg_locks lists every
// database's locks; relation ids are those of this one.
func syncHorizon(ctx context.Context, q querier, table string) (time.Time, error) {
	var h pgtype.Timestamptz
	err := q.QueryRow(ctx, `
		SELECT least(statement_timestamp(),
		             (SELECT min(CASE WHEN l.pid IS NULL THEN '-infinity'
		                              WHEN a.pid IS NULL THEN NULL
		                              WHEN a.state IS NULL THEN '-infinity'
		                              ELSE a.xact_start END)
		              FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		              WHERE l.locktype = 'relation'
		                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		                AND l.relation = $1::regclass AND l.mode = 'RowExclusiveLock'
		                AND l.pid IS DISTINCT FROM pg_backend_pid()))`, table).Scan(&h)
	if err != nil {
		return time.Time{}, err
	}
	if h.InfinityModifier != pgtype.Finite {
		return time.Time{}, nil // nothing is before the horizon
	}
	return h.Time, nil
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

// records is how a read-only resource's rows are read, by its list and by
// its read by id: from table (named alias in the statement, with any join
// the columns need), the columns, and where each is scanned to. The list
// pages on the table's (created_at, id) or (updated_at, id) (listPage).
type records[T any] struct {
	table, alias string
	join         string
	columns      string
	fields       func(*T) []any
}

// selectSQL is "SELECT <columns>[, more] FROM <table> <alias> <join>".
func (r records[T]) selectSQL(more string) string {
	columns := r.columns
	if more != "" {
		columns += ", " + more
	}
	return "SELECT " + columns + " FROM " + r.table + " " + r.alias + r.join
}

func (r records[T]) scan(row pgx.Row) (T, error) {
	var v T
	err := row.Scan(r.fields(&v)...)
	return v, err
}

// list is a page of the rows that meet c (which scopes them by org_id), as
// listPage pages them.
func (r records[T]) list(ctx context.Context, q querier, c *conds, p Page) ([]T, error) {
	return listPage(ctx, q, r.selectSQL(""), r.table, r.alias, c, p, r.scan)
}

// byID is the query of one record by the organisation ($1) and its id ($2),
// with the columns more after the list's: the first query of its detail.
func (r records[T]) byID(more string) string {
	return r.selectSQL(more) + " WHERE " + r.alias + ".org_id = $1 AND " + r.alias + ".id = $2"
}

// into scans a row of byID: the list's columns into dst, then the columns
// byID was given into more.
func (r records[T]) into(dst *T, more ...any) func(pgx.Row) error {
	return func(row pgx.Row) error { return row.Scan(append(r.fields(dst), more...)...) }
}
