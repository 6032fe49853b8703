package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/config"
)

func consoleCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "console", Short: "The support console at /console: sign-in links"}
	cmd.AddCommand(consoleLoginCmd())
	return cmd
}

// loginJSON is `console login --json`.
type loginJSON struct {
	URL       string `json:"url"`
	Email     string `json:"email"`
	ExpiresAt string `json:"expires_at"`
}

func consoleLoginCmd() *cobra.Command {
	cfg := config.Load()
	var org, as string
	cmd := &cobra.Command{
		Use:   "login --org ORG --as EMAIL",
		Short: "Print a one-time sign-in link to the support console (valid 10 minutes)",
		Long: "login prints a link that signs EMAIL, a user of the organisation, in to the support console at\n" +
			"{base_url}/console. The link works once, within ten minutes, and becomes a session of twelve hours.\n" +
			"Members read; admins and owners also replay, cancel, pause and resume, and manage webhooks.\n" +
			"The link is under --base-url (COMMERCE_BASE_URL, by default the address of serve and dev).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				token, err := d.CreateConsoleLink(ctx, orgID, as)
				if err != nil {
					return err
				}
				out := loginJSON{URL: console.LoginURL(cfg.BaseURL, token), Email: as,
					ExpiresAt: time.Now().UTC().Add(db.ConsoleLinkTTL).Format(time.RFC3339)}
				return newPrinter(cmd).print(out, func(w io.Writer) {
					fmt.Fprintf(w, "Open this link within 10 minutes to sign in as %s (it works once):\n%s\n", as, out.URL)
				})
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&as, "as", "", "email of the user to sign in as (required)")
	_ = cmd.MarkFlagRequired("org")
	_ = cmd.MarkFlagRequired("as")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	cfg.Flags(cmd.Flags(), "COMMERCE_BASE_URL")
	return cmd
}
