package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/sso"
)

// `commerce org sso set|show|remove`: the organisation's OpenID Connect
// provider for console sign-in (docs/console.md#signing-in-with-your-identity-provider).

func orgSSOCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sso", Short: "The identity provider the organisation's console users sign in through (OpenID Connect)"}
	cmd.AddCommand(orgSSOSetCmd(), orgSSOShowCmd(), orgSSORemoveCmd())
	return cmd
}

// ssoJSON is `org sso show --json` (never the client secret).
type ssoJSON struct {
	OrgID       string   `json:"org_id"`
	Issuer      string   `json:"issuer"`
	ClientID    string   `json:"client_id"`
	Domains     []string `json:"email_domains"`
	RoleClaim   string   `json:"role_claim"`
	OwnerValues []string `json:"owner_values"`
	AdminValues []string `json:"admin_values"`
	Unmatched   string   `json:"unmatched"`
	RedirectURL string   `json:"redirect_url"`
}

func newSSOJSON(s db.OrgSSO, baseURL string) ssoJSON {
	return ssoJSON{OrgID: s.OrgID.String(), Issuer: s.Issuer, ClientID: s.ClientID, Domains: s.Domains, RoleClaim: s.RoleClaim,
		OwnerValues: s.OwnerValues, AdminValues: s.AdminValues, Unmatched: s.Unmatched, RedirectURL: sso.RedirectURL(baseURL)}
}

func printSSO(w io.Writer, s ssoJSON) {
	fmt.Fprintf(w, "organisation\t%s\nissuer\t%s\nclient id\t%s\nclient secret\t(sealed; not shown)\nemail domains\t%s\n",
		s.OrgID, s.Issuer, s.ClientID, strings.Join(s.Domains, ", "))
	fmt.Fprintf(w, "role claim\t%s\nowner values\t%s\nadmin values\t%s\nanyone else\t%s\nredirect URL\t%s\n",
		orDash(s.RoleClaim), orDash(strings.Join(s.OwnerValues, ", ")), orDash(strings.Join(s.AdminValues, ", ")), s.Unmatched, s.RedirectURL)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readSecret reads a client secret from a file, or standard input for -.
func readSecret(cmd *cobra.Command, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
	} else {
		raw, err = os.ReadFile(path) // #nosec G304 -- the operator names the file
	}
	if err != nil {
		return "", usagef("--client-secret-file: %v", err)
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "", usagef("--client-secret-file: the file is empty")
	}
	return s, nil
}

