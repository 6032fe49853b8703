package dev

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/devoidc"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/sso"
)

// `commerce dev --sso`: a development OpenID Provider (internal/devoidc)
// on a free loopback port, set as the demo organisation's identity
// provider for the demo.example domain, with a user per role.

// devSSOClient is the console's client id at the development provider.
const devSSOClient = "commerce-dev-console"

// devSSOUsers are the provider's users: the demo owner, an admin and a
// member, by the groups claim.
var devSSOUsers = []devoidc.User{
	{Email: demoOwner, Groups: []string{"commerce-owners"}},
	{Email: "admin@demo.example", Groups: []string{"commerce-admins"}},
	{Email: "support@demo.example", Groups: []string{"support"}},
}

// startDevSSO starts the provider and points the demo organisation at it
// (the issuer's port changes at every start). The caller closes it.
func startDevSSO(ctx context.Context, d *db.DB, cfg config.Config, key []byte, orgID, baseURL string) (*devoidc.Provider, error) {
	org, err := uuid.Parse(orgID)
	if err != nil {
		return nil, err
	}
	targets, err := cfg.Targets()
	if err != nil {
		return nil, err
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		return nil, err
	}
	p, err := devoidc.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	secret := secrets.NewConsoleToken()
	p.AddClient(devSSOClient, secret, sso.RedirectURL(baseURL))
	for _, u := range devSSOUsers {
		p.AddUser(u)
	}
	in := db.OrgSSO{OrgID: org, Issuer: p.Issuer, ClientID: devSSOClient, ClientSecret: secret, Domains: []string{"demo.example"},
		RoleClaim: "groups", OwnerValues: []string{"commerce-owners"}, AdminValues: []string{"commerce-admins"}, Unmatched: "member"}
	if err := sso.Check(ctx, &in, targets); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("--sso: %w (dev's provider is on loopback: COMMERCE_ALLOW_PRIVATE_TARGETS must allow it)", err)
	}
	if err := d.SetOrgSSO(ctx, sealer, in); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// printSSO says how to sign in through the development provider.
func printSSO(out io.Writer, p *devoidc.Provider, baseURL string) {
	fmt.Fprintf(out, "\n  Identity provider  %s (development only: no passwords)\n", p.Issuer)
	fmt.Fprintf(out, "  Sign in at         %s/console/sign-in\n", baseURL)
	fmt.Fprintf(out, "  Test users         %s (owner), %s (admin), %s (member)\n", devSSOUsers[0].Email, devSSOUsers[1].Email, devSSOUsers[2].Email)
}
