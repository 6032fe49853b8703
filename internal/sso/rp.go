package sso

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/outbound"
)

// discoveryTTL is how long a provider's discovery document (and the relying
// party made from it, with its cached keys) is kept.
const discoveryTTL = 24 * time.Hour

// Scopes are what the console asks a provider for.
var Scopes = []string{oidc.ScopeOpenID, oidc.ScopeEmail, oidc.ScopeProfile}

// Parties keeps a relying party per provider setting: discovery is fetched
// once a day, and the JWKS is cached by the party's key set, fetched again
// when a token names a key id it does not know (a key rotation).
type Parties struct {
	client *http.Client
	mu     sync.Mutex
	cached map[string]cachedParty
}

type cachedParty struct {
	rp      rp.RelyingParty
	fetched time.Time
}

// NewParties makes the relying parties' cache; their requests go through
// the SSRF-guarded client for targets.
func NewParties(targets outbound.Targets) *Parties {
	return &Parties{client: outbound.Client(targets), cached: map[string]cachedParty{}}
}

type nonceKey struct{}

// party is the relying party of a provider setting (with its client
// secret) and redirect URL, made (discovery fetched) at first use.
func (p *Parties) party(ctx context.Context, cfg db.OrgSSO, redirectURL string) (rp.RelyingParty, error) {
	sum := sha256.Sum256([]byte(cfg.Issuer + "\x00" + cfg.ClientID + "\x00" + cfg.ClientSecret + "\x00" + redirectURL))
	id := hex.EncodeToString(sum[:])
	p.mu.Lock()
	c, ok := p.cached[id]
	p.mu.Unlock()
	if ok && time.Since(c.fetched) < discoveryTTL {
		return c.rp, nil
	}
	party, err := rp.NewRelyingPartyOIDC(ctx, cfg.Issuer, cfg.ClientID, cfg.ClientSecret, redirectURL, Scopes,
		rp.WithHTTPClient(p.client),
		rp.WithVerifierOpts(rp.WithNonce(func(ctx context.Context) string {
			n, _ := ctx.Value(nonceKey{}).(string)
			return n
		})))
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.cached {
		if time.Since(v.fetched) >= discoveryTTL {
			delete(p.cached, k)
		}
	}
	p.cached[id] = cachedParty{rp: party, fetched: time.Now()}
	return party, nil
}

// Start is a sign-in about to be sent to the provider: the state and
// nonce it carries, the binder (kept in the browser's cookie; the PKCE
// verifier is derived from it) and the provider's authorization URL.
type Start struct {
	State, Nonce, Binder, URL string
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// verifier is the PKCE code verifier of a binder: only the browser that
// started the sign-in holds it.
func verifier(binder string) string {
	sum := sha256.Sum256([]byte("commerce console pkce\x00" + binder))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Begin prepares a sign-in of email through the provider: discovery is
// fetched (or taken from the cache) and the authorization URL made, with
// PKCE (S256), state, nonce and email as login hint.
func (p *Parties) Begin(ctx context.Context, cfg db.OrgSSO, redirectURL, email string) (Start, error) {
	party, err := p.party(ctx, cfg, redirectURL)
	if err != nil {
		return Start{}, err
	}
	s := Start{State: random(), Nonce: random(), Binder: random()}
	sum := sha256.Sum256([]byte(verifier(s.Binder)))
	s.URL = rp.AuthURL(s.State, party, rp.WithCodeChallenge(base64.RawURLEncoding.EncodeToString(sum[:])),
		rp.AuthURLOpt(rp.WithURLParam("nonce", s.Nonce)), rp.AuthURLOpt(rp.WithURLParam("login_hint", email)))
	return s, nil
}

// Identity is who the provider says signed in.
type Identity struct {
	Email         string
	EmailVerified bool
	Claims        map[string]any
}

// Finish exchanges the code (with the binder's PKCE verifier) and verifies
// the ID token: signature by the provider's keys, iss, aud, exp, iat and
// the nonce. A token refused is a *Refusal saying why.
func (p *Parties) Finish(ctx context.Context, cfg db.OrgSSO, redirectURL, code, binder, nonce string) (Identity, error) {
	party, err := p.party(ctx, cfg, redirectURL)
	if err != nil {
		return Identity{}, err
	}
	ctx = context.WithValue(ctx, nonceKey{}, nonce)
	tokens, err := rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, party, rp.WithCodeVerifier(verifier(binder)))
	if err != nil {
		return Identity{}, refusalOf(err)
	}
	c := tokens.IDTokenClaims
	claims := map[string]any{}
	for k, v := range c.Claims {
		claims[k] = v
	}
	verified := bool(c.EmailVerified)
	// Microsoft Entra ID says a verified domain owner with xms_edov.
	if v, ok := claims["xms_edov"].(bool); ok && v {
		verified = true
	}
	return Identity{Email: strings.ToLower(strings.TrimSpace(c.Email)), EmailVerified: verified, Claims: claims}, nil
}

// Refusal is an ID token (or code exchange) refused, with what was wrong.
type Refusal struct {
	// Reason is a word for the audit log: audience, issuer, expired,
	// signature (a bad one, or none), nonce, exchange, token.
	Reason string
	// Message says which, for the page.
	Message string
	Err     error
}

func (r *Refusal) Error() string { return r.Message }
func (r *Refusal) Unwrap() error { return r.Err }

func refusalOf(err error) error {
	switch {
	case errors.Is(err, oidc.ErrAudience), errors.Is(err, oidc.ErrAzpInvalid), errors.Is(err, oidc.ErrAzpMissing):
		return &Refusal{"audience", "the ID token was issued to another application (its aud is not this console's client id)", err}
	case errors.Is(err, oidc.ErrIssuerInvalid), errors.Is(err, oidc.ErrSubjectInvalid):
		return &Refusal{"issuer", "the ID token was issued by another issuer than the organisation's provider (iss)", err}
	case errors.Is(err, oidc.ErrExpired), errors.Is(err, oidc.ErrIatToOld), errors.Is(err, oidc.ErrIatInFuture):
		return &Refusal{"expired", "the ID token has expired (exp), or its issue time is out of range", err}
	case errors.Is(err, oidc.ErrSignatureInvalid), errors.Is(err, oidc.ErrSignatureMissing), errors.Is(err, oidc.ErrSignatureMultiple),
		errors.Is(err, oidc.ErrSignatureUnsupportedAlg), errors.Is(err, oidc.ErrSignatureInvalidPayload):
		return &Refusal{"signature", "the ID token's signature does not verify with the provider's published keys", err}
	case errors.Is(err, oidc.ErrNonceInvalid):
		return &Refusal{"nonce", "the ID token's nonce is not the one this sign-in sent", err}
	case errors.Is(err, oidc.ErrParse):
		return &Refusal{"token", "the provider's ID token could not be read", err}
	case errors.Is(err, rp.ErrMissingIDToken):
		return &Refusal{"token", "the provider answered without an ID token", err}
	}
	var oe *oidc.Error
	var re *oauth2.RetrieveError
	if errors.As(err, &oe) || errors.As(err, &re) {
		return &Refusal{"exchange", "the provider refused to exchange the code (it may have been used already)", err}
	}
	return err
}
