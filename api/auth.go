package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Metadata keys an operation's access rules are kept under.
const (
	metaScope    = "scope"
	metaAddon    = "addon"
	metaDeclared = "declared-errors"
	metaSecret   = "answers-secret"
)

// access declares what an operation requires: a scope and, for add-on
// routes, the add-on. It fills in the OpenAPI security requirement, the
// x-required-scope extension and the error answers every such route has,
// and gives a write the time its largest body needs to arrive.
func access(op huma.Operation, scope domain.Scope, addon domain.Addon, errs ...int) huma.Operation {
	op.Security = []map[string][]string{{bearerScheme: {string(scope)}}}
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	op.Metadata[metaScope] = scope
	if addon != "" {
		op.Metadata[metaAddon] = addon
	}
	if op.Extensions == nil {
		op.Extensions = map[string]any{}
	}
	op.Extensions["x-required-scope"] = string(scope)
	desc := fmt.Sprintf("Requires scope `%s`.", scope)
	if addon != "" {
		desc += fmt.Sprintf(" Requires the %s add-on (404 when it is off, unless the organisation still holds %s rows and this is a read).",
			strings.ToUpper(string(addon[:1]))+string(addon[1:]), addon)
	}
	if op.Description != "" {
		desc = op.Description + "\n\n" + desc
	}
	op.Description = desc
	if op.Method != http.MethodGet {
		if op.MaxBodyBytes == 0 {
			op.MaxBodyBytes = 1 << 20 // Huma's default, made explicit
		}
		op.BodyReadTimeout = bodyReadTimeout(op.MaxBodyBytes)
		// Huma refuses a body that fills MaxBodyBytes, and a body of exactly
		// the route's limit is allowed: only one over it answers 413.
		op.MaxBodyBytes++
	}
	op.Errors = append([]int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests}, errs...)
	op.Metadata[metaDeclared] = slices.Clone(op.Errors)
	return op
}

// Body read time: a write's body may take a second per MB of its route's
// limit, plus slack for the connection to get going, so a full-size body
// from a link of 1 MB/s still arrives (Huma's default is 5 s whatever the
// limit, too short for a 32 MB import).
const (
	bodyReadRate  = 1 << 20 // bytes a second
	bodyReadSlack = 10 * time.Second
	// defaultMaxBody is Huma's body limit for a route that sets none.
	defaultMaxBody = 1 << 20
)

// answersSecret marks an operation whose answer carries a secret shown
// once: the answer is sent with Cache-Control: no-store, and an
// Idempotency-Key (a POST's) keeps it without the secret, so a retry with
// the key gets it with secret null and the secret is kept nowhere in plain
// text.
func answersSecret(op huma.Operation) huma.Operation {
	op.Metadata[metaSecret] = true
	op.Description += "\n\nThe secret is shown in this answer only: it is sent with `Cache-Control: no-store`"
	if op.Method == http.MethodPost {
		op.Description += ", and a retry with the same `Idempotency-Key` gets this answer again with `secret` null."
	} else {
		op.Description += "; no read shows it again."
	}
	return op
}

// secretAnswer reports whether op's answer carries a secret (answersSecret).
func secretAnswer(op *huma.Operation) bool {
	v, _ := op.Metadata[metaSecret].(bool)
	return v
}

// bodyReadTimeout is how long a write with body limit maxBytes (Huma's
// default when 0) may take to receive its body.
func bodyReadTimeout(maxBytes int64) time.Duration {
	if maxBytes <= 0 {
		maxBytes = defaultMaxBody
	}
	return time.Duration(maxBytes/bodyReadRate)*time.Second + bodyReadSlack
}

type authKey struct{}

// keyAuth returns the authentication of the request ctx belongs to.
func keyAuth(ctx context.Context) db.KeyAuth {
	a, _ := ctx.Value(authKey{}).(db.KeyAuth)
	return a
}

// orgID is the organisation the request acts for.
func orgID(ctx context.Context) uuid.UUID { return keyAuth(ctx).Principal.OrgID }

// authenticate is the REST API's gate, run before input is parsed so that its
// answers take precedence over input errors: 401 (key), 429 (rate), 403
// (scope), 404 (add-on). One database round trip covers the key, its rate
// limit and the add-on flags.
func (s *Server) authenticate(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	scope, _ := op.Metadata[metaScope].(domain.Scope)
	if scope == "" {
		next(ctx)
		return
	}
	token, ok := bearerToken(ctx.Header("Authorization"))
	if !ok {
		refuseEarly(ctx)
		_ = huma.WriteErr(s.api, ctx, http.StatusUnauthorized, "API key is missing, unknown or revoked")
		return
	}
	addon, _ := op.Metadata[metaAddon].(domain.Addon)
	auth, err := s.db.AuthenticateKey(ctx.Context(), secrets.Hash(token), addon)
	if err != nil {
		refuseEarly(ctx)
		s.writeFail(ctx, err)
		return
	}
	rateHeaders(ctx, db.APIKeyLimit, auth.Rate)
	if !auth.Rate.Allowed || !auth.Principal.Has(scope) {
		refuseEarly(ctx)
	}
	if !auth.Rate.Allowed {
		ctx.SetHeader("Retry-After", strconv.Itoa(int(math.Ceil(auth.Rate.RetryAfter.Seconds()))))
		_ = huma.WriteErr(s.api, ctx, http.StatusTooManyRequests, "Rate limited")
		return
	}
	if !auth.Principal.Has(scope) {
		_ = huma.WriteErr(s.api, ctx, http.StatusForbidden, fmt.Sprintf("API key lacks the scope %s", scope))
		return
	}
	open := auth.AddonOpen()
	if op.Method != http.MethodGet {
		open = auth.AddonOn // writes need the add-on switched on
	}
	if !open {
		refuseEarly(ctx)
		_ = huma.WriteErr(s.api, ctx, http.StatusNotFound, "Not found")
		return
	}
	next(huma.WithValue(ctx, authKey{}, auth))
}

// bearerToken reads "Bearer <key>"; a token that cannot be an API key is
// refused without a database lookup.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if !strings.HasPrefix(token, secrets.APIKeyPrefix) || len(token) > 128 {
		return "", false
	}
	return token, true
}

// rateHeaders writes the IETF RateLimit-Policy and RateLimit fields.
func rateHeaders(ctx huma.Context, l db.Limit, d db.RateDecision) {
	ctx.SetHeader("RateLimit-Policy", fmt.Sprintf(`"key";q=%d;w=%d`, l.Burst(), int(l.Window.Seconds())))
	ctx.SetHeader("RateLimit", fmt.Sprintf(`"key";r=%d;t=%d`, d.Remaining, int(math.Ceil(d.Reset.Seconds()))))
}
