package db

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// PostKeyKind says what names a post for sender retries.
type PostKeyKind string

// The kinds of post keys (docs/design.md#sender-retries).
const (
	// PostKeyIdempotency is the sender's Idempotency-Key header.
	PostKeyIdempotency PostKeyKind = "idempotency_key"
	// PostKeySignature is the v1 value that verified a signed post.
	PostKeySignature PostKeyKind = "signature"
)

// PostKey names a post so that the sender's retries of it are recognised.
type PostKey struct {
	Kind  PostKeyKind
	Value string
}

// PostKeyWindow is how long a post key names its first post.
const PostKeyWindow = 24 * time.Hour

// FirstPost is the earlier post a repeat is the same as.
type FirstPost struct {
	ReceiptID uuid.UUID
	// Kind is the key the repeat was recognised by.
	Kind PostKeyKind
	// OtherBody is set when the key came first with another body.
	OtherBody bool
	// Status and Response are the first post's answer; Status is nil while
	// it has none yet.
	Status   *int
	Response []byte
}

// errRepeat rolls back the receipt of a post recognised as a repeat.
var errRepeat = errors.New("the post repeats an earlier one")

// StorePost records an inbound post and claims its keys in one transaction.
// When one of its keys named a post on the endpoint within PostKeyWindow,
// nothing is stored and that first post is returned instead; a first post
// that was answered 5xx did not go through, so its keys are free again.
// Of two posts with the same key at once, one is stored and the other waits
// for it and gets it as its first post.
func (d *DB) StorePost(ctx context.Context, r NewReceipt, keys []PostKey) (uuid.UUID, *FirstPost, error) {
	if len(keys) == 0 {
		id, err := d.StoreReceipt(ctx, r)
		return id, nil, err
	}
	sum := sha256.Sum256(r.Body)
	kinds, values := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		kinds[i], values[i] = string(k.Kind), k.Value
	}
	var id uuid.UUID
	var first *FirstPost
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			DELETE FROM inbound_post_keys k
			WHERE k.org_id = $1 AND k.endpoint_id = $2
			  AND (k.created_at < now() - make_interval(secs => $3)
			       OR ((k.kind, k.key) IN (SELECT * FROM unnest($4::text[], $5::text[]))
			           AND EXISTS (SELECT 1 FROM inbound_receipts r
			                       WHERE r.org_id = k.org_id AND r.id = k.receipt_id AND r.status_code >= 500)))`,
			r.OrgID, r.EndpointID, PostKeyWindow.Seconds(), kinds, values); err != nil {
			return err
		}
		var err error
		if id, err = insertReceipt(ctx, tx, r); err != nil {
			return err
		}
		for _, k := range keys {
			// A key held by a post not yet committed waits for it; the
			// statement after this one then sees that post.
			tag, err := tx.Exec(ctx, `
				INSERT INTO inbound_post_keys (org_id, endpoint_id, kind, key, body_sha256, receipt_id)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
				r.OrgID, r.EndpointID, k.Kind, k.Value, sum[:], id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				continue
			}
			first = &FirstPost{Kind: k.Kind}
			err = tx.QueryRow(ctx, `
				SELECT k.receipt_id, k.body_sha256 <> $5, r.status_code, r.response
				FROM inbound_post_keys k JOIN inbound_receipts r ON r.org_id = k.org_id AND r.id = k.receipt_id
				WHERE k.org_id = $1 AND k.endpoint_id = $2 AND k.kind = $3 AND k.key = $4`,
				r.OrgID, r.EndpointID, k.Kind, k.Value, sum[:]).Scan(&first.ReceiptID, &first.OtherBody, &first.Status, &first.Response)
			if err != nil {
				return err
			}
			return errRepeat
		}
		return nil
	})
	if errors.Is(err, errRepeat) {
		return uuid.Nil, first, nil
	}
	return id, nil, err
}
