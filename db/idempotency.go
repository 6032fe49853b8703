package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RequestKey names a REST request for its client's retries: the key holder
// (organisation and API key), the Idempotency-Key it sent, and SHA-256 of
// the request's method, path and body.
type RequestKey struct {
	OrgID, APIKeyID uuid.UUID
	Key             string
	RequestSHA256   [32]byte
}

// KeptAnswer is the answer kept for a key: its status, the headers that
// matter, and its body (nil with Dropped set when it was too large to keep).
type KeptAnswer struct {
	Status  int
	Headers map[string]string
	Body    []byte
	Dropped bool
}

// Claim is what claiming a key found.
type Claim struct {
	// First is set when the key was free: the request is the first with it
	// and runs; its answer is then recorded with KeepAnswer, or the key
	// freed with ReleaseRequestKey.
	First bool
	// OtherRequest is set when the key came first with another request.
	OtherRequest bool
	// Answer is the first request's answer; nil (and First, OtherRequest
	// unset) while it is still running.
	Answer *KeptAnswer
}

// RequestKeyLease is how long a claimed key waits for its request's answer:
// a claim older than that with no answer belongs to a process that stopped
// mid-request, and the key is free again. No request runs that long (the
// slowest body read is under a minute, and a request's statements are
// bounded).
const RequestKeyLease = 10 * time.Minute

// requestKeyPrune is how many expired keys of the organisation a claim
// deletes, so each write removes more than it adds and the delete stays
// small.
const requestKeyPrune = 100

// errKeyGone retries a claim whose holder was freed between its insert and
// its read (its request answered 5xx meanwhile); three such in a row end
// the claim in error.
var errKeyGone = errors.New("the key was freed while it was read")

// ClaimRequestKey claims k for a request about to run, in one short
// transaction that also drops up to requestKeyPrune of the organisation's
// keys older than PostKeyWindow. A key within its window is the first
// request's: Claim says whether it was another request, still running, or
// what it was answered. Of two requests with the same key at once, one
// claims it and the other finds it running.
func (d *DB) ClaimRequestKey(ctx context.Context, k RequestKey) (Claim, error) {
	for range 3 {
		c, err := d.claimRequestKey(ctx, k)
		if !errors.Is(err, errKeyGone) {
			return c, err
		}
	}
	return Claim{}, errKeyGone
}

func (d *DB) claimRequestKey(ctx context.Context, k RequestKey) (Claim, error) {
	var c Claim
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			DELETE FROM api_idempotency_keys k
			WHERE (k.org_id, k.api_key_id, k.key) IN (
			        SELECT org_id, api_key_id, key FROM api_idempotency_keys
			        WHERE org_id = $1 AND created_at < now() - make_interval(secs => $2)
			        LIMIT $3)
			   OR (k.org_id = $1 AND k.api_key_id = $4 AND k.key = $5
			       AND (k.created_at < now() - make_interval(secs => $2)
			            OR (k.status_code IS NULL AND k.created_at < now() - make_interval(secs => $6))))`,
			k.OrgID, PostKeyWindow.Seconds(), requestKeyPrune, k.APIKeyID, k.Key, RequestKeyLease.Seconds()); err != nil {
			return err
		}
		// A key claimed by a transaction not yet committed waits for it;
		// the statement after this one then sees that claim.
		tag, err := tx.Exec(ctx, `
			INSERT INTO api_idempotency_keys (org_id, api_key_id, key, request_sha256)
			VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			k.OrgID, k.APIKeyID, k.Key, k.RequestSHA256[:])
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			c.First = true
			return nil
		}
		var status *int
		var a KeptAnswer
		err = tx.QueryRow(ctx, `
			SELECT request_sha256 <> $4, status_code, coalesce(headers, '{}'), response
			FROM api_idempotency_keys
			WHERE org_id = $1 AND api_key_id = $2 AND key = $3`,
			k.OrgID, k.APIKeyID, k.Key, k.RequestSHA256[:]).
			Scan(&c.OtherRequest, &status, &a.Headers, &a.Body)
		if errors.Is(err, pgx.ErrNoRows) {
			return errKeyGone
		}
		if err != nil || c.OtherRequest || status == nil {
			return err
		}
		a.Status, a.Dropped = *status, a.Body == nil
		c.Answer = &a
		return nil
	})
	return c, err
}

// KeepAnswer records the answer of the request that claimed k. A nil body
// records that the answer was too large to keep.
func (d *DB) KeepAnswer(ctx context.Context, k RequestKey, a KeptAnswer) error {
	_, err := d.pool.Exec(ctx, `
		UPDATE api_idempotency_keys SET status_code = $5, headers = $6, response = $7
		WHERE org_id = $1 AND api_key_id = $2 AND key = $3 AND request_sha256 = $4 AND status_code IS NULL`,
		k.OrgID, k.APIKeyID, k.Key, k.RequestSHA256[:], a.Status, a.Headers, a.Body)
	return err
}

// ReleaseRequestKey frees k after its request ended without an answer to
// keep (5xx, or no answer at all): a retry runs anew.
func (d *DB) ReleaseRequestKey(ctx context.Context, k RequestKey) error {
	_, err := d.pool.Exec(ctx, `
		DELETE FROM api_idempotency_keys
		WHERE org_id = $1 AND api_key_id = $2 AND key = $3 AND request_sha256 = $4 AND status_code IS NULL`,
		k.OrgID, k.APIKeyID, k.Key, k.RequestSHA256[:])
	return err
}
