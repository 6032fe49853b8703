// Package devoidc is a small OpenID Provider, built with zitadel's op
// package, for trying the console's sign-in through an identity provider
// on one machine (commerce dev --sso) and for testing it: real discovery,
// JWKS, authorization code flow with PKCE, and RS256 ID tokens. Its users
// sign in by pressing a button (no passwords): it is never for production.
// It can rotate its signing key, and be told to misbehave (Tamper) so that
// the console's refusals can be tried.
package devoidc

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a user of the provider.
type User struct {
	Email string
	// Unverified makes the ID token say email_verified: false.
	Unverified bool
	// Groups is the ID token's groups claim (none when nil).
	Groups []string
}

// Tamper makes the provider's ID tokens wrong in one way each, until
// reset with the zero Tamper.
type Tamper struct {
	// Audience replaces the client id as the token's aud.
	Audience string
	// Issuer replaces the issuer as the token's iss (discovery still
	// names the real one).
	Issuer string
	// Lifetime replaces the token's five minutes (negative: expired).
	Lifetime time.Duration
	// Nonce replaces the nonce the client sent.
	Nonce string
	// StrangerKey signs with a key the provider never published, under
	// the current key's id.
	StrangerKey bool
	// Unsigned sends the ID token unsigned (alg none, no signature).
	Unsigned bool
}

// Provider is a running provider.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:port).
	Issuer string
	// AutoApprove signs the login hint's user in without showing the
	// login page (for tests that speak HTTP without a browser).
	AutoApprove bool

	mu       sync.Mutex
	clients  map[string]*client
	users    map[string]User
	requests map[string]*authRequest
	tokens   map[string]string
	keys     []key
	stranger key
	tamper   Tamper
	// keySetServed counts the JWKS answers.
	keySetServed int

	op  *op.Provider
	srv *http.Server
	ln  net.Listener
}

// Start runs a provider on addr (host:port; port 0 picks one) until Close.
func Start(addr string) (*Provider, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Provider{Issuer: "http://" + ln.Addr().String(), clients: map[string]*client{}, users: map[string]User{},
		requests: map[string]*authRequest{}, tokens: map[string]string{}, ln: ln}
	first, err := newKey()
	if err != nil {
		return nil, err
	}
	if p.stranger, err = newKey(); err != nil {
		return nil, err
	}
	p.keys = []key{first}
	var crypto [32]byte
	_, _ = rand.Read(crypto[:])
	p.op, err = op.NewProvider(&op.Config{CryptoKey: crypto, CodeMethodS256: true, AuthMethodPost: true},
		storage{p}, p.issuerFn, op.WithAllowInsecure())
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", p.login)
	mux.Handle("/oauth/token", http.HandlerFunc(p.token))
	mux.Handle("/", p.op)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// issuerFn names the issuer, or, to the token endpoint while tampered
// with, another one.
func (p *Provider) issuerFn(bool) (op.IssuerFromRequest, error) {
	return func(r *http.Request) string {
		if t := p.tampering(); t.Issuer != "" && strings.HasSuffix(r.URL.Path, "/oauth/token") {
			return t.Issuer
		}
		return p.Issuer
	}, nil
}

// Close stops the provider.
func (p *Provider) Close() error { return p.srv.Close() }

// AddClient registers a client: the console of an organisation.
func (p *Provider) AddClient(id, secret, redirectURI string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[id] = &client{p: p, id: id, secret: secret, redirectURI: redirectURI}
}

// AddUser adds (or replaces) a user.
func (p *Provider) AddUser(u User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u.Email = strings.ToLower(u.Email)
	p.users[u.Email] = u
}

// RotateKey signs from now on with a new key, published beside the old.
// It answers the new key's id.
func (p *Provider) RotateKey() (string, error) {
	k, err := newKey()
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, k)
	return k.id, nil
}

// KeyID is the id of the key the provider signs with.
func (p *Provider) KeyID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[len(p.keys)-1].id
}

// KeySetServed is how many times the provider has served its JWKS.
func (p *Provider) KeySetServed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keySetServed
}

// SetTamper makes the next ID tokens wrong as t says (the zero Tamper for
// right ones).
func (p *Provider) SetTamper(t Tamper) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamper = t
}

func (p *Provider) tampering() Tamper {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tamper
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Development identity provider</title></head>
<body><main><h1>Development identity provider</h1>
<p>Sign in to {{.Client}} as one of this provider's users. There are no passwords: this provider is for trying things on one machine.</p>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login" id="idp-login">
<input type="hidden" name="id" value="{{.ID}}">
<label for="email">Email</label>
<input id="email" name="email" type="email" value="{{.Email}}" autocomplete="username" required>
<button type="submit">Sign in</button>
</form></main></body></html>`))

// login is the provider's login page: GET shows it (or, with AutoApprove,
// signs the login hint's user in at once), POST signs the user in and
// goes back to the op's callback.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id := r.Form.Get("id")
	p.mu.Lock()
	a, ok := p.requests[id]
	var hint, clientID string
	if ok {
		hint, clientID = a.req.LoginHint, a.req.ClientID
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, "unknown authorization request", http.StatusBadRequest)
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.Form.Get("email")))
	if r.Method == http.MethodGet {
		if !p.AutoApprove {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = loginPage.Execute(w, map[string]string{"ID": id, "Email": hint, "Client": clientID})
			return
		}
		email = strings.ToLower(hint)
	}
	if err := p.approve(id, email); err != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_ = loginPage.Execute(w, map[string]string{"ID": id, "Email": email, "Client": clientID, "Error": err.Error()})
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(p.op)(op.ContextWithIssuer(r.Context(), p.Issuer), id), http.StatusFound)
}

func (p *Provider) approve(id, email string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.users[email]; !ok {
		return errors.New("no such user: " + email)
	}
	a, ok := p.requests[id]
	if !ok {
		return errors.New("unknown authorization request")
	}
	a.subject, a.done, a.authTime = email, true, time.Now()
	return nil
}

// token is the op's token endpoint, its ID token stripped of its
// signature (alg none) when told to send it unsigned.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if !p.tampering().Unsigned {
		p.op.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.op.ServeHTTP(rec, r)
	var answer map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err == nil {
		if idToken, ok := answer["id_token"].(string); ok {
			if parts := strings.Split(idToken, "."); len(parts) == 3 {
				answer["id_token"] = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
			}
		}
		body, _ := json.Marshal(answer)
		rec.Body = bytes.NewBuffer(body)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}
