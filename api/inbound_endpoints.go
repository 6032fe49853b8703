package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// The routes of one inbound endpoint: reading it, and setting how it
// verifies its sender (docs/design.md#sender-verification).

// EndpointOutput is one inbound endpoint.
type EndpointOutput struct{ Body EndpointItem }

// SetVerificationInput is PUT /api/v1/inbound/endpoints/{id}/verification.
type SetVerificationInput struct {
	IDPath
	Body struct {
		Kind     string      `json:"kind" enum:"service,hmac,basic,none" doc:"How the endpoint verifies its sender from now on. service: the service's own signature, when the endpoint was made to require one (its signing secret is kept while it verifies by another kind); hmac: the sender's own HMAC of the body, with a secret the service makes; basic: HTTP Basic authentication, with a password the service makes; none: nothing but the token in the URL." example:"hmac"`
		HMAC     *HMACScheme `json:"hmac,omitempty" doc:"The sender's HMAC scheme: required for kind hmac, refused with any other."`
		Username string      `json:"username,omitempty" maxLength:"200" doc:"The HTTP Basic username (no colon): required for kind basic, refused with any other." example:"erp"`
	}
}

// VerificationSet is an endpoint's verification just set, with the secret
// the service made for it, shown this once.
type VerificationSet struct {
	EndpointID uuid.UUID `json:"endpoint_id"`
	EndpointVerification
	Secret   *string `json:"secret" doc:"For kind hmac, the key the sender signs with (the whole string, as GitHub and Shopify use theirs): shown this once, kept sealed, never readable again. Null for the other kinds."`
	Password *string `json:"password" doc:"For kind basic, the HTTP Basic password: shown this once, kept sealed, never readable again. Null for the other kinds."`
}

// VerificationOutput is PUT .../verification's answer.
type VerificationOutput struct{ Body VerificationSet }

func (s *Server) registerInboundEndpoints() {
	huma.Register(s.api, access(managementOp("get-inbound-endpoint", http.MethodGet, "/api/v1/inbound/endpoints/{id}", tagInbound,
		"Read an inbound endpoint", "One inbound endpoint as the list shows it, with how it verifies its sender (kind and scheme). "+
			"Never its token or a secret."), domain.ScopeInboundRead, "", http.StatusNotFound), s.getInboundEndpoint)
	huma.Register(s.api, answersSecret(access(managementOp("set-inbound-endpoint-verification", http.MethodPut,
		"/api/v1/inbound/endpoints/{id}/verification", tagInbound, "Set how an endpoint verifies its sender",
		"Sets how posts to the endpoint are verified, in place of what it did (401 for a post that does not pass):\n\n"+
			"- `service`: the service's own signature (X-Service-Signature or Standard Webhooks, within five minutes), when the "+
			"endpoint was made to require one; an endpoint made without takes unsigned posts. The default.\n"+
			"- `hmac`: the sender's own HMAC of the body exactly as sent, in the header `hmac.header`, after `hmac.prefix`, in hex "+
			"or base64, keyed with the secret this answer carries. GitHub: `{\"header\": \"X-Hub-Signature-256\", \"algorithm\": "+
			"\"sha256\", \"encoding\": \"hex\", \"prefix\": \"sha256=\"}`; Shopify: `{\"header\": \"X-Shopify-Hmac-Sha256\", "+
			"\"algorithm\": \"sha256\", \"encoding\": \"base64\"}`. With `hmac.timestamp_header` the signed content is "+
			"`<timestamp>.<body>` and a timestamp more than `tolerance_seconds` (300) from the clock is refused as stale. The same "+
			"signature again within 24 hours is the sender's retry: answered with the first post's answer, run once.\n"+
			"- `basic`: HTTP Basic authentication with `username` and the password this answer carries.\n"+
			"- `none`: nothing is verified but the token in the URL.\n\n"+
			"Each call for hmac or basic makes a new secret (or password): the one before stops working at once. A deleted "+
			"endpoint answers 409; a scheme that breaks a rule, 400 naming the field."),
		domain.ScopeInboundWrite, "", http.StatusBadRequest, http.StatusNotFound, http.StatusConflict)), s.setEndpointVerification)
}

func (s *Server) getInboundEndpoint(ctx context.Context, in *IDPath) (*EndpointOutput, error) {
	return readByID[EndpointOutput](ctx, s, in.ID, "endpoint", answered(s.manage.Endpoint, newEndpointItem))
}

func (s *Server) setEndpointVerification(ctx context.Context, in *SetVerificationInput) (*VerificationOutput, error) {
	cfg := domain.VerificationConfig{Username: in.Body.Username}
	if h := in.Body.HMAC; h != nil {
		cfg.HMAC = &domain.HMACConfig{Header: h.Header, Algorithm: h.Algorithm, Encoding: h.Encoding, Prefix: h.Prefix,
			TimestampHeader: h.TimestampHeader, ToleranceSeconds: h.ToleranceSeconds}
	}
	v, err := byID(ctx, s, in.ID, "endpoint", func(a integrations.Actor, org, id uuid.UUID) (db.SetVerification, error) {
		return s.manage.SetEndpointVerification(ctx, a, org, id, db.NewVerification{Kind: domain.Verification(in.Body.Kind), Config: cfg})
	})
	if err != nil {
		return nil, err
	}
	return &VerificationOutput{Body: NewVerificationSet(v)}, nil
}

// NewVerificationSet is the answer of a verification just set, with its
// secret; the CLI prints it too.
func NewVerificationSet(v db.SetVerification) VerificationSet {
	out := VerificationSet{EndpointID: v.ID, EndpointVerification: NewEndpointVerification(v.Verification, v.VerificationConfig)}
	switch v.Verification {
	case domain.VerifyHMAC:
		out.Secret = v.Secret
	case domain.VerifyBasic:
		out.Password = v.Secret
	}
	return out
}
