package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// refsBackfillLock is the advisory lock a refs backfill holds (with the
// schema's hash): one process at a time reads the bodies.
const refsBackfillLock = int32(0x72656673) // "refs"

// RefsBackfillBatch is how many receipts one transaction of the backfill
// gives their refs: small enough that a writer waiting for one of its rows
// waits a moment, not for the whole backfill.
const RefsBackfillBatch = 500

// RefsBackfillProgress is where a backfill stands.
type RefsBackfillProgress struct {
	// Done is how many receipts this run gave their refs; Left how many
	// still have none (at the start of the run: the total to do).
	Done, Left int
}

// RefsMissing counts the receipts stored before references were extracted
// whose refs the backfill has still to read.
func (d *DB) RefsMissing(ctx context.Context) (int, error) {
	var n int
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM inbound_receipts WHERE refs IS NULL`).Scan(&n)
	return n, err
}

// BackfillReceiptRefs gives the receipts stored before references were
// extracted (refs IS NULL) their refs, reading each body with
// domain.ExtractRefs: batch receipts per transaction, in id order, so it
// never locks the table, only the rows of the batch at hand, for as long
// as one batch takes. progress is called after each batch. When another
// process is already backfilling, it returns at once, having done nothing
// (ran false). A run stopped part-way (ctx cancelled, the process killed)
// is taken up where it stopped by the next one.
func (d *DB) BackfillReceiptRefs(ctx context.Context, batch int, progress func(RefsBackfillProgress)) (ran bool, err error) {
	if batch <= 0 {
		batch = RefsBackfillBatch
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var got bool
	// Keyed by the schema too: the lock is the database's, and schemas of
	// one database (the tests') are separate services.
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, refsBackfillLock).Scan(&got); err != nil || !got {
		return false, err
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, refsBackfillLock)
	}()
	left, err := d.RefsMissing(ctx)
	if err != nil || left == 0 {
		return true, err
	}
	p := RefsBackfillProgress{Left: left}
	var after uuid.UUID
	for {
		n, last, err := backfillRefsBatch(ctx, conn.Conn(), after, batch)
		if err != nil {
			return true, fmt.Errorf("backfill refs after receipt %s: %w", after, err)
		}
		if n == 0 {
			return true, nil
		}
		after = last
		p.Done += n
		p.Left = max(p.Left-n, 0)
		if progress != nil {
			progress(p)
		}
	}
}

// refsOf is one receipt's refs, as the batch's update reads them.
type refsOf struct {
	Org  uuid.UUID `json:"org"`
	ID   uuid.UUID `json:"id"`
	Refs []string  `json:"refs"`
	Keys []string  `json:"keys"`
}

// backfillRefsBatch gives the next batch of receipts without refs after
// the id after theirs, in one transaction, and returns how many it read
// and the last id.
func backfillRefsBatch(ctx context.Context, conn *pgx.Conn, after uuid.UUID, batch int) (int, uuid.UUID, error) {
	var last uuid.UUID
	var done []refsOf
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// Rows are read one at a time: a batch holds its refs, never all its
		// bodies (up to 1 MB each) at once. The read locks nothing; the
		// update locks the batch's rows until it commits.
		rows, err := tx.Query(ctx, `SELECT org_id, id, body FROM inbound_receipts
			WHERE refs IS NULL AND id > $1 ORDER BY id LIMIT $2`, after, batch)
		if err != nil {
			return err
		}
		var body []byte
		for rows.Next() {
			var r refsOf
			if err := rows.Scan(&r.Org, &r.ID, &body); err != nil {
				rows.Close()
				return err
			}
			r.Refs = domain.ExtractRefs(body)
			if r.Refs == nil {
				r.Refs = []string{}
			}
			r.Keys = domain.RefKeys(r.Refs)
			done = append(done, r)
			last = r.ID
		}
		if err := rows.Err(); err != nil || len(done) == 0 {
			return err
		}
		payload, err := json.Marshal(done)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE inbound_receipts r SET refs = ARRAY(SELECT jsonb_array_elements_text(u->'refs'))
			FROM jsonb_array_elements($1::jsonb) u
			WHERE r.org_id = (u->>'org')::uuid AND r.id = (u->>'id')::uuid`, payload); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO inbound_receipt_refs (org_id, ref, receipt_id)
			SELECT (u->>'org')::uuid, k, (u->>'id')::uuid
			FROM jsonb_array_elements($1::jsonb) u, jsonb_array_elements_text(u->'keys') k
			ON CONFLICT DO NOTHING`, payload)
		return err
	})
	return len(done), last, err
}
