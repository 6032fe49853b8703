package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/internal/config"
)

func openAPICmd() *cobra.Command {
	cfg := config.Load()
	var version string
	cmd := &cobra.Command{
		Use:   "openapi [--openapi-version 3.1|3.0]",
		Short: "Print the OpenAPI document the API serves at /api/v1/openapi.json",
		Long: "openapi prints the REST API's OpenAPI description without starting a server. --openapi-version 3.0\n" +
			"prints the OpenAPI 3.0 rendering (served at /api/v1/openapi-3.0.json), for generators that do not\n" +
			"read 3.1 yet.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := api.New(api.Deps{BaseURL: cfg.BaseURL})
			var out []byte
			var err error
			switch version {
			case "3.1":
				out, err = json.MarshalIndent(srv.OpenAPI(), "", "  ")
			case "3.0":
				var raw []byte
				if raw, err = srv.OpenAPI30(); err == nil {
					var v any
					if err = json.Unmarshal(raw, &v); err == nil {
						out, err = json.MarshalIndent(v, "", "  ")
					}
				}
			default:
				return usagef("--openapi-version must be 3.1 or 3.0, not %q", version)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return err
		},
	}
	cmd.Flags().StringVar(&version, "openapi-version", "3.1", "OpenAPI version of the document: 3.1 or 3.0")
	cfg.Flags(cmd.Flags(), "COMMERCE_BASE_URL")
	return cmd
}
