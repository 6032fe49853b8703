// Package sso signs console users in through their organisation's OpenID
// Connect provider (docs/console.md#signing-in-with-your-identity-provider):
// the checks of a provider's settings, the relying party (zitadel's
// pkg/client/rp: discovery, JWKS with caching and refresh on an unknown key
// id, the authorization code flow with PKCE, state and nonce, and the ID
// token's verification) and the mapping of a claim to a role. Every request
// to a provider goes through the SSRF-guarded client (internal/outbound).
package sso

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
)

// CallbackPath is where providers send users back, under the console.
const CallbackPath = "/console/sso/callback"

// RedirectURL is the redirect URL to register at the provider.
func RedirectURL(baseURL string) string {
	return strings.TrimSuffix(baseURL, "/") + CallbackPath
}

// CheckIssuer checks an issuer URL: https, or http to a loopback address
// where private targets are allowed (COMMERCE_ALLOW_PRIVATE_TARGETS), and a
// host the SSRF guard lets requests reach. It answers the normalised URL,
// without a trailing slash.
func CheckIssuer(ctx context.Context, raw string, targets outbound.Targets) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", domain.Errorf(domain.EINVALID, "the issuer %q is not a URL", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		ip := net.ParseIP(u.Hostname())
		if targets == outbound.PublicTargets || ip == nil || !ip.IsLoopback() {
			return "", domain.Errorf(domain.EINVALID, "the issuer must be an https URL (http only to a loopback address, where private targets are allowed)")
		}
	default:
		return "", domain.Errorf(domain.EINVALID, "the issuer must be an https URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", domain.Errorf(domain.EINVALID, "the issuer may not carry a query or a fragment")
	}
	checked, err := outbound.CheckURL(ctx, raw, targets)
	if err != nil {
		return "", domain.Errorf(domain.EINVALID, "the issuer is refused: %s", err.Error())
	}
	return strings.TrimSuffix(checked.String(), "/"), nil
}

// Check validates and normalises a provider's settings before they are
// stored: the issuer (CheckIssuer), a client id, email domains (lower
// case, each a name with a dot), the role mapping's values and what an
// unmatched user becomes.
func Check(ctx context.Context, in *db.OrgSSO, targets outbound.Targets) error {
	issuer, err := CheckIssuer(ctx, in.Issuer, targets)
	if err != nil {
		return err
	}
	in.Issuer = issuer
	in.ClientID = strings.TrimSpace(in.ClientID)
	if in.ClientID == "" || len(in.ClientID) > 500 {
		return domain.Errorf(domain.EINVALID, "a client id (of at most 500 characters) is needed")
	}
	if len(in.ClientSecret) > 2000 {
		return domain.Errorf(domain.EINVALID, "the client secret is over 2000 characters")
	}
	var domains []string
	for _, d := range in.Domains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
		if d == "" {
			continue
		}
		if !strings.Contains(d, ".") || strings.ContainsAny(d, "@/ \t:") || len(d) > 253 {
			return domain.Errorf(domain.EINVALID, "%q is not an email domain", d)
		}
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
	}
	if len(domains) == 0 {
		return domain.Errorf(domain.EINVALID, "at least one email domain is needed: sign-in finds the organisation by it")
	}
	in.Domains = domains
	in.RoleClaim = strings.TrimSpace(in.RoleClaim)
	in.OwnerValues, in.AdminValues = trimmed(in.OwnerValues), trimmed(in.AdminValues)
	if in.RoleClaim == "" && len(in.OwnerValues)+len(in.AdminValues) > 0 {
		return domain.Errorf(domain.EINVALID, "owner and admin values need a role claim to be read from")
	}
	switch in.Unmatched {
	case "":
		in.Unmatched = "member"
	case "member", "refuse":
	default:
		return domain.Errorf(domain.EINVALID, "unmatched users become a member or are refused (member|refuse), not %q", in.Unmatched)
	}
	return nil
}

func trimmed(vs []string) []string {
	out := []string{}
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// SplitList reads a comma-separated list.
func SplitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return trimmed(strings.Split(s, ","))
}

// RoleFor is the role the ID token's claims give: owner when the role
// claim holds an owner value, else admin when it holds an admin value,
// else member, or a refusal (ok false) when unmatched users are refused.
// A claim may be a string or a list of strings.
func RoleFor(cfg db.OrgSSO, claims map[string]any) (role domain.UserRole, ok bool) {
	var held []string
	switch v := claims[cfg.RoleClaim].(type) {
	case string:
		held = []string{v}
	case []any:
		for _, x := range v {
			if s, isString := x.(string); isString {
				held = append(held, s)
			}
		}
	case []string:
		held = v
	}
	has := func(values []string) bool {
		return slices.ContainsFunc(held, func(h string) bool { return slices.Contains(values, h) })
	}
	switch {
	case cfg.RoleClaim != "" && has(cfg.OwnerValues):
		return domain.UserOwner, true
	case cfg.RoleClaim != "" && has(cfg.AdminValues):
		return domain.UserAdmin, true
	case cfg.Unmatched == "refuse":
		return "", false
	}
	return domain.UserMember, true
}