func orgSSOSetCmd() *cobra.Command {
	cfg := config.Load()
	var org, issuer, clientID, secretFile, domains, roleClaim, owners, admins, unmatched string
	cmd := &cobra.Command{
		Use:   "set --org ORG --issuer URL --client-id ID --client-secret-file FILE|- --domains a.example,b.example [--role-claim groups --owner-values V --admin-values V] [--unmatched member|refuse]",
		Short: "Set the organisation's identity provider (the client secret is sealed and never shown again)",
		Long: "set stores the OpenID Connect provider console users of the organisation sign in through at\n" +
			"{base_url}/console/sign-in: the issuer (https; http only to a loopback address where\n" +
			"COMMERCE_ALLOW_PRIVATE_TARGETS allows it), the client id, the client secret (read from a file, or\n" +
			"standard input with -, sealed with COMMERCE_SECRET_KEY; on a change it may be left out to keep the\n" +
			"stored one), the email domains that lead to this organisation (each belongs to one organisation),\n" +
			"and the role mapping: the ID token claim (such as groups) whose values make an owner or an admin;\n" +
			"anyone else is a member, or is refused with --unmatched refuse. Register the redirect URL it\n" +
			"prints with the provider. See docs/console.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			secret, err := readSecret(cmd, secretFile)
			if err != nil {
				return err
			}
			targets, err := cfg.Targets()
			if err != nil {
				return err
			}
			in := db.OrgSSO{OrgID: orgID, Issuer: issuer, ClientID: clientID, ClientSecret: secret, Domains: sso.SplitList(domains),
				RoleClaim: roleClaim, OwnerValues: sso.SplitList(owners), AdminValues: sso.SplitList(admins), Unmatched: unmatched}
			if err := sso.Check(cmd.Context(), &in, targets); err != nil {
				return err
			}
			sealer, err := configSealer(cfg)
			if err != nil {
				return err
			}
			set := func(ctx context.Context, d *db.DB) (ssoJSON, error) {
				if err := d.SetOrgSSO(ctx, sealer, in); err != nil {
					return ssoJSON{}, err
				}
				if err := d.RecordAudit(ctx, db.NewAuditEntry{OrgID: orgID, Actor: string(operator()), Action: "org.sso_set",
					TargetType: "organisation", TargetID: orgID.String(), Detail: map[string]any{"issuer": in.Issuer,
						"client_id": in.ClientID, "domains": in.Domains, "role_claim": in.RoleClaim, "secret_changed": secret != ""}}); err != nil {
					return ssoJSON{}, err
				}
				s, err := d.OrgSSOOf(ctx, orgID)
				return newSSOJSON(s, cfg.BaseURL), err
			}
			return printFromDB(cmd, cfg, set, func(w io.Writer, s ssoJSON) {
				printSSO(w, s)
				fmt.Fprintln(w, "\nThe client secret is stored sealed and is not shown again.")
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&org, "org", "", "organisation id (required)")
	f.StringVar(&issuer, "issuer", "", "the provider's issuer URL (required)")
	f.StringVar(&clientID, "client-id", "", "the console's client id at the provider (required)")
	f.StringVar(&secretFile, "client-secret-file", "", "a file holding the client secret, or - for standard input (required the first time)")
	f.StringVar(&domains, "domains", "", "comma-separated email domains whose users sign in through it (required)")
	f.StringVar(&roleClaim, "role-claim", "", "the ID token claim holding groups or roles (empty: everyone is a member)")
	f.StringVar(&owners, "owner-values", "", "comma-separated values of the role claim that make an owner")
	f.StringVar(&admins, "admin-values", "", "comma-separated values of the role claim that make an admin")
	f.StringVar(&unmatched, "unmatched", "member", "what anyone else becomes: member, or refuse")
	for _, n := range []string{"org", "issuer", "client-id", "domains"} {
		_ = cmd.MarkFlagRequired(n)
	}
	jsonFlag(cmd)
	cfg.Flags(f, "DATABASE_URL", "COMMERCE_ALLOW_PRIVATE_TARGETS", "COMMERCE_BASE_URL")
	return cmd
}

func orgSSOShowCmd() *cobra.Command {
	cfg := config.Load()
	var org string
	cmd := &cobra.Command{
		Use:   "show --org ORG",
		Short: "Show the organisation's identity provider (never its client secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			show := func(ctx context.Context, d *db.DB) (ssoJSON, error) {
				s, err := d.OrgSSOOf(ctx, orgID)
				return newSSOJSON(s, cfg.BaseURL), err
			}
			return printFromDB(cmd, cfg, show, printSSO)
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_BASE_URL")
	return cmd
}

func orgSSORemoveCmd() *cobra.Command {
	cfg := config.Load()
	var org string
	cmd := &cobra.Command{
		Use:   "remove --org ORG",
		Short: "Remove the organisation's identity provider: its users sign in with one-time links again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				if err := d.RemoveOrgSSO(ctx, orgID); err != nil {
					return err
				}
				if err := d.RecordAudit(ctx, db.NewAuditEntry{OrgID: orgID, Actor: string(operator()), Action: "org.sso_remove",
					TargetType: "organisation", TargetID: orgID.String()}); err != nil {
					return err
				}
				return newPrinter(cmd).print(map[string]any{"org_id": orgID, "removed": true}, func(w io.Writer) {
					fmt.Fprintf(w, "Removed the identity provider of %s: its users sign in with one-time links (commerce console login).\n", orgID)
				})
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// userDisableCmd is `user disable` (disabled true) and `user enable`.
func userDisableCmd(disabled bool) *cobra.Command {
	cfg := config.Load()
	var org, email string
	use, short := "enable --org ORG --email E", "Let a disabled user sign in to the console again"
	if disabled {
		use, short = "disable --org ORG --email E", "Stop a user signing in to the console, ending all their sessions at once"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				ended, err := d.SetUserDisabled(ctx, orgID, email, disabled)
				if err != nil {
					return err
				}
				action := "user.enable"
				if disabled {
					action = "user.disable"
				}
				if err := d.RecordAudit(ctx, db.NewAuditEntry{OrgID: orgID, Actor: string(operator()), Action: action,
					TargetType: "user", TargetID: strings.ToLower(strings.TrimSpace(email)), Detail: map[string]any{"sessions_ended": ended}}); err != nil {
					return err
				}
				out := map[string]any{"org_id": orgID, "email": strings.ToLower(strings.TrimSpace(email)), "disabled": disabled, "sessions_ended": ended}
				return newPrinter(cmd).print(out, func(w io.Writer) {
					if disabled {
						fmt.Fprintf(w, "Disabled %s: %d console sessions ended; sign-in links and the identity provider no longer sign them in.\n", email, ended)
					} else {
						fmt.Fprintf(w, "Enabled %s: they may sign in to the console again.\n", email)
					}
				})
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&email, "email", "", "the user's email (required)")
	_ = cmd.MarkFlagRequired("org")
	_ = cmd.MarkFlagRequired("email")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}
