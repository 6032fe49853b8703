package integrations

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/signature"
)

// Request is an inbound post as it arrives at POST /api/in/{token}: what
// the HTTP layer reads off the request. Body is read by the intake, through
// the limit, at most once.
type Request struct {
	Token    string
	Received time.Time
	Header   http.Header
	Body     io.Reader
}

// Answer is what the intake answers a post: a status with either a JSON
// body or, for a refusal, the message of its {"error"} body.
type Answer struct {
	// Stage is the intake stage that answered: the one that refused the
	// post, or domain.StageStart for a post its workflow answered.
	Stage  domain.IntakeStage
	Status int
	Body   []byte
	Error  string
	// ReceiptID is the receipt the post is kept as (uuid.Nil when it is
	// not kept); for a sender's retry, the first post's.
	ReceiptID uuid.UUID
	// RetryAfter says when a post refused for the rate limit may come again.
	RetryAfter time.Duration
	// Challenge is the WWW-Authenticate of a post refused for its Basic
	// credentials.
	Challenge string
	// Replayed marks the first post's answer given again to a sender's
	// retry of it.
	Replayed bool
	// Unread says the body was not read to its end: the connection should
	// not be used for another request.
	Unread bool
	// notKept marks a refusal that leaves nothing to keep (a body that
	// could not be read).
	notKept bool
	// outcome is the outcome a refusal is kept with: failed unless set.
	outcome domain.Outcome
}

// refuse is a stage's refusal of a post.
func refuse(status int, msg string) *Answer { return &Answer{Status: status, Error: msg} }

// intakeStage is one rule a post must pass. Its run passes the post on to
// the next stage (nil) or stops it with the answer.
type intakeStage struct {
	name domain.IntakeStage
	// keep: a post this stage refuses is kept as a receipt, with its
	// body, so that support sees it (every post from the paused check on).
	keep bool
	run  func(p *Posts, ctx context.Context, post *post) (*Answer, error)
}

// intake is the inbound pipeline (docs/design.md#the-inbound-pipeline), in
// order: 404 unknown token, 429 rate limit, 409 paused, 413 body over 1 MB,
// 401 signature, 400 Idempotency-Key, the endpoint's mapping (422 when it
// fails, 200 ignored for null), 400 shape (413 too many items), then
// the post is stored as a receipt and its action runs as workflow
// inbound/<receipt_id>, whose first answer is the post's answer.
var intake = []intakeStage{
	{domain.StageToken, false, (*Posts).findEndpoint},
	{domain.StageRate, false, (*Posts).checkRate},
	{domain.StagePaused, true, (*Posts).checkPaused},
	{domain.StageSize, true, (*Posts).checkSize},
	{domain.StageSignature, true, (*Posts).checkSignature},
	{domain.StageSenderRetry, true, (*Posts).senderRetryKeys},
	{domain.StageMapping, true, (*Posts).mapBody},
	{domain.StageShape, true, (*Posts).checkShape},
	{domain.StageStore, false, (*Posts).store},
	{domain.StageStart, false, (*Posts).start},
}

// passedSignature says whether a post that reached stage got past the
// signature step: only such a post may be replayed.
func passedSignature(stage domain.IntakeStage) bool {
	at := slices.IndexFunc(intake, func(s intakeStage) bool { return s.name == stage })
	signed := slices.IndexFunc(intake, func(s intakeStage) bool { return s.name == domain.StageSignature })
	return at > signed
}

// post is an inbound post on its way through the intake: what each stage
// learns of it for the stages after.
type post struct {
	Request
	endpoint db.Endpoint
	rate     db.RateDecision
	// body is what was read of the body (at most one byte over the limit);
	// read says it was read, complete that it was read to its end.
	body           []byte
	read, complete bool
	// signed is what verified a signed endpoint's post (either scheme of the
	// service's, or the sender's HMAC).
	signed signature.Signed
	// keys name the post for its sender's retries; keyHeader is the header
	// its idempotency key came from.
	keys      []db.PostKey
	keyHeader string
	// mapping is the endpoint's current mapping (nil: none); a post it ran
	// on keeps its version and, mapped, the body it made.
	mapping        *db.MappingRef
	mappingVersion *int
	mapped         []byte
	receipt        uuid.UUID
	refs           []string
}

