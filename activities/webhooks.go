package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/metrics"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/signature"
)

// userAgent is sent with every delivery.
const userAgent = "commerce-webhooks/1.0"

// excerptLimit is how much of a receiver's answer an attempt keeps.
const excerptLimit = 1024

// AdmitRetry asks the delivery's subscription whether its automatic retry
// may go now (db.AdmitRetry).
func (a *Activities) AdmitRetry(ctx context.Context, in domain.AdmitInput) (domain.Admission, error) {
	adm, err := a.DB.AdmitRetry(ctx, in.OrgID, in.DeliveryID, in.Tries, in.Manual)
	return adm, businessError(err)
}

// DeliverWebhook sends one attempt of a delivery: the event as JSON (or
// the body the subscription's transformation makes of it), signed
// now with the subscription's secret (and, for 24 hours after a rotation,
// also with the secret it replaced) by both schemes (X-Service-Signature and
// Standard Webhooks), waiting at most 10 seconds for the answer. A 2xx
// answer is success; anything else (another status, a
// timeout, a refused address) is a failed attempt, reported in the result,
// not as an error: errors are for the service's own faults (the database),
// which Temporal retries. The attempt and where it leaves the delivery are
// recorded. A retry after a crash sends the same attempt again, with the
// same delivery id and attempt number. A subscription secret that cannot be
// opened ends the delivery with a non-retryable error. A transformation
// that answers null ends it skipped, with no request; one that fails
// (throws, passes a limit, answers what cannot be sent) fails the attempt
// without a request.
func (a *Activities) DeliverWebhook(ctx context.Context, in domain.DeliverInput) (domain.DeliverResult, error) {
	t, err := a.DB.WebhookTarget(ctx, in.OrgID, in.DeliveryID)
	if err != nil {
		return domain.DeliverResult{}, businessError(err)
	}
	if !t.Active {
		if err := a.DB.EndWebhookDelivery(ctx, in.OrgID, in.DeliveryID, "subscription disabled"); err != nil {
			return domain.DeliverResult{}, err
		}
		return domain.DeliverResult{Skipped: true, Error: "subscription disabled"}, nil
	}
	if t.Status == domain.WebhookSkipped && !in.Manual {
		// Support skipped it while it waited for a retry: nothing is sent,
		// and its run ends.
		return domain.DeliverResult{Skipped: true, Error: "skipped by support"}, nil
	}
	signing, err := a.signingSecrets(t)
	if err != nil {
		return domain.DeliverResult{}, a.unopenableSecret(ctx, in, err)
	}

	started := a.now()
	// The subscription's transformation, if it has one, makes the body
	// (docs/webhooks.md#transformations): null skips the event, a failure
	// fails the attempt without a request.
	var tr *integrations.Transformed
	if t.Transformation != nil {
		out, err := a.transform(ctx, t)
		if err != nil {
			return domain.DeliverResult{}, err
		}
		if out.Result == integrations.TransformSkipped {
			return a.skippedByTransformation(ctx, in, t)
		}
		tr = &out
	}
	var res domain.DeliverResult
	var excerpt *string
	rec := db.WebhookAttemptRecord{OrgID: in.OrgID, DeliveryID: in.DeliveryID, Attempt: in.Attempt, Manual: in.Manual, StartedAt: started}
	switch {
	case tr == nil:
		body, err := json.Marshal(t.Event)
		if err != nil {
			return domain.DeliverResult{}, err
		}
		res, excerpt = a.send(ctx, t, in, signing, body, nil, started)
	case tr.Result == integrations.TransformFailed:
		// No request: the attempt fails with why, and counts.
		res.Error, rec.NoRequest = tr.AttemptError(), true
	default:
		res, excerpt = a.send(ctx, t, in, signing, tr.Body, tr.Headers, started)
		rec.BodySent = tr.Body
	}
	rec.Duration, rec.Excerpt = a.now().Sub(started), excerpt
	if tr != nil {
		v := t.Transformation.Version
		rec.TransformationVersion = &v
	}
	if res.StatusCode != 0 {
		code := res.StatusCode
		rec.StatusCode = &code
	}
	if res.Error != "" {
		msg := res.Error
		rec.Error = &msg
	}
	rec.Status = domain.WebhookStatusAfter(res.Succeeded, in.Last)
	if rec.Status == domain.WebhookFailed {
		policy := a.Delivery
		if in.Policy != nil {
			policy = *in.Policy
		}
		retry := policy.RetryAt(a.now(), in.DeliveryID)
		rec.NextAttemptAt, res.RetryAt = &retry, &retry
	}
	failing, err := a.DB.RecordWebhookAttempt(ctx, rec)
	if err != nil {
		return domain.DeliverResult{}, err
	}
	metrics.WebhookAttempt(string(rec.Status), failing)
	logging.Traced(ctx, a.Log).Info("webhook attempt", zap.String("delivery_id", in.DeliveryID.String()), zap.Int("attempt", in.Attempt),
		zap.Bool("succeeded", res.Succeeded), zap.Int("status_code", res.StatusCode), zap.String("error", res.Error),
		zap.Duration("duration", rec.Duration))
	return res, nil
}

