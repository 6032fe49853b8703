package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/internal/version"
)

func versionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the release this binary is, its commit and its Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version.Get()
			return newPrinter(cmd).print(v, func(w io.Writer) {
				fmt.Fprintf(w, "version\t%s\n", v.Version)
				if v.Revision != "" {
					fmt.Fprintf(w, "revision\t%s\n", v.Revision)
				}
				fmt.Fprintf(w, "go\t%s\n", v.GoVersion)
			})
		},
	}
	jsonFlag(cmd)
	return cmd
}
