package console

import (
	"net/http"
	"strings"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/sso"
)

// The identity provider settings page, for owners: the organisation's
// OpenID Connect provider, set, changed or removed. The client secret is
// sealed and never shown again; left empty on a change, it is kept.

type ssoSettingsData struct {
	SSO         *db.OrgSSO
	RedirectURL string
}

// ownerOnly refuses anyone but the organisation's owner.
func (c *console) ownerOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := viewerOf(r.Context()); v.Role != domain.UserOwner {
			c.fail(w, r, http.StatusForbidden, "Refused: "+v.Email+" is a "+string(v.Role)+"; the identity provider settings are the owner's.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (c *console) ssoSettingsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	data := ssoSettingsData{RedirectURL: sso.RedirectURL(c.BaseURL)}
	s, err := c.DB.OrgSSOOf(r.Context(), v.OrgID)
	switch {
	case err == nil:
		data.SSO = &s
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		c.internal(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "sso", data)
}

func (c *console) setSSO(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	f := r.PostForm
	in := db.OrgSSO{OrgID: v.OrgID, Issuer: f.Get("issuer"), ClientID: f.Get("client_id"), ClientSecret: f.Get("client_secret"),
		Domains: sso.SplitList(f.Get("domains")), RoleClaim: f.Get("role_claim"), OwnerValues: sso.SplitList(f.Get("owner_values")),
		AdminValues: sso.SplitList(f.Get("admin_values")), Unmatched: f.Get("unmatched")}
	back := Prefix + "/settings/sso"
	if err := sso.Check(r.Context(), &in, c.Targets); err != nil {
		c.refused(w, r, back, err)
		return
	}
	if err := c.DB.SetOrgSSO(r.Context(), c.Sealer, in); err != nil {
		c.refused(w, r, back, err)
		return
	}
	if err := c.DB.RecordAudit(r.Context(), db.NewAuditEntry{OrgID: v.OrgID, Actor: string(v.actor()), Action: "org.sso_set",
		TargetType: "organisation", TargetID: v.OrgID.String(), Detail: map[string]any{"issuer": in.Issuer, "client_id": in.ClientID,
			"domains": in.Domains, "role_claim": in.RoleClaim, "secret_changed": in.ClientSecret != ""}}); err != nil {
		c.internal(w, r, err)
		return
	}
	c.done(w, r, back, "Saved: users of "+strings.Join(in.Domains, ", ")+" sign in through "+in.Issuer+".")
}

func (c *console) removeSSO(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	back := Prefix + "/settings/sso"
	if !c.confirmed(w, r, "Remove the identity provider? Users of its domains then sign in only with one-time links; their sessions go on.",
		"Remove the provider", back) {
		return
	}
	if err := c.DB.RemoveOrgSSO(r.Context(), v.OrgID); err != nil {
		c.refused(w, r, back, err)
		return
	}
	if err := c.DB.RecordAudit(r.Context(), db.NewAuditEntry{OrgID: v.OrgID, Actor: string(v.actor()), Action: "org.sso_remove",
		TargetType: "organisation", TargetID: v.OrgID.String()}); err != nil {
		c.internal(w, r, err)
		return
	}
	c.done(w, r, back, "Removed the identity provider.")
}
