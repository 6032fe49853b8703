package console

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/sso"
)

// Sign-in through the organisation's OpenID Connect provider
// (docs/console.md#signing-in-with-your-identity-provider): the email
// finds the organisation by its domain; the browser goes to the provider
// with state, nonce and a PKCE challenge, and comes back to the callback,
// which spends the state (once), verifies the ID token and starts a
// session. Each refusal is a 400 page saying which, audited, and no session.

// binderCookie holds the secret the sign-in's PKCE verifier is derived
// from: only the browser that started a sign-in can finish it.
const binderCookie = "commerce_console_sso"

// ssoSignInPage asks for an email.
func (c *console) ssoSignInPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "signin", map[string]any{"SSO": true})
}

// ssoBegin finds the organisation by the email's domain and sends the
// browser to its provider.
func (c *console) ssoBegin(w http.ResponseWriter, r *http.Request) {
	if c.crossSite(r) {
		c.fail(w, r, http.StatusForbidden, "Refused: the sign-in was sent from another site. Open the sign-in page and try again.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		closeUnread(w)
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	at := strings.LastIndexByte(email, '@')
	if problem := badField("email", email); problem != "" || at < 1 || at == len(email)-1 || len(email) > 320 {
		c.renderSignIn(w, r, http.StatusBadRequest, "Refused: that is not an email address.")
		return
	}
	if c.Sealer == nil {
		c.renderSignIn(w, r, http.StatusServiceUnavailable, "Sign-in through an identity provider is not available: the service has no COMMERCE_SECRET_KEY. Ask for a one-time sign-in link.")
		return
	}
	cfg, err := c.DB.OrgSSOByDomain(r.Context(), email[at+1:])
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		c.renderSignIn(w, r, http.StatusBadRequest, "Refused: no organisation signs in with an identity provider for "+email[at+1:]+
			"; ask for a one-time sign-in link (commerce console login).")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	if cfg, err = c.DB.OrgSSOSecret(r.Context(), c.Sealer, cfg.OrgID); err != nil {
		c.internal(w, r, err)
		return
	}
	start, err := c.parties.Begin(r.Context(), cfg, sso.RedirectURL(c.BaseURL), email)
	if err != nil {
		logging.From(r.Context(), c.Log).Warn("console: identity provider discovery failed", zap.String("org", cfg.OrgID.String()),
			zap.String("issuer", cfg.Issuer), zap.Error(err))
		c.fail(w, r, http.StatusBadGateway, "The organisation's identity provider could not be reached or answered wrongly; try again, or ask for a one-time sign-in link.")
		return
	}
	if err := c.DB.CreateSSOState(r.Context(), start.State, start.Binder, db.SSOState{OrgID: cfg.OrgID, Email: email, Nonce: start.Nonce}); err != nil {
		c.internal(w, r, err)
		return
	}
	c.setCookie(w, r, binderCookie, start.Binder, int(db.SSOStateTTL.Seconds()))
	http.Redirect(w, r, start.URL, http.StatusSeeOther)
}

func (c *console) renderSignIn(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.renderPage(w, r, status, "signin", page{Error: msg, Data: map[string]any{"SSO": true}})
}

// ssoCallback is where the provider sends the browser back.
func (c *console) ssoCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	binder := ""
	if ck, err := r.Cookie(binderCookie); err == nil {
		binder = ck.Value
	}
	c.setCookie(w, r, binderCookie, "", -1)
	st, err := c.DB.TakeSSOState(r.Context(), q.Get("state"), binder)
	refuse := func(reason, msg string, detail map[string]any) {
		if detail == nil {
			detail = map[string]any{}
		}
		detail["reason"], detail["email"] = reason, st.Email
		// A state unknown to the console names no organisation: the
		// service log has it.
		logging.From(r.Context(), c.Log).Info("console: sign-in refused", zap.String("reason", reason))
		if st.OrgID != uuid.Nil {
			if err := c.DB.RecordAudit(r.Context(), db.NewAuditEntry{OrgID: st.OrgID, Actor: "sso:" + st.Email, Action: "console.sign_in_refused",
				TargetType: "organisation", TargetID: st.OrgID.String(), Detail: detail}); err != nil {
				logging.From(r.Context(), c.Log).Warn("console: auditing a refused sign-in", zap.Error(err))
			}
		}
		c.ssoRefused(w, r, "Refused: "+msg+".")
	}
	if err != nil {
		if domain.ErrorCode(err) == domain.EINVALID {
			refuse("state", domain.ErrorMessage(err)+". Start again from the sign-in page", nil)
			return
		}
		c.internal(w, r, err)
		return
	}
	if e := q.Get("error"); e != "" {
		refuse("provider", "the identity provider did not sign you in ("+providerCode(e, 60)+")", nil)
		return
	}
	cfg, err := c.DB.OrgSSOSecret(r.Context(), c.Sealer, st.OrgID)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		refuse("removed", "the organisation no longer signs in with an identity provider", nil)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	id, err := c.parties.Finish(r.Context(), cfg, sso.RedirectURL(c.BaseURL), q.Get("code"), binder, st.Nonce)
	var refusal *sso.Refusal
	switch {
	case errors.As(err, &refusal):
		logging.From(r.Context(), c.Log).Info("console: ID token refused", zap.String("reason", refusal.Reason), zap.Error(refusal.Err))
		refuse(refusal.Reason, refusal.Message, nil)
		return
	case err != nil:
		logging.From(r.Context(), c.Log).Warn("console: identity provider exchange failed", zap.String("issuer", cfg.Issuer), zap.Error(err))
		refuse("provider", "the identity provider could not be reached or answered wrongly", nil)
		return
	}
	at := strings.LastIndexByte(id.Email, '@')
	switch {
	case id.Email == "" || at < 1:
		refuse("email", "the ID token carries no email address", nil)
		return
	case !id.EmailVerified:
		refuse("unverified", "the identity provider does not say "+id.Email+" is verified (email_verified)", nil)
		return
	case !slices.Contains(cfg.Domains, id.Email[at+1:]):
		refuse("domain", id.Email+" is outside the organisation's email domains ("+strings.Join(cfg.Domains, ", ")+")", nil)
		return
	}
	role, ok := sso.RoleFor(cfg, id.Claims)
	if !ok {
		refuse("role", "the role claim "+cfg.RoleClaim+" gives "+id.Email+" no role in this console", nil)
		return
	}
	token, u, err := c.DB.StartSSOSession(r.Context(), st.OrgID, id.Email, role)
	if domain.ErrorCode(err) == domain.EFORBIDDEN {
		refuse("disabled", domain.ErrorMessage(err), nil)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.auditSignIn(r, u, "sso")
	c.setCookie(w, r, sessionCookie, token, int(db.ConsoleSessionTTL.Seconds()))
	c.flash(w, r, "Signed in as "+u.Email+" ("+string(u.Role)+") of "+u.OrgName+".")
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// ssoRefused is a refused sign-in's page: 400, saying which, with the
// sign-in form to start again.
func (c *console) ssoRefused(w http.ResponseWriter, r *http.Request, msg string) {
	c.renderSignIn(w, r, http.StatusBadRequest, msg)
}

// auditSignIn records a sign-in in the organisation's audit log.
func (c *console) auditSignIn(r *http.Request, u db.ConsoleUser, via string) {
	if err := c.DB.RecordAudit(r.Context(), db.NewAuditEntry{OrgID: u.OrgID, Actor: string(viewer{ConsoleUser: u}.actor()),
		Action: "console.sign_in", TargetType: "user", TargetID: u.UserID.String(),
		Detail: map[string]any{"via": via, "role": string(u.Role), "session": u.SessionID.String()}}); err != nil {
		logging.From(r.Context(), c.Log).Warn("console: auditing a sign-in", zap.Error(err))
	}
}

// providerCode is an error code a provider sent, as much of it as is letters,
// digits, '_', '-' or '.', and at most n of them.
func providerCode(s string, n int) string {
	out := strings.Map(func(ch rune) rune {
		if ch < 128 && (ch == '_' || ch == '-' || ch == '.' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			return ch
		}
		return -1
	}, s)
	if len(out) > n {
		out = out[:n]
	}
	return out
}