// skippedByTransformation ends a delivery whose subscription's
// transformation answered null for its event: skipped, without a request
// or an attempt.
func (a *Activities) skippedByTransformation(ctx context.Context, in domain.DeliverInput, t db.WebhookTarget) (domain.DeliverResult, error) {
	v := t.Transformation.Version
	if err := a.DB.SkipWebhookDeliveryByTransformation(ctx, in.OrgID, in.DeliveryID, v); err != nil {
		return domain.DeliverResult{}, err
	}
	logging.Traced(ctx, a.Log).Info("webhook delivery skipped by its transformation", zap.String("delivery_id", in.DeliveryID.String()),
		zap.Int("attempt", in.Attempt), zap.Int("transformation_version", v))
	return domain.DeliverResult{Skipped: true, Error: db.SkippedByTransformation(v)}, nil
}

// signingSecrets opens the secrets an attempt is signed with now: the
// subscription's, then, while domain.PreviousSecretSigns, the one a
// rotation replaced.
func (a *Activities) signingSecrets(t db.WebhookTarget) ([]string, error) {
	current, previous, expires := t.SealedSecrets()
	secret, err := a.Sealer.OpenSealed(current)
	if err != nil {
		return nil, err
	}
	out := []string{secret}
	if previous != nil && domain.PreviousSecretSigns(expires, a.now()) {
		if secret, err = a.Sealer.OpenSealed(*previous); err != nil {
			return nil, err
		}
		out = append(out, secret)
	}
	return out, nil
}

// send makes the request and reads the start of the answer.
func (a *Activities) send(ctx context.Context, t db.WebhookTarget, in domain.DeliverInput, secrets []string, body []byte,
	extra []integrations.Header, at time.Time) (domain.DeliverResult, *string) {
	rctx, cancel := context.WithTimeout(ctx, outbound.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		// The parser's error quotes the whole URL, credentials and all.
		return domain.DeliverResult{Error: "the subscription URL is not valid"}, nil
	}
	// A transformation's headers first: none of them is one of those set
	// below (integrations.Transform refuses them).
	for _, h := range extra {
		req.Header.Set(h.Name, h.Value)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(domain.HeaderEventID, t.Event.ID.String())
	req.Header.Set(domain.HeaderEventType, t.Event.Type)
	req.Header.Set(domain.HeaderDeliveryID, in.DeliveryID.String())
	req.Header.Set(domain.HeaderAttempt, strconv.Itoa(in.Attempt))
	// Both schemes (docs/design.md#signatures): X-Service-Signature, and the
	// Standard Webhooks headers with the event id as the message id, which
	// every attempt of every delivery of the event repeats; each secret
	// that signs gives one signature of each.
	signature.SignRequest(req.Header, secrets, t.Event.ID.String(), at, body)
	resp, err := a.Webhooks.Do(req)
	if err != nil {
		return domain.DeliverResult{Error: outbound.Describe(err)}, nil
	}
	defer resp.Body.Close()
	// The status decides; the body is kept for support as far as it came.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, excerptLimit))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	excerpt := validUTF8(head)
	res := domain.DeliverResult{StatusCode: resp.StatusCode, Succeeded: resp.StatusCode >= 200 && resp.StatusCode < 300}
	if !res.Succeeded {
		res.Error = fmt.Sprintf("the receiver answered %d", resp.StatusCode)
	}
	return res, &excerpt
}

// validUTF8 keeps the valid UTF-8 of b (an answer cut at 1 KB may end
// inside a character, and a binary one is not text).
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// unopenableSecret ends a delivery whose subscription secret cannot be
// opened (sealed under another key, or damaged), which no retry can change,
// and fails its workflow for good.
func (a *Activities) unopenableSecret(ctx context.Context, in domain.DeliverInput, cause error) error {
	const reason = "the subscription's signing secret cannot be opened"
	logging.Traced(ctx, a.Log).Error(reason, zap.String("delivery_id", in.DeliveryID.String()), zap.Error(cause))
	if err := a.DB.EndWebhookDelivery(ctx, in.OrgID, in.DeliveryID, reason); err != nil {
		return err
	}
	return temporal.NewNonRetryableApplicationError(reason, ErrSecretUnopenable, nil)
}

// ErrSecretUnopenable is the application error type of a delivery whose
// subscription secret cannot be opened.
const ErrSecretUnopenable = domain.SecretUnopenable