// Receive carries an inbound post through the intake and returns its
// answer. An error is a fault of the service (the database, a sealed
// secret), not of the post; the answer beside it still says whether the
// body was read.
func (p *Posts) Receive(ctx context.Context, r Request) (Answer, error) {
	in := &post{Request: r, keyHeader: domain.IdempotencyKeyHeader}
	for _, st := range intake {
		ans, err := st.run(p, ctx, in)
		if err != nil {
			return Answer{Stage: st.name, Unread: !in.readWhole()}, err
		}
		if ans == nil {
			continue
		}
		if ans.Stage == "" {
			ans.Stage = st.name
		}
		if st.keep && !ans.notKept {
			ans = p.keepRefusal(ctx, in, ans)
		}
		ans.Unread = !in.readWhole()
		return *ans, nil
	}
	panic("the intake's last stage answers every post")
}

// readWhole says whether the body was read to its end.
func (in *post) readWhole() bool { return in.read && in.complete }

// findEndpoint finds the endpoint of the post's token and takes the post
// from the endpoint's rate limit, in one round trip.
func (p *Posts) findEndpoint(ctx context.Context, in *post) (*Answer, error) {
	if !strings.HasPrefix(in.Token, secrets.InboundTokenPrefix) || len(in.Token) > 128 {
		return refuse(http.StatusNotFound, "Not found"), nil
	}
	found, err := p.DB.PostToEndpoint(ctx, secrets.Hash(in.Token))
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return refuse(http.StatusNotFound, "Not found"), nil
	}
	if err != nil {
		return nil, err
	}
	in.endpoint, in.rate, in.mapping = found.Endpoint, found.Rate, found.Mapping
	return nil, nil
}

// checkRate refuses a post over the endpoint's rate limit (counted on the
// endpoint, not kept).
func (p *Posts) checkRate(_ context.Context, in *post) (*Answer, error) {
	if in.rate.Allowed {
		return nil, nil
	}
	a := refuse(http.StatusTooManyRequests, "Rate limited")
	a.RetryAfter = in.rate.RetryAfter
	return a, nil
}

// checkPaused refuses a post to a paused endpoint.
func (p *Posts) checkPaused(_ context.Context, in *post) (*Answer, error) {
	if in.endpoint.State == domain.EndpointPaused {
		return refuse(http.StatusConflict, "the endpoint is paused"), nil
	}
	return nil, nil
}

// checkSize reads the body through the limit and refuses one over it; what
// follows the first byte over is not read.
func (p *Posts) checkSize(_ context.Context, in *post) (*Answer, error) {
	if a := in.readBody(); a != nil {
		return a, nil
	}
	if !in.complete {
		return refuse(http.StatusRequestEntityTooLarge, "the body is over 1 MB"), nil
	}
	return nil, nil
}

// readBody reads the body through the limit, never whole into memory
// first, once; a body that cannot be read (its sender stopped, or was too
// slow) is refused with nothing to keep.
func (in *post) readBody() *Answer {
	if in.read {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(in.Body, domain.MaxInboundBody+1))
	if err != nil {
		a := refuse(http.StatusBadRequest, "the body could not be read")
		a.notKept = true
		return a
	}
	in.body, in.read, in.complete = body, true, len(body) <= domain.MaxInboundBody
	return nil
}

