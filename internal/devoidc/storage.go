package devoidc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The provider's storage (op.Storage), in memory: clients, users, the
// authorization requests under way, access tokens and signing keys.

var errNotFound = errors.New("not found")

// key is an RSA signing key and its id.
type key struct {
	id  string
	key *rsa.PrivateKey
}

func newKey() (key, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return key{}, err
	}
	return key{id: randomID(), key: k}, nil
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (s signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (s signingKey) Key() any                                    { return s.key }
func (s signingKey) ID() string                                  { return s.id }

type publicKey struct{ key }

func (p publicKey) ID() string                         { return p.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.key.key.PublicKey }

// authRequest is an authorization request under way.
type authRequest struct {
	p        *Provider
	id       string
	req      oidc.AuthRequest
	subject  string
	done     bool
	authTime time.Time
	code     string
}

func (a *authRequest) GetID() string    { return a.id }
func (a *authRequest) GetACR() string   { return "" }
func (a *authRequest) GetAMR() []string { return []string{"pwd"} }

// GetClientID is the client's id, or, told to tamper with the audience,
// the other client's: the ID token is then issued to that client (its aud
// and azp), as a token of another application would be.
func (a *authRequest) GetClientID() string {
	if t := a.p.tampering(); t.Audience != "" {
		return t.Audience
	}
	return a.req.ClientID
}
func (a *authRequest) GetAudience() []string  { return []string{a.GetClientID()} }
func (a *authRequest) GetAuthTime() time.Time { return a.authTime }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: a.req.CodeChallengeMethod}
}
func (a *authRequest) GetNonce() string {
	if t := a.p.tampering(); t.Nonce != "" {
		return t.Nonce
	}
	return a.req.Nonce
}
func (a *authRequest) GetRedirectURI() string             { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.req.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }

// client is the one kind of client the provider serves: a web application
// with a secret, the authorization code flow, and the user's claims in the
// ID token.
type client struct {
	p           *Provider
	id, secret  string
	redirectURI string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return []string{c.redirectURI} }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType        { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string           { return "/login?id=" + id }
func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration {
	if t := c.p.tampering(); t.Lifetime != 0 {
		return t.Lifetime
	}
	return 5 * time.Minute
}

// DevMode lets the console's redirect URI be http on a developer's machine.
func (c *client) DevMode() bool { return true }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }

// storage is op.Storage over the provider's memory.
type storage struct{ p *Provider }

func (s storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	a := &authRequest{p: s.p, id: randomID(), req: *req}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.requests[a.id] = a
	return a, nil
}

func (s storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if a, ok := s.p.requests[id]; ok {
		return a, nil
	}
	return nil, errNotFound
}

func (s storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	for _, a := range s.p.requests {
		if a.code != "" && a.code == code {
			return a, nil
		}
	}
	return nil, errNotFound
}

func (s storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	a, ok := s.p.requests[id]
	if !ok {
		return errNotFound
	}
	a.code = code
	return nil
}

func (s storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	delete(s.p.requests, id)
	return nil
}

func (s storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	id := randomID()
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.tokens[id] = r.GetSubject()
	return id, time.Now().Add(5 * time.Minute), nil
}

func (s storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("refresh tokens are not served")
}

func (s storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s storage) TerminateSession(context.Context, string, string) error { return nil }

func (s storage) RevokeToken(_ context.Context, token, _, _ string) *oidc.Error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	delete(s.p.tokens, token)
	return nil
}

func (s storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

// SigningKey is the current key, or, when told to sign badly, a stranger's
// key under the current key's id: a signature the published key refuses.
func (s storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	k := s.p.keys[len(s.p.keys)-1]
	if s.p.tamper.StrangerKey {
		return signingKey{id: k.id, key: s.p.stranger.key}, nil
	}
	return signingKey(k), nil
}

func (s storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet is every key the provider has signed with, newest last.
func (s storage) KeySet(context.Context) ([]op.Key, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.keySetServed++
	out := make([]op.Key, 0, len(s.p.keys))
	for _, k := range s.p.keys {
		out = append(out, publicKey{k})
	}
	return out, nil
}

func (s storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	c, ok := s.p.clients[id]
	if !ok && id == s.p.tamper.Audience {
		// The other application: the token endpoint looks the request's
		// client up by the id it now carries.
		for _, any := range s.p.clients {
			c, ok = any, true
			break
		}
	}
	if !ok {
		return nil, errNotFound
	}
	if s.p.tamper.Audience != "" {
		other := *c
		other.id = s.p.tamper.Audience
		return &other, nil
	}
	return c, nil
}

func (s storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	c, ok := s.p.clients[id]
	if !ok || subtle.ConstantTimeCompare([]byte(c.secret), []byte(secret)) != 1 {
		return errors.New("client authentication failed")
	}
	return nil
}

// SetUserinfoFromScopes gives the ID token the user's email, whether it is
// verified, their name and their groups.
func (s storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, subject, _ string, _ []string) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	u, ok := s.p.users[subject]
	if !ok {
		return errNotFound
	}
	info.Subject = u.Email
	info.Email = u.Email
	info.EmailVerified = oidc.Bool(!u.Unverified)
	info.Name = u.Email
	if u.Groups != nil {
		info.AppendClaims("groups", u.Groups)
	}
	return nil
}

func (s storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	s.p.mu.Lock()
	subject, ok := s.p.tokens[tokenID]
	s.p.mu.Unlock()
	if !ok {
		return errNotFound
	}
	return s.SetUserinfoFromScopes(ctx, info, subject, "", nil)
}

func (s storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("introspection is not served")
}

func (s storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

func (s storage) Health(context.Context) error { return nil }
