package api

import (
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/signature"
)

// receiptPreview is how much of a body over the limit a receipt keeps.
const receiptPreview = 64 << 10

// keptHeaders are the request headers a receipt records.
// The signature headers of both schemes are among them: a replay verifies
// them again.
var keptHeaders = []string{"Content-Type", "Content-Length", "User-Agent", "X-Request-Id", "X-Forwarded-For", signature.Header,
	signature.HeaderWebhookID, signature.HeaderWebhookTimestamp, signature.HeaderWebhookSignature, IdempotencyKeyHeader}

// inbound serves POST /api/in/{token} in the order of
// docs/design.md#the-inbound-pipeline: 404 unknown token, 429 rate limit,
// 409 paused, 413 body over 1 MB, 401 signature, 400 Idempotency-Key, 400
// shape, 413 too many items; then the post is stored as a receipt and its
// action runs as workflow inbound/<receipt_id>, whose first answer is the
// HTTP answer (202 when it takes longer than 20 seconds). A sender's retry
// of a post (docs/design.md#sender-retries: the same Idempotency-Key, or
// the same signature) is answered with the first post's answer instead of
// being stored and run again.
func (s *Server) inbound(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	received := time.Now()
	token := chi.URLParam(r, "token")
	if !strings.HasPrefix(token, secrets.InboundTokenPrefix) || len(token) > 128 {
		closeUnread(w, r)
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	post, err := s.db.PostToEndpoint(ctx, secrets.Hash(token))
	if err != nil {
		closeUnread(w, r)
		s.inboundFail(w, r, err)
		return
	}
	ep := post.Endpoint
	if !post.Rate.Allowed {
		closeUnread(w, r)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(post.Rate.RetryAfter.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "Rate limited")
		return
	}
	rec := db.NewReceipt{OrgID: ep.OrgID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: received,
		Headers: map[string]string{}, BodyComplete: true}
	for _, h := range keptHeaders {
		if v := r.Header.Get(h); v != "" {
			rec.Headers[h] = capHeader(v)
		}
	}
	// The body is read through a limit, never whole into memory first, and
	// within the time its limit allows (one read deadline for the request).
	_ = http.NewResponseController(w).SetReadDeadline(received.Add(bodyReadTimeout(domain.MaxInboundBody)))
	body, err := io.ReadAll(io.LimitReader(r.Body, domain.MaxInboundBody+1))
	if err != nil {
		closeUnread(w, r)
		writeError(w, http.StatusBadRequest, "the body could not be read")
		return
	}
	rec.Body, rec.Size = body, len(body)
	refuse := func(status int, msg string) {
		s.storeRefusal(ctx, w, rec, status, msg)
	}
	switch {
	case ep.State == domain.EndpointPaused:
		refuse(http.StatusConflict, "the endpoint is paused")
		return
	case len(body) > domain.MaxInboundBody:
		rec.Body, rec.BodyComplete = body[:receiptPreview], false
		closeUnread(w, r) // what follows the first byte over is not read
		refuse(http.StatusRequestEntityTooLarge, "the body is over 1 MB")
		return
	}
	// The keys that make a sender's retry the same post: its
	// Idempotency-Key, and on a signed endpoint the signature values that
	// verified it (either scheme's), so that a captured signed post sent
	// again runs nothing. A Standard Webhooks sender keeps a message's
	// webhook-id for every retry of it: once verified, it is the post's
	// idempotency key when no Idempotency-Key header names the post.
	var keys []db.PostKey
	var messageID string
	if ep.RequireSignature {
		secret, err := integrations.EndpointSecret(s.sealer, post.Endpoint)
		if err != nil {
			s.inboundFail(w, r, err)
			return
		}
		signed, err := signature.VerifyRequest(r.Header.Get, secret, body, time.Now(), signature.DefaultTolerance)
		if err != nil {
			refuse(http.StatusUnauthorized, "signature required and missing or wrong: "+err.Error())
			return
		}
		for _, v := range signed.Values {
			keys = append(keys, db.PostKey{Kind: db.PostKeySignature, Value: v})
		}
		messageID = signed.MessageID
	}
	idempotencyName := IdempotencyKeyHeader
	key, ok := idempotencyKey(r.Header.Values(IdempotencyKeyHeader))
	if !ok {
		refuse(http.StatusBadRequest, badIdempotencyKey)
		return
	}
	if key != "" {
		keys = append([]db.PostKey{{Kind: db.PostKeyIdempotency, Value: key}}, keys...)
	} else if messageID != "" {
		idempotencyName = signature.HeaderWebhookID
		keys = append([]db.PostKey{{Kind: db.PostKeyIdempotency, Value: messageID}}, keys...)
	}
	// The shape is checked before the post is stored, so that a malformed
	// post is refused without a workflow; the apply step reads it again
	// from the receipt, in the worker.
	if _, err := domain.ParseInbound(ep.Action, body); err != nil {
		rec.Refusal = &db.Refusal{Status: domain.ErrorCode(err).Status(), Message: domain.ErrorMessage(err)}
	}
	// Read once: stored with the receipt, and the first names its run.
	if rec.Refs = domain.ExtractRefs(rec.Body); rec.Refs == nil {
		rec.Refs = []string{}
	}
	id, first, err := s.db.StorePost(ctx, rec, keys)
	if err != nil {
		s.inboundFail(w, r, err)
		return
	}
	if first != nil {
		answerRepeat(w, *first, idempotencyName)
		return
	}
	w.Header().Set("X-Receipt-Id", id.String())
	if rec.Refusal != nil {
		writeError(w, rec.Refusal.Status, rec.Refusal.Message)
		return
	}
	out := s.inbounds.Run(ctx, domain.InboundInput{
		OrgID: ep.OrgID, EndpointID: ep.ID, ReceiptID: id, Source: id, Action: ep.Action, Ref: domain.FirstRef(rec.Refs),
	})
	status, answer := out.HTTPAnswer(id, ep.Action)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// maxKeptHeader bounds each header value a receipt keeps, in bytes.
const maxKeptHeader = 1 << 10

// capHeader cuts a header value to maxKeptHeader bytes, at a character
// boundary: a receipt keeps what a sender sent, not as much as it likes.
func capHeader(v string) string {
	if len(v) <= maxKeptHeader {
		return v
	}
	cut := maxKeptHeader
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}

// answerRepeat answers a sender's retry of a post seen on the endpoint
// within 24 hours with that first post's answer, marked
// Idempotent-Replayed; nothing runs again and no receipt is stored.
// idempotencyName is the header the post's idempotency key came from.
func answerRepeat(w http.ResponseWriter, first db.FirstPost, idempotencyName string) {
	name := "this " + idempotencyName
	if first.Kind == db.PostKeySignature {
		name = "this signature"
	}
	switch {
	case first.OtherBody:
		writeError(w, http.StatusUnprocessableEntity, name+" was already used on this endpoint with another body")
	case first.Status == nil:
		writeError(w, http.StatusConflict, "the first post with "+name+" has no answer yet: retry later")
	default:
		w.Header().Set("X-Receipt-Id", first.ReceiptID.String())
		w.Header().Set(ReplayedHeader, "true")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(*first.Status)
		_, _ = w.Write(first.Response)
	}
}

// storeRefusal stores a refused post that claims no keys (refused before
// they are known, or for a malformed Idempotency-Key), with its answer, and
// answers it.
func (s *Server) storeRefusal(ctx context.Context, w http.ResponseWriter, rec db.NewReceipt, status int, msg string) {
	rec.Refusal = &db.Refusal{Status: status, Message: msg}
	id, err := s.db.StoreReceipt(ctx, rec)
	if err != nil {
		logging.From(ctx, s.log).Error("storing a refused inbound post", zap.Error(err))
	} else {
		w.Header().Set("X-Receipt-Id", id.String())
	}
	writeError(w, status, msg)
}

func (s *Server) inboundFail(w http.ResponseWriter, r *http.Request, err error) {
	writeErrorBody(w, s.fail(r.Context(), err))
}