// senderRetryKeys works out the keys that make a sender's retry the same
// post (docs/design.md#sender-retries): its Idempotency-Key (or, from a
// Standard Webhooks sender without one, its verified webhook-id), and the
// signature values that verified it. A post refused before this stage, or
// by it for a malformed key, claims none: its sender's corrected retry is
// a post of its own.
func (p *Posts) senderRetryKeys(_ context.Context, in *post) (*Answer, error) {
	key, ok := domain.ParseIdempotencyKey(in.Header.Values(domain.IdempotencyKeyHeader))
	if !ok {
		return refuse(http.StatusBadRequest, domain.BadIdempotencyKey), nil
	}
	if key == "" && in.signed.MessageID != "" {
		key, in.keyHeader = in.signed.MessageID, signature.HeaderWebhookID
	}
	if key != "" {
		in.keys = append(in.keys, db.PostKey{Kind: db.PostKeyIdempotency, Value: key})
	}
	for _, v := range in.signed.Values {
		in.keys = append(in.keys, db.PostKey{Kind: db.PostKeySignature, Value: v})
	}
	return nil, nil
}

// mapBody runs the endpoint's mapping, if it has one, on the body as sent
// (docs/mappings.md): what it returns is the body the shape check and the
// action read. A throw or a limit is answered 422 with the version that
// failed, null 200 ignored; both are kept, and may be replayed.
func (p *Posts) mapBody(ctx context.Context, in *post) (*Answer, error) {
	if in.mapping == nil {
		return nil, nil
	}
	prog, err := p.Scripts.program(ctx, p.DB, in.endpoint.OrgID, db.MappingOfEndpoint, in.endpoint.ID, *in.mapping)
	if err != nil {
		return nil, err
	}
	version := in.mapping.Version
	in.mappingVersion = &version
	run, err := p.Scripts.mapPost(ctx, prog, in.endpoint, in.body, in.keptHeaders(), in.Received)
	if domain.ErrorCode(err) == domain.EINVALID {
		return refuse(http.StatusBadRequest, domain.ErrorMessage(err)), nil
	}
	if err != nil {
		return nil, err
	}
	run.count()
	switch {
	case run.result == MappingIgnored:
		in.receipt = db.NewID()
		// An inbound answer (domain.InboundAnswer) that applied nothing.
		body, _ := json.Marshal(domain.InboundAnswer{ReceiptID: in.receipt, Action: in.endpoint.Action, Outcome: domain.OutcomeIgnored})
		return &Answer{Status: http.StatusOK, Body: body, outcome: domain.OutcomeIgnored}, nil
	case run.result == MappingFailed && strings.HasPrefix(run.err, "mapped body:"):
		return refuse(http.StatusBadRequest, run.err), nil
	case run.result == MappingFailed:
		a := refuse(http.StatusUnprocessableEntity, run.err)
		a.Body, _ = json.Marshal(map[string]any{"error": run.err, "mapping_version": version})
		return a, nil
	}
	in.mapped = run.body
	return nil, nil
}

// checkShape refuses a body that is not the action's shape before any
// workflow would run it (a mapped post's: the body its mapping made, and
// the answer says so); the apply step reads it again from the receipt, in
// the worker.
func (p *Posts) checkShape(_ context.Context, in *post) (*Answer, error) {
	body, prefix := in.body, ""
	if in.mapped != nil {
		body, prefix = in.mapped, "mapped body: "
	}
	if _, err := domain.ParseInbound(in.endpoint.Action, body); err != nil {
		return refuse(domain.ErrorCode(err).Status(), prefix+domain.ErrorMessage(err)), nil
	}
	return nil, nil
}

// store keeps the post as a receipt and claims its keys in one
// transaction; a sender's retry of a post is answered with that first
// post's answer instead, and nothing is stored or run again.
func (p *Posts) store(ctx context.Context, in *post) (*Answer, error) {
	id, first, err := p.DB.StorePost(ctx, in.newReceipt(nil), in.keys)
	if err != nil {
		return nil, err
	}
	if first != nil {
		return in.repeat(*first), nil
	}
	in.receipt = id
	return nil, nil
}

// start runs the stored post's action as its workflow, whose first answer
// (202 while it takes longer than the wait) is the post's answer.
func (p *Posts) start(ctx context.Context, in *post) (*Answer, error) {
	ep := in.endpoint
	out := p.Run(ctx, domain.InboundInput{OrgID: ep.OrgID, EndpointID: ep.ID, ReceiptID: in.receipt, Source: in.receipt,
		Action: ep.Action, Ref: domain.FirstRef(in.refs)})
	status, body := out.HTTPAnswer(in.receipt, ep.Action)
	return &Answer{Status: status, Body: body, ReceiptID: in.receipt}, nil
}

// keepRefusal keeps a refused post as a receipt with its answer, claiming
// the keys learnt so far (a retry of a post refused for its shape is
// answered the same), and answers it. A receipt that cannot be stored is
// logged: the sender still gets the refusal.
func (p *Posts) keepRefusal(ctx context.Context, in *post, ans *Answer) *Answer {
	if a := in.readBody(); a != nil {
		a.Stage = ans.Stage
		return a
	}
	refusal := &db.Refusal{Stage: ans.Stage, Status: ans.Status, Message: ans.Error, Outcome: ans.outcome, Response: ans.Body}
	id, first, err := p.DB.StorePost(ctx, in.newReceipt(refusal), in.keys)
	switch {
	case err != nil:
		logging.From(ctx, p.Log).Error("storing a refused inbound post", zap.Error(err))
	case first != nil:
		return in.repeat(*first)
	default:
		ans.ReceiptID = id
	}
	return ans
}

// keptHeaders are the request's headers a receipt keeps: the fixed list,
// and the headers the endpoint's own verification signs with.
func (in *post) keptHeaders() map[string]string {
	kept := map[string]string{}
	for _, h := range append(slices.Clip(keptHeaders), signedHeaders(in.endpoint)...) {
		if v := in.Header.Get(h); v != "" {
			kept[h] = capHeader(v)
		}
	}
	return kept
}

// receiptPreview is how much of a body over the limit a receipt keeps.
const receiptPreview = 64 << 10

// keptHeaders are the request headers a receipt records. The signature
// headers of both schemes are among them: a replay verifies them again. A
// receipt of an hmac endpoint keeps its scheme's headers too
// (signedHeaders); Authorization is never kept.
var keptHeaders = []string{"Content-Type", "Content-Length", "User-Agent", "X-Request-Id", "X-Forwarded-For", signature.Header,
	signature.HeaderWebhookID, signature.HeaderWebhookTimestamp, signature.HeaderWebhookSignature, domain.IdempotencyKeyHeader}

// newReceipt is the post as its receipt keeps it: refused, or (refusal
// nil) accepted for its workflow. Its references are read once, here: the
// receipt keeps them and the first names its workflow's run.
func (in *post) newReceipt(refusal *db.Refusal) db.NewReceipt {
	ep := in.endpoint
	rec := db.NewReceipt{ID: in.receipt, OrgID: ep.OrgID, EndpointID: ep.ID, Action: ep.Action, ReceivedAt: in.Received,
		Headers: in.keptHeaders(), Body: in.body, Size: len(in.body), BodyComplete: in.complete, Refusal: refusal,
		MappingVersion: in.mappingVersion, MappedBody: in.mapped}
	if !in.complete {
		rec.Body = in.body[:receiptPreview]
	}
	// A mapped post's references are those of the body its action reads.
	refsOf := rec.Body
	if in.mapped != nil {
		refsOf = in.mapped
	}
	if in.refs = domain.ExtractRefs(refsOf); in.refs == nil {
		in.refs = []string{}
	}
	rec.Refs = in.refs
	return rec
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

// repeat answers a sender's retry of a post seen on the endpoint within
// db.PostKeyWindow with that first post's answer, marked replayed; nothing
// runs again and no receipt is stored.
func (in *post) repeat(first db.FirstPost) *Answer {
	name := "this " + in.keyHeader
	if first.Kind == db.PostKeySignature {
		name = "this signature"
	}
	var a *Answer
	switch {
	case first.OtherBody:
		a = refuse(http.StatusUnprocessableEntity, name+" was already used on this endpoint with another body")
	case first.Status == nil:
		a = refuse(http.StatusConflict, "the first post with "+name+" has no answer yet: retry later")
	default:
		a = &Answer{Status: *first.Status, Body: first.Response, ReceiptID: first.ReceiptID, Replayed: true}
	}
	a.Stage = domain.StageSenderRetry
	return a
}
